#include "gpurun/service/idle_enforcer.hpp"

#include <algorithm>
#include <set>

namespace gpurun {

IdleEnforcer::IdleEnforcer(IdlePolicy policy) : policy_(std::move(policy)) {}

void IdleEnforcer::stop_failed(const std::string& key) { done_[key] = Done::warned; }

std::vector<PolicyAction> IdleEnforcer::observe(const MachineSample& sample, const std::vector<RunRecord>& running) {
  for (const GpuReading& gpu : sample.gpus) {
    if (gpu.utilization_percent && *gpu.utilization_percent <= policy_.below_percent)
      idle_since_.try_emplace(gpu.index, sample.when);
    else
      idle_since_.erase(gpu.index);  // busy, or unknown: not idle
  }

  std::vector<PolicyAction> due;
  std::set<std::string> present;
  // A process on several GPUs is judged once, on all of them.
  for (const HolderSample& holder : merged_holders(sample.holders)) {
    present.insert(holder.key);
    if (holder.gpus.empty() ||
        std::find(policy_.exempt_users.begin(), policy_.exempt_users.end(), holder.user) != policy_.exempt_users.end())
      continue;
    const auto run =
        std::find_if(running.begin(), running.end(), [&holder](const RunRecord& r) { return r.key == holder.key; });
    WallTime since = run != running.end() ? run->start : sample.when;
    bool idle = true;
    for (const int gpu : holder.gpus) {
      const auto found = idle_since_.find(gpu);
      if (found == idle_since_.end()) {
        idle = false;
        break;
      }
      since = std::max(since, found->second);
    }
    if (!idle) {
      done_.erase(holder.key);  // the streak is over
      continue;
    }
    const auto idle_for = std::chrono::floor<std::chrono::seconds>(sample.when - since);
    const auto done = done_.find(holder.key);
    const int step = done == done_.end() ? 0 : static_cast<int>(done->second);
    PolicyAction action{.rule = PolicyAction::Rule::idle,
                        .kind = PolicyAction::Kind::warn,
                        .run_id = run != running.end() ? run->id : 0,
                        .key = holder.key,
                        .name = holder.name,
                        .user = holder.user,
                        .container_id = holder.container_id,
                        .gpus = holder.gpus,
                        .elapsed = idle_for,
                        .limit = policy_.stop_after.value_or(std::chrono::seconds(0)),
                        .listed_by_engine = holder.listed_by_engine};
    if (policy_.stop_after && idle_for >= *policy_.stop_after && step < static_cast<int>(Done::stopped)) {
      const bool stoppable = !holder.container_id.empty() && holder.listed_by_engine &&
                             (policy_.scope == IdleScope::all || holder.started_by_gpurun);
      action.kind = stoppable ? PolicyAction::Kind::stop : PolicyAction::Kind::report;
      done_[holder.key] = Done::stopped;
      due.push_back(std::move(action));
    } else if (policy_.warn_after && idle_for >= *policy_.warn_after && step < static_cast<int>(Done::warned)) {
      done_[holder.key] = Done::warned;
      due.push_back(std::move(action));
    }
  }
  // A holder one sample missed (the engine did not answer) but whose run goes on keeps its state:
  // no second warning when it is seen again.
  for (const RunRecord& run : running) present.insert(run.key);
  std::erase_if(done_, [&present](const auto& entry) { return !present.contains(entry.first); });
  return due;
}

}  // namespace gpurun
