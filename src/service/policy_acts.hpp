#pragma once
// Carrying out what the idle policy and the time limits ask (gpurun/service/policy_action.hpp):
// the log line, the stop through the container engine, and the one line its notification says.
#include <string>

#include "gpurun/engine/container_engine.hpp"
#include "gpurun/service/policy_action.hpp"

namespace gpurun {

struct ActResult {
  bool stopped = false;  // the container was stopped: its run ends by this rule
  bool failed = false;   // a stop was due and did not happen: ask again at the next sample
  std::string text;      // what happened, in one line, for the log and the notification
};

// `dry_run`: say what would be done, do nothing. `engine` may be null (none reachable).
ActResult carry_out(const PolicyAction& action, bool dry_run, ContainerEngine* engine);

}  // namespace gpurun
