#include "gpurun/config/idle_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "gpurun/config/values.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

constexpr std::array<const char*, 7> kKeys{"below",        "warn_after",        "stop_after", "scope",
                                           "exempt_users", "exempt_containers", "dry_run"};

}  // namespace

IdlePolicyRead read_idle_policy(const nlohmann::json& value) {
  IdlePolicyRead read;
  const auto fail = [&](std::string key, std::string what) {
    read.problem = std::pair{std::move(key), std::move(what)};
    return read;
  };
  if (!value.is_object())
    return fail("", "expected an object, such as {\"below\": \"5%\", \"warn_after\": \"1h\", \"stop_after\": \"2h\"}");
  for (const auto& entry : value.items()) {
    const std::string& key = entry.key();  // not a structured binding: clang 14 cannot capture one
    const nlohmann::json& item = entry.value();
    if (key == "below") {
      std::optional<double> percent;
      if (item.is_number()) percent = item.get<double>();
      if (item.is_string()) {
        try {
          percent = parse_percent(item.get<std::string>(), "below").value;
        } catch (const Error&) {  // said below, with the example
        }
      }
      // At 100 % every GPU would be idle however hard it worked, and every job stopped.
      if (!percent || *percent < 0 || *percent > kMostIdlePercent)
        return fail(key, "expected a utilization from 0% to 99%, such as \"5%\" (at 100% every GPU would be idle)");
      read.policy.below_percent = *percent;
    } else if (key == "warn_after" || key == "stop_after") {
      const auto duration = duration_value(item);
      if (!duration) return fail(key, "expected a duration such as \"30m\", \"2h\" or \"1d\" (at least 1 s)");
      (key == "warn_after" ? read.policy.warn_after : read.policy.stop_after) = duration;
    } else if (key == "scope") {
      const auto scope = item.is_string() ? choice_from<IdleScope>(item.get<std::string>()) : std::nullopt;
      if (!scope)
        return fail(key, "expected \"gpurun\" (stop only containers gpurun started) or \"all\" (any container)");
      read.policy.scope = *scope;
    } else if (key == "exempt_users") {
      if (!item.is_array()) return fail(key, "expected a list of login names, such as [\"alice\"]");
      for (const nlohmann::json& user : item) {
        // A name with a space or a control character ("alice ") matches no login, and exempts
        // nobody without a word.
        const auto bad = [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == ':'; };
        if (!user.is_string() || user.get<std::string>().empty() ||
            std::any_of(user.get_ref<const std::string&>().begin(), user.get_ref<const std::string&>().end(), bad))
          return fail(key, "expected a list of login names (no spaces, no ':'), such as [\"alice\"]");
        read.policy.exempt_users.push_back(user.get<std::string>());
      }
    } else if (key == "exempt_containers") {
      const auto pattern = [](const nlohmann::json& p) {
        return p.is_string() && !p.get_ref<const std::string&>().empty() &&
               std::none_of(p.get_ref<const std::string&>().begin(), p.get_ref<const std::string&>().end(),
                            [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
      };
      if (!item.is_array() || !std::all_of(item.begin(), item.end(), pattern))
        return fail(key,
                    "expected a list of container names or images, shell patterns allowed, such as "
                    "[\"dcgm-exporter\", \"*/tritonserver:*\"]");
      read.policy.exempt_containers = item.get<std::vector<std::string>>();
    } else if (key == "dry_run") {
      if (!item.is_boolean()) return fail(key, "expected true or false");
      read.policy.dry_run = item.get<bool>();
    } else {
      const std::vector<std::string> names(kKeys.begin(), kKeys.end());
      return fail(key, fmt::format("not a setting of the idle policy{}", suggestion(key, names)));
    }
  }
  if (!read.policy.warn_after && !read.policy.stop_after)
    return fail("", "the idle policy needs warn_after or stop_after (or both), such as {\"stop_after\": \"2h\"}");
  if (read.policy.warn_after && read.policy.stop_after && *read.policy.warn_after >= *read.policy.stop_after)
    return fail("warn_after", "must come before stop_after (a warning after the stop warns nobody)");
  return read;
}

}  // namespace gpurun
