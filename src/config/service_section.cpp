#include "gpurun/config/service_section.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "gpurun/config/idle_policy.hpp"
#include "gpurun/util/ip_network.hpp"
#include "gpurun/util/listen_address.hpp"
#include "gpurun/util/suggest.hpp"

namespace gpurun {
namespace {

struct NumberKey {
  const char* key;
  std::optional<double> ServiceSection::*field;
  double low;
  double high;
  const char* unit;
};

constexpr std::array kNumbers{
    NumberKey{"interval", &ServiceSection::interval_s, 0.1, 3600, "seconds"},
    NumberKey{"write_every", &ServiceSection::write_every_s, 0.1, 3600, "seconds"},
    NumberKey{"idle_threshold", &ServiceSection::idle_threshold_percent, 0, kMostIdlePercent, "percent"},
    NumberKey{"keep_samples_days", &ServiceSection::keep_samples_days, 1, 36500, "days"},
    NumberKey{"keep_minutes_days", &ServiceSection::keep_minutes_days, 1, 36500, "days"},
    NumberKey{"keep_ended_containers_days", &ServiceSection::keep_ended_containers_days, 0, 36500, "days"},
};

}  // namespace

bool host_name_text(std::string_view name) {
  const auto allowed = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.'; };
  return !name.empty() && name.size() <= 253 && std::all_of(name.begin(), name.end(), allowed);
}

ServiceSectionRead read_service_section(const nlohmann::json& value) {
  ServiceSectionRead read;
  const auto fail = [&](std::string key, std::string what) {
    read.problem = std::pair{std::move(key), std::move(what)};
    return read;
  };
  if (!value.is_object()) return fail("", "expected an object of the service's settings, such as {\"interval\": 10}");
  for (const auto& entry : value.items()) {
    const std::string& key = entry.key();  // not a structured binding: clang 14 cannot capture one
    const nlohmann::json& item = entry.value();
    if (key == "state_dir" || key == "dcgm_job_mapping_dir") {
      if (!item.is_string() || !item.get<std::string>().starts_with('/'))
        return fail(key, key == "state_dir" ? "expected an absolute path, such as \"/var/lib/gpurun\""
                                            : "expected an absolute path, such as \"/run/dcgm-job-map\"");
      (key == "state_dir" ? read.section.state_dir : read.section.dcgm_job_mapping_dir) = item.get<std::string>();
      continue;
    }
    if (key == "listen") {
      if (!item.is_string()) return fail(key, "expected \"HOST:PORT\", such as \"127.0.0.1:9400\"");
      if (const auto why = listen_address_problem(item.get<std::string>()))
        return fail(key, fmt::format("{}; expected \"HOST:PORT\", {}", *why, kListenExample));
      read.section.listen = item.get<std::string>();
      continue;
    }
    if (key == "web_names") {
      const auto is_name = [](const nlohmann::json& name) {
        return name.is_string() && host_name_text(name.get<std::string>());
      };
      if (!item.is_array() || !std::all_of(item.begin(), item.end(), is_name))
        return fail(key, "expected a list of host names, such as [\"gpus.lab.example.org\"]");
      read.section.web_names = item.get<std::vector<std::string>>();
      continue;
    }
    if (key == "trusted_peers") {
      const auto is_network = [](const nlohmann::json& peer) {
        return peer.is_string() && parse_ip_network(peer.get<std::string>()).has_value();
      };
      if (!item.is_array() || !std::all_of(item.begin(), item.end(), is_network))
        return fail(key, "expected a list of addresses or networks, such as [\"10.0.0.5\", \"10.1.0.0/16\"]");
      read.section.trusted_peers = item.get<std::vector<std::string>>();
      continue;
    }
    bool known = false;
    for (const NumberKey& number : kNumbers) {
      if (key != number.key) continue;
      known = true;
      if (!item.is_number() || item.get<double>() < number.low || item.get<double>() > number.high)
        return fail(key,
                    fmt::format("expected a number of {} from {:g} to {:g}", number.unit, number.low, number.high));
      read.section.*(number.field) = item.get<double>();
    }
    if (!known) {
      std::vector<std::string> names{"state_dir", "listen", "web_names", "trusted_peers", "dcgm_job_mapping_dir"};
      for (const NumberKey& n : kNumbers) names.emplace_back(n.key);
      return fail(key, fmt::format("not a setting of the service{}", suggestion(key, names)));
    }
  }
  return read;
}

}  // namespace gpurun
