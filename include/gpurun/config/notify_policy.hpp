#pragma once
// How the gpurun service tells people what its rules did (issue 23), a key of the system file
// only (the webhook and the mail program are the admin's to choose):
//   "notify": {"webhook": "https://chat.example.org/hooks/abc", "mail": true,
//              "mail_domain": "lab.example.org", "sendmail": "/usr/sbin/sendmail",
//              "events": ["idle_warning", "idle_stopped", "time_warning", "time_limit_stopped"]}
// `events` defaults to those four; "run_ended" is off unless listed, or asked for by a launch's
// --notify for that run alone.
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurun {

inline constexpr std::array<std::string_view, 5> kNotifyEvents{"idle_warning", "idle_stopped", "time_warning",
                                                               "time_limit_stopped", "run_ended"};

struct NotifyPolicy {
  std::string webhook;  // an http:// or https:// URL; "": none
  bool mail = false;
  std::string mail_domain;                      // mail goes to USER@mail_domain; "": to the local USER
  std::string sendmail = "/usr/sbin/sendmail";  // run as `sendmail -t`, the message on its stdin
  std::vector<std::string> events{"idle_warning", "idle_stopped", "time_warning", "time_limit_stopped"};

  bool wants(std::string_view event) const;
};

// The object read; the first problem as ("key", "what is wrong") where one is found ("" for the
// object itself).
struct NotifyPolicyRead {
  NotifyPolicy policy;
  std::optional<std::pair<std::string, std::string>> problem;
};
NotifyPolicyRead read_notify_policy(const nlohmann::json& value);

}  // namespace gpurun
