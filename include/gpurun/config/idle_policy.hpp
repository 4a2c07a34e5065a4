#pragma once
// The site's idle policy (issue 23), a key of the system file only; gpurund enforces it
// (gpurun/service/idle_enforcer.hpp):
//   "idle_policy": {"below": "5%", "warn_after": "1h", "stop_after": "2h", "scope": "gpurun",
//                   "exempt_users": ["alice"], "exempt_containers": ["dcgm-exporter"], "dry_run": false}
// A held GPU is idle while every sample is at or below `below`; a run is idle while all its GPUs
// are. At `warn_after` the run's owner is told once (the service's log; notifications later); at
// `stop_after` its container is stopped, if `scope` lets it: containers gpurun started
// ("gpurun", the default) or any ("all"). Bare processes are never killed, only reported.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/util/choices.hpp"

namespace gpurun {

// The highest idle threshold (`below`, the service's idle_threshold): at 100 % every GPU would be
// idle however hard it worked.
inline constexpr double kMostIdlePercent = 99;

struct IdlePolicy {
  double below_percent = 5.0;
  std::optional<std::chrono::seconds> warn_after;  // unset: no warning
  std::optional<std::chrono::seconds> stop_after;  // unset: nothing is stopped
  IdleScope scope = IdleScope::gpurun;
  std::vector<std::string> exempt_users;
  // Containers left alone whatever the scope, by name or image, as shell patterns
  // ("dcgm-exporter", "*/tritonserver:*"): the services that hold every GPU by design.
  std::vector<std::string> exempt_containers = {};
  bool dry_run = false;  // log what it would do, and do nothing
};

// The object read; the first problem as ("key", "what is wrong") where one is found ("" for the
// object itself).
struct IdlePolicyRead {
  IdlePolicy policy;
  std::optional<std::pair<std::string, std::string>> problem;
};
IdlePolicyRead read_idle_policy(const nlohmann::json& value);

}  // namespace gpurun
