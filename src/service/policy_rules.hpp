#pragma once
// The site's rules over the samples (issue 23): the idle policy and time limits decide
// (gpurun/service/idle_enforcer.hpp, time_limiter.hpp), policy_acts carries their answers out,
// and the notifier tells the runs' users. The recorder calls it after each sample, outside its
// lock: a stop takes seconds and may fail. A failed stop is tried again after a minute, then after
// twice as long each time up to 15 minutes: an engine that keeps refusing is not asked (and the
// journal not written) at every sample.
#include <functional>
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
  // `interval`: the sampling interval; a gap between samples over three of them and 10 s is
  // time nobody measured, which ends an idle streak.
  // `kept_notifications`: where the notifier keeps what a stop leaves undelivered, and `stop`
  // gpurund's stop request, which ends its deliveries (Notifier).
  PolicyRules(const SitePolicy& policy, std::string host, std::chrono::milliseconds interval = std::chrono::seconds(10),
              const std::string& kept_notifications = "", const StopRequest* stop = nullptr);

  // One sample, with the tracker's runs after it: warns, stops and notifies what is due.
  // Once `stopping` holds, nothing more is begun (a stop takes up to 20 s, and systemd waits 30).
  void observe(const MachineSample& sample, const std::vector<RunRecord>& running, ContainerEngine* engine,
               const std::function<bool()>& stopping = {});
  // A sample of the engine's containers alone, the GPUs unread (the GPU source failing: a driver
  // upgraded under a running system, nvidia-smi hung): time limits need only the containers, and
  // hold; the idle policy, which needs the GPUs' utilization, waits.
  void observe_containers_only(const MachineSample& sample, const std::vector<RunRecord>& running,
                               ContainerEngine* engine, const std::function<bool()>& stopping = {});

  // The runs a sample ended: marks those a rule stopped (ended_by), and tells whoever asked.
  void ended(std::vector<RunRecord>& runs);

  // The rules, as text that differs when any of them does: a restart takes up their state only
  // under the same rules (RunStore::rules_in_force).
  const std::string& fingerprint() const { return fingerprint_; }

  // After a restart under the same rules, in force since `since`: the open runs, and the GPU
  // samples stored before the restart (oldest first, one at a time; those since `since` and of
  // the last `lookback()`, none where it is 0). Idle streaks go on, and no warning is given twice.
  // The notifications the last stop kept are sent after `samples_to_end` samples (the tracker's
  // gone_after_samples): by then the runs that ended while the service was down have ended, and
  // their warnings are dropped (Notifier::take_up_kept).
  void resume(const std::vector<RunRecord>& running, const GpuSampleWalk& samples, WallTime since,
              int samples_to_end = 2);
  // After a restart under other rules: the warnings the last stop kept are dropped (logged), as
  // every warning starts afresh; its news of what happened (a stop, a run's end) is still sent,
  // after `samples_to_end` samples as on resume.
  void start_afresh(int samples_to_end = 2);
  // After any restart: the open runs whose launch asked to be told of their end (--notify), as
  // kept beside the notifications; whatever the rules, a run's own request stands.
  void take_up_asked(const std::vector<RunRecord>& running);
  std::chrono::milliseconds lookback() const;

 private:
  std::string ended_text(const RunRecord& run) const;
  void observe_with(const MachineSample& sample, const std::vector<RunRecord>& running, ContainerEngine* engine,
                    const std::function<bool()>& stopping, bool utilization_read);

  // A holder whose stop failed: how often in a row, and when it may be tried again.
  struct Retry {
    int failures = 0;
    SampleTime failed;  // the sample of the last failure; measured on the steady clock from it
    std::chrono::seconds wait{0};
  };
  // Whether a stop of `key` due now waits for its next try (the rule is asked to keep it due).
  bool waits_for_retry(const PolicyAction& action, const SampleTime& now);
  void stop_failed(const PolicyAction& action, const SampleTime& now);

  std::string host_;
  std::string kept_notifications_;
  std::string fingerprint_;
  TimeLimiter limiter_;
  std::optional<IdleEnforcer> idle_;
  std::optional<Notifier> notifier_;
  std::map<std::string, std::string> ended_by_;  // holder key -> why its run will end
  std::set<std::string> stopped_and_gone_;       // of those, the ones a sample has missed since
  std::set<std::string> notify_end_;             // holder keys whose launch asked for run_ended (--notify)
  std::string asked_file_;                       // where notify_end_ is kept ("": nowhere)
  void keep_asked() const;
  std::map<std::string, Retry> retries_;   // holder key -> its failed stops
  std::optional<int> kept_after_samples_;  // resumed: samples left before the kept notifications go
};

}  // namespace gpurun
