#include "notification_spool.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gpurun/history/time_text.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

using json = nlohmann::ordered_json;

constexpr std::chrono::hours kOldest{24};  // a warning a day late tells nobody anything

// A time as keep_notifications writes it: whole milliseconds a clock of nanoseconds can hold.
WallTime time_of(const json& value) {
  const auto when = value.is_number_integer() ? from_unix_ms(value.get<std::int64_t>()) : std::nullopt;
  if (!when) throw json::type_error::create(302, "time_ms: expected whole milliseconds", &value);
  return *when;
}

// `text` as `path`, mode 0600, replacing it at once (a crash leaves the old one or the new one);
// a message where it cannot.
std::optional<std::string> replace_private(const std::string& path, const std::string& text) {
  const std::string next = path + ".new";
  std::optional<std::string> error = write_whole(next, text);
  if (!error && (::chmod(next.c_str(), 0600) != 0 || std::rename(next.c_str(), path.c_str()) != 0))
    error = std::strerror(errno);
  if (error) (void)std::remove(next.c_str());
  return error;
}

}  // namespace

std::optional<std::string> keep_notifications(const std::string& path,
                                              const std::vector<SpooledNotification>& pending) {
  json items = json::array();
  for (const SpooledNotification& kept : pending) {
    const Notification& n = kept.notification;
    items.push_back({{"event", n.event},
                     {"time_ms", unix_ms(n.time)},
                     {"host", n.host},
                     {"text", n.text},
                     {"run", n.run},
                     {"user", n.user},
                     {"mailed", kept.mailed},
                     {"posted", kept.posted}});
  }
  return replace_private(path, json_line(items));
}

std::vector<SpooledNotification> read_kept_notifications(const std::string& path, WallTime now) {
  const BoundedRead read = read_bounded(path, 64 << 20, FileKinds::regular_only);
  if (!read.text) {
    if (read.error != ENOENT) spdlog::warn("notify: cannot read {}: {}", path, read.problem);
    return {};
  }
  const auto set_aside = [&](const std::string& why) {
    const std::string aside = path + ".unreadable";
    if (std::rename(path.c_str(), aside.c_str()) == 0)
      spdlog::error("notify: {} is not a list of notifications ({}); moved to {}", path, why, aside);
    else
      spdlog::error("notify: {} is not a list of notifications ({}), and cannot be moved aside: {}", path, why,
                    std::strerror(errno));
    return std::vector<SpooledNotification>{};
  };
  std::vector<SpooledNotification> kept;
  int too_old = 0;
  try {
    const json items = json::parse(*read.text);
    if (!items.is_array()) return set_aside("not a JSON array");
    for (const json& item : items) {
      SpooledNotification one;
      one.notification = {.event = item.at("event").get<std::string>(),
                          .time = time_of(item.at("time_ms")),
                          .host = item.at("host").get<std::string>(),
                          .text = item.at("text").get<std::string>(),
                          .run = item.at("run"),
                          .user = item.at("user").get<std::string>()};
      one.mailed = item.at("mailed").get<bool>();
      one.posted = item.at("posted").get<bool>();
      if (now - one.notification.time > kOldest)
        ++too_old;
      else
        kept.push_back(std::move(one));
    }
  } catch (const json::exception& e) {
    return set_aside(e.what());
  }
  if (too_old > 0)
    spdlog::warn("notify: {} notification(s) kept from the last stop were over a day old: dropped", too_old);
  if (!kept.empty()) spdlog::info("notify: sending {} notification(s) the last stop left undelivered", kept.size());
  return kept;
}

void forget_kept_notifications(const std::string& path, std::string_view why) {
  if (std::remove(path.c_str()) == 0)
    spdlog::warn("notify: what the last stop left undelivered is not sent: {}", why);
  else if (errno != ENOENT)
    spdlog::error("notify: cannot remove {}: {}", path, std::strerror(errno));
}

std::optional<std::string> keep_run_keys(const std::string& path, const std::set<std::string>& keys) {
  return replace_private(path, json_line(json(keys)));
}

std::set<std::string> read_run_keys(const std::string& path) {
  const BoundedRead read = read_bounded(path, 16 << 20, FileKinds::regular_only);
  if (!read.text) {
    if (read.error != ENOENT) spdlog::warn("notify: cannot read {}: {}", path, read.problem);
    return {};
  }
  const json keys = json::parse(*read.text, nullptr, false);
  if (keys.is_array() && std::all_of(keys.begin(), keys.end(), [](const json& key) { return key.is_string(); }))
    return keys.get<std::set<std::string>>();
  spdlog::error("notify: {} is not a list of runs; the runs it named are not told of their end", path);
  return {};
}

}  // namespace gpurun
