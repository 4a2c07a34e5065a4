#pragma once
// What the site's rules ask the service to do about one run now: the idle policy
// (gpurun/service/idle_enforcer.hpp) and time limits (gpurun/service/time_limiter.hpp) both answer
// in these, and the recorder carries them out and tells the run's user.
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

struct PolicyAction {
  enum class Rule {
    idle,        // idle_policy
    time_limit,  // --time-limit, max_runtime
  };
  enum class Kind {
    warn,    // tell its owner what will happen
    stop,    // stop its container
    report,  // due to stop, but not to be stopped: a process, or a container out of scope
  };
  Rule rule = Rule::idle;
  Kind kind = Kind::warn;
  std::int64_t run_id = 0;
  std::string key;  // the holder's (HolderSample::key)
  std::string name;
  std::string user;
  std::string container_id;  // "" for a process
  std::vector<int> gpus;
  std::chrono::seconds elapsed{0};  // idle: idle for this long; time_limit: running for this long
  std::chrono::seconds limit{0};    // when it is (or was) stopped: stop_after, or the time limit; 0: never
  bool listed_by_engine = true;     // HolderSample::listed_by_engine: false, never stopped
  // A time limit's warning given late (gpurund down across it, a limit set meanwhile): the stop
  // comes this long after it, not at the limit. 0: at the limit.
  std::chrono::seconds stops_in{0};
};

// The notification event an action is ("idle_warning", "idle_stopped", "time_warning",
// "time_limit_stopped"); a report, and a stop that did not happen (a dry run), is a warning.
std::string_view event_of(const PolicyAction& action, bool stopped);

// A warning about `holder` under `rule` (made a stop or a report by the rule where one is due),
// with the id of its run in `running` (0 where the tracker has none for it yet).
PolicyAction warning_about(PolicyAction::Rule rule, const HolderSample& holder, const std::vector<RunRecord>& running,
                           std::chrono::seconds elapsed, std::chrono::seconds limit);

// The holders whose state a rule keeps after a sample: those it saw (`present`), and those it
// missed (the engine did not answer) whose run goes on, which get no second warning when seen again.
std::set<std::string> kept_holders(std::set<std::string> present, const std::vector<RunRecord>& running);

}  // namespace gpurun
