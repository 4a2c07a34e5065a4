#pragma once
// What the site's idle policy (gpurun/config/idle_policy.hpp) asks of each sample: whose run to
// warn, whose container to stop. Pure logic over the samples, as the run tracker is; the recorder
// acts on its answers. A run's idle time counts from the later of its start and the moment all its
// GPUs went at or below `below`; any sample above that ends the streak (and a later streak warns
// again). Each streak warns once and stops (or reports) once.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gpurun/config/idle_policy.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/service/policy_action.hpp"

namespace gpurun {

class IdleEnforcer {
 public:
  explicit IdleEnforcer(IdlePolicy policy);

  // Takes one sample (with the tracker's runs after it) and returns what is due now.
  std::vector<PolicyAction> observe(const MachineSample& sample, const std::vector<RunRecord>& running);

  // The stop of `key` failed: the next sample asks for it again.
  void stop_failed(const std::string& key);

  const IdlePolicy& policy() const { return policy_; }

 private:
  enum class Done { warned = 1, stopped = 2 };
  IdlePolicy policy_;
  std::map<int, WallTime> idle_since_;  // per GPU: at or below `below` since
  std::map<std::string, Done> done_;    // per holder key, in its current idle streak
};

}  // namespace gpurun
