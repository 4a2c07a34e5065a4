#pragma once
// Time limits (issue 23): a launch's --time-limit (the gpurun.time-limit label on its container)
// and the site's max_runtime, the smaller of the two, for the containers gpurun started. A run is
// warned ten minutes before its limit (at half the limit when that is under 20 minutes) and its
// container stopped at the limit; one first seen past it is warned then, and stopped as long after. Time counts from
// the earlier of the run's start as the service saw it (kept across its restarts by the store) and the container's
// start as the engine gives it (State.StartedAt); between samples on the sampler's steady clock, so that a wall
// clock stepped either way moves no limit.
// Pure logic, as the idle policy is; the recorder carries out the answers.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/history/run_tracker.hpp"
#include "gpurun/service/policy_action.hpp"

namespace gpurun {

class TimeLimiter {
 public:
  explicit TimeLimiter(std::optional<std::chrono::seconds> max_runtime) : max_runtime_(max_runtime) {}

  // Takes one sample (with the tracker's runs after it) and returns what is due now.
  std::vector<PolicyAction> observe(const MachineSample& sample, const std::vector<RunRecord>& running);

  // The stop of `key` failed: the next sample asks for it again.
  void stop_failed(const std::string& key);

  // `key` starts afresh: a container it stopped runs again (its restart policy, `docker start`);
  // its run goes on, so its limit still counts from the run's start, with a warning before the stop.
  void forget(const std::string& key);

  // When a run with this limit is warned: ten minutes before it, or halfway for a short one.
  static std::chrono::seconds warn_at(std::chrono::seconds limit);

  // After a restart: the runs still open from before. One already past its warning when it was
  // last seen was warned then, and is not warned again.
  void resume(const std::vector<RunRecord>& running);

 private:
  enum class Done { warned = 1, stopped = 2 };
  std::optional<std::chrono::seconds> max_runtime_;
  std::map<std::string, WallTime> seen_before_;  // per holder key: when the service last saw it before a restart
  struct Age {
    std::chrono::milliseconds elapsed{0};     // since its run started
    SampleTime last;                          // when it was last measured
    std::chrono::seconds stop_not_before{0};  // warned only at or past its limit: its notice runs out then
  };
  std::map<std::string, Done> done_;  // per holder key
  std::map<std::string, Age> ages_;   // per holder key
};

}  // namespace gpurun
