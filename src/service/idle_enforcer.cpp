#include "gpurun/service/idle_enforcer.hpp"

#include <fnmatch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

namespace gpurun {

bool exempt_from_idle_policy(const std::vector<std::string>& exempt_containers, const HolderSample& holder) {
  // Never one gpurun started: its name and image are the caller's to choose (`sudo gpurun --name
  // dcgm-exporter` would have escaped the policy).
  if (holder.container_id.empty() || holder.started_by_gpurun) return false;
  return std::any_of(exempt_containers.begin(), exempt_containers.end(), [&](const std::string& p) {
    return ::fnmatch(p.c_str(), holder.name.c_str(), 0) == 0 || ::fnmatch(p.c_str(), holder.image.c_str(), 0) == 0;
  });
}

bool IdleEnforcer::exempt_container(const HolderSample& holder) const {
  return exempt_from_idle_policy(policy_.exempt_containers, holder);
}

IdleEnforcer::IdleEnforcer(IdlePolicy policy, std::chrono::milliseconds max_gap)
    : policy_(std::move(policy)), max_gap_(max_gap) {}

void IdleEnforcer::stop_failed(const std::string& key) { done_[key] = Done::warned; }

void IdleEnforcer::forget(const std::string& key) {
  streaks_.erase(key);
  done_.erase(key);
  resumed_past_stop_.erase(key);
}

void IdleEnforcer::resume(const std::vector<RunRecord>& running, const GpuSampleWalk& samples) {
  // Each run's streak so far, carried from one sample time to the next.
  struct StoredStreak {
    std::optional<WallTime> first;
    WallTime last{};
  };
  std::vector<StoredStreak> streaks(running.size());
  const auto take_sample_time = [&](WallTime when, const std::set<int>& idle_gpus) {
    for (std::size_t i = 0; i < running.size(); ++i) {
      const RunRecord& run = running[i];
      if (when < run.start || run.gpus.empty()) continue;
      StoredStreak& streak = streaks[i];
      const bool idle = std::all_of(run.gpus.begin(), run.gpus.end(), [&](int gpu) { return idle_gpus.contains(gpu); });
      if (streak.first && when - streak.last > max_gap_) streak.first.reset();  // time nobody measured
      if (!idle) {
        streak.first.reset();
      } else if (!streak.first) {
        streak.first = when;
      }
      streak.last = when;
    }
  };
  // The rows of one sample time come together: its idle GPUs (known, and at or below `below`; one
  // not read is not idle) are gathered, and a time with none is a sample too.
  std::optional<WallTime> at;
  std::set<int> idle_gpus;
  if (samples)
    samples([&](const GpuSampleRow& row) {
      if (at && row.when != *at) {
        take_sample_time(*at, idle_gpus);
        idle_gpus.clear();
      }
      at = row.when;
      if (row.utilization_percent && *row.utilization_percent <= policy_.below_percent) idle_gpus.insert(row.gpu);
    });
  if (at) take_sample_time(*at, idle_gpus);

  for (std::size_t i = 0; i < running.size(); ++i) {
    const RunRecord& run = running[i];
    const auto& [first, last] = streaks[i];
    if (!first) continue;
    const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(last - *first);
    streaks_[run.key] = Streak{.idle = idle, .last = SampleTime{.when = last, .monotonic = std::nullopt}};
    // What was done before, under the same rules: its warning, taken to have gone out on time,
    // and past stop_after its report (a process, a container out of scope, a dry run). Not its
    // stop: a run still held was not stopped (the stop failed, or came due as gpurund stopped), so
    // one the first sample finds the policy stops is stopped then (observe).
    if (policy_.warn_after && idle >= *policy_.warn_after) {
      done_[run.key] = Done::warned;
      streaks_[run.key].warned_at = *policy_.warn_after;
    }
    if (policy_.stop_after && idle >= *policy_.stop_after) {
      done_[run.key] = Done::stopped;
      resumed_past_stop_.insert(run.key);
    }
  }
}

std::vector<PolicyAction> IdleEnforcer::observe(const MachineSample& sample, const std::vector<RunRecord>& running) {
  std::set<int> idle_gpus;  // known, and at or below `below`, in this sample (unknown is never idle)
  std::set<int> unknown_gpus;
  for (const GpuReading& gpu : sample.gpus) {
    if (gpu.utilization_percent && *gpu.utilization_percent <= policy_.below_percent) idle_gpus.insert(gpu.index);
    if (!gpu.utilization_percent) unknown_gpus.insert(gpu.index);
  }
  const SampleTime now = sample.time();
  const std::chrono::milliseconds max_gap = max_gap_ + std::exchange(allowance_, std::chrono::milliseconds(0));

  std::vector<PolicyAction> due;
  std::set<std::string> present;
  // A process on several GPUs is judged once, on all of them.
  for (const HolderSample& holder : merged_holders(sample.holders)) {
    present.insert(holder.key);
    if (holder.gpus.empty() ||
        std::find(policy_.exempt_users.begin(), policy_.exempt_users.end(), holder.user) !=
            policy_.exempt_users.end() ||
        exempt_container(holder))
      continue;
    // A GPU with no utilization (MIG mode: NVML gives none) is never idle: its holders are never
    // warned or stopped. Said, once a GPU, rather than left for an admin to wonder about.
    for (const int gpu : holder.gpus)
      if (unknown_gpus.contains(gpu) && unjudged_told_.insert(gpu).second)
        spdlog::warn(
            "idle policy: the holders of GPU {} are not warned or stopped for idling while its utilization is "
            "not known (a MIG GPU's never is: the driver gives none in MIG mode); said once",
            gpu);
    const bool idle =
        std::all_of(holder.gpus.begin(), holder.gpus.end(), [&](int gpu) { return idle_gpus.contains(gpu); });
    if (!idle) {
      streaks_.erase(holder.key);
      done_.erase(holder.key);  // the streak is over
      resumed_past_stop_.erase(holder.key);
      continue;
    }
    // Measured from sample to sample; a gap nobody measured starts the streak afresh.
    auto [streak, fresh] = streaks_.try_emplace(holder.key, Streak{.idle = {}, .last = now});
    if (!fresh) {
      const auto gap = now.since(streak->second.last);
      // A streak taken up from the store (no steady time) whose last sample is later than now: the
      // wall clock went back across the restart, so how long nobody measured is not known.
      const bool clock_went_back = !streak->second.last.monotonic && now.when < streak->second.last.when;
      if (gap > max_gap || clock_went_back) {
        streak->second.idle = {};
        streak->second.warned_at.reset();  // the last streak's warning is not this one's
        done_.erase(holder.key);
      } else {
        streak->second.idle += gap;
      }
      streak->second.last = now;
    }
    const auto idle_for = std::chrono::floor<std::chrono::seconds>(streak->second.idle);
    const bool in_scope = holder.listed_by_engine && (policy_.scope == IdleScope::all || holder.started_by_gpurun);
    // A container the engine did not list because it did not answer is seen through its processes:
    // its labels unread, whether it is in scope is not known. It is reported once, and judged
    // (stopped, where in scope) when it is listed again, not left for the rest of its streak. One
    // not listed by an engine that answered (a rootless one, another engine's) is out of scope.
    const bool scope_unknown = sample.containers_unknown && !holder.container_id.empty() && !holder.listed_by_engine;
    // Resumed past stop_after and found to be one the policy stops: still held, it is stopped now.
    if (!scope_unknown && resumed_past_stop_.erase(holder.key) != 0 && in_scope && !policy_.dry_run)
      done_.erase(holder.key);
    const auto done = done_.find(holder.key);
    const int step = done == done_.end() ? 0 : static_cast<int>(done->second);
    PolicyAction action = warning_about(PolicyAction::Rule::idle, holder, running, idle_for,
                                        policy_.stop_after.value_or(std::chrono::seconds(0)));
    if (!in_scope && !scope_unknown) action.limit = std::chrono::seconds(0);  // its warning promises no stop
    const Done reaching = scope_unknown ? Done::reported : Done::stopped;
    // Where the policy warns, a stop comes after the warning, and as long after it as the policy
    // puts between the two: a streak that passed both unseen (the engine did not answer) is warned
    // first, not stopped at once.
    const bool noticed = !policy_.warn_after || !policy_.stop_after ||
                         (streak->second.warned_at &&
                          idle_for >= *streak->second.warned_at + (*policy_.stop_after - *policy_.warn_after));
    if (policy_.stop_after && idle_for >= *policy_.stop_after && step < static_cast<int>(reaching) && noticed) {
      action.kind = in_scope ? PolicyAction::Kind::stop : PolicyAction::Kind::report;
      done_[holder.key] = reaching;
      due.push_back(std::move(action));
    } else if (policy_.warn_after && idle_for >= *policy_.warn_after && step < static_cast<int>(Done::warned)) {
      done_[holder.key] = Done::warned;
      streak->second.warned_at = idle_for;  // in whole seconds, as the stop is judged: no jitter delays it
      due.push_back(std::move(action));
    }
  }
  // A run the engine did not show this time (it did not answer): its streak goes on while its GPUs
  // stay idle, so that an outage neither warns its owner again nor starts the wait to stop it afresh.
  if (sample.containers_unknown)
    for (const RunRecord& run : running) {
      const auto streak = streaks_.find(run.key);
      if (present.contains(run.key) || streak == streaks_.end()) continue;
      const bool idle = !run.gpus.empty() && std::all_of(run.gpus.begin(), run.gpus.end(),
                                                         [&idle_gpus](int gpu) { return idle_gpus.contains(gpu); });
      const auto gap = now.since(streak->second.last);
      if (!idle || gap > max_gap) {
        streaks_.erase(streak);
        done_.erase(run.key);
        continue;
      }
      streak->second.idle += gap;
      streak->second.last = now;
    }
  const std::set<std::string> kept = kept_holders(std::move(present), running);
  std::erase_if(done_, [&kept](const auto& entry) { return !kept.contains(entry.first); });
  std::erase_if(streaks_, [&kept](const auto& entry) { return !kept.contains(entry.first); });
  std::erase_if(resumed_past_stop_, [&kept](const std::string& key) { return !kept.contains(key); });
  return due;
}

}  // namespace gpurun
