#pragma once
// What the site's idle policy (gpurun/config/idle_policy.hpp) asks of each sample: whose run to
// warn, whose container to stop. Pure logic over the samples, as the run tracker is; the recorder
// acts on its answers. A holder's idle time is what consecutive samples measured while all its
// GPUs were at or below `below`, on the sampler's steady clock: any sample above that, unknown, or
// a gap between samples longer than `max_gap` (the GPU source failing, gpurund stopped: time
// nobody measured) ends the streak, and a later streak warns again. Each streak warns once and
// stops (or reports) once.
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpurun/config/idle_policy.hpp"
#include "gpurun/history/gpu_minutes.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/service/policy_action.hpp"

namespace gpurun {

// Whether the policy's exempt_containers (patterns of a name or image) name `holder`: never a
// container gpurun started, whose name and image are its caller's to choose.
bool exempt_from_idle_policy(const std::vector<std::string>& exempt_containers, const HolderSample& holder);

class IdleEnforcer {
 public:
  explicit IdleEnforcer(IdlePolicy policy, std::chrono::milliseconds max_gap = std::chrono::hours(24));

  // Takes one sample (with the tracker's runs after it) and returns what is due now.
  std::vector<PolicyAction> observe(const MachineSample& sample, const std::vector<RunRecord>& running);

  // The stop of `key` failed: the next sample asks for it again.
  void stop_failed(const std::string& key);

  // `key` starts afresh: a container it stopped runs again (its restart policy, `docker start`).
  void forget(const std::string& key);

  // The service spent `spent` acting (stopping containers) after the last sample: the next one
  // comes that much later, a gap the service made, which ends nobody's streak.
  void acted_for(std::chrono::milliseconds spent) { allowance_ += spent; }

  // After a restart: each open run's idle streak as the stored samples before it show them (every
  // GPU's rows, oldest first), so that a restart neither starts the wait to stop an idle job again
  // nor warns its owner a second time. A gap between samples over max_gap ends a streak, as here.
  // The rows are taken one at a time: days of samples at a second's interval are millions of rows.
  void resume(const std::vector<RunRecord>& running, const GpuSampleWalk& samples);

  const IdlePolicy& policy() const { return policy_; }

 private:
  // A container gpurun did not start that the policy's exempt_containers names (its name or image).
  bool exempt_container(const HolderSample& holder) const;
  enum class Done { warned = 1, reported = 2, stopped = 3 };
  struct Streak {
    std::chrono::milliseconds idle{0};                             // measured so far
    SampleTime last;                                               // the streak's last sample
    std::optional<std::chrono::seconds> warned_at = std::nullopt;  // the idle time its warning went out at
  };
  IdlePolicy policy_;
  std::chrono::milliseconds max_gap_;
  std::chrono::milliseconds allowance_{0};   // acted_for, until the next sample
  std::map<std::string, Streak> streaks_;    // per holder key, while all its GPUs are idle
  std::map<std::string, Done> done_;         // per holder key, in its current idle streak
  std::set<std::string> resumed_past_stop_;  // resumed past stop_after, not seen since (resume)
  std::set<int> unjudged_told_;              // held GPUs whose utilization is unknown, said once each
};

}  // namespace gpurun
