#pragma once
// The site's rules over the samples (issue 23): the idle policy and time limits decide
// (gpurun/service/idle_enforcer.hpp, time_limiter.hpp), policy_acts carries their answers out,
// and the notifier tells the runs' users. The recorder calls it after each sample, outside its
// lock: a stop takes seconds and may fail (then it is asked for again at the next sample).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpurun/config/policy.hpp"
#include "gpurun/engine/container_engine.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/service/idle_enforcer.hpp"
#include "gpurun/service/notifier.hpp"
#include "gpurun/service/time_limiter.hpp"

namespace gpurun {

class PolicyRules {
 public:
  PolicyRules(const SitePolicy& policy, std::string host);

  // One sample, with the tracker's runs after it: warns, stops and notifies what is due.
  void observe(const MachineSample& sample, const std::vector<RunRecord>& running, ContainerEngine* engine);

  // The runs a sample ended: marks those a rule stopped (ended_by), and tells whoever asked.
  void ended(std::vector<RunRecord>& runs);

 private:
  std::string ended_text(const RunRecord& run) const;

  std::string host_;
  TimeLimiter limiter_;
  std::optional<IdleEnforcer> idle_;
  std::optional<Notifier> notifier_;
  std::map<std::string, std::string> ended_by_;  // holder key -> why its run will end
  std::set<std::string> notify_end_;             // holder keys whose launch asked for run_ended (--notify)
};

}  // namespace gpurun
