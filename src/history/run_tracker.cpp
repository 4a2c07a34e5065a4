#include "gpurun/history/run_tracker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

// The pid of a holder "process:PID:" (gone from /proc, still listed by the driver); nullopt otherwise.
std::optional<long> exited_pid(std::string_view key) {
  if (!key.starts_with("process:") || !key.ends_with(':')) return std::nullopt;
  const auto pid = text::parse_integer(key.substr(8, key.size() - 9));
  return pid && *pid > 0 ? std::optional<long>(*pid) : std::nullopt;
}

void merge_gpus(std::vector<int>& into, const std::vector<int>& more) {
  into.insert(into.end(), more.begin(), more.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

RunRecord started(const HolderSample& holder, WallTime when, std::int64_t id) {
  RunRecord run;
  run.id = id;
  run.key = holder.key;
  run.name = holder.name;
  run.user = holder.user;
  run.container_id = holder.container_id;
  run.image = holder.image;
  run.command = holder.command;
  merge_gpus(run.gpus, holder.gpus);
  run.start = when;
  run.last_seen = when;
  return run;
}

}  // namespace

std::optional<double> RunRecord::efficiency() const {
  const double measured = gpu_seconds - unmeasured_gpu_seconds;
  if (measured <= 0) return std::nullopt;
  return 100.0 * busy_gpu_seconds / measured;
}

std::vector<HolderSample> merged_holders(const std::vector<HolderSample>& holders) {
  std::vector<HolderSample> merged;
  for (const HolderSample& holder : holders) {
    const auto same =
        std::find_if(merged.begin(), merged.end(), [&](const HolderSample& m) { return m.key == holder.key; });
    if (same == merged.end()) {
      merged.push_back(holder);
      continue;
    }
    // The whole of a GPU wins over a share of it; two shares of one GPU are the larger.
    for (const int gpu : holder.gpus) {
      const bool had = std::find(same->gpus.begin(), same->gpus.end(), gpu) != same->gpus.end();
      const auto mine = same->mig_share.find(gpu);
      const auto theirs = holder.mig_share.find(gpu);
      if (theirs == holder.mig_share.end())
        same->mig_share.erase(gpu);
      else if (!had)
        same->mig_share[gpu] = theirs->second;
      else if (mine != same->mig_share.end())
        mine->second = std::max(mine->second, theirs->second);
    }
    merge_gpus(same->gpus, holder.gpus);
    merge_gpus(same->computing_gpus, holder.computing_gpus);
    if (holder.memory_used_mib) same->memory_used_mib = same->memory_used_mib.value_or(0) + *holder.memory_used_mib;
  }
  return merged;
}

const RunRecord* run_of_holder(const std::vector<RunRecord>& running, const std::string& key) {
  const bool pid_only = key.starts_with("process:") && key.ends_with(':');
  const RunRecord* found = nullptr;
  for (const RunRecord& run : running) {
    if (!pid_only && run.key == key) return &run;
    if (pid_only && run.key.starts_with(key) && (found == nullptr || run.last_seen > found->last_seen)) found = &run;
  }
  return found;
}

RunTracker::RunTracker(TrackerSettings settings, std::int64_t last_id) : settings_(settings), last_id_(last_id) {}

void RunTracker::resume(std::vector<RunRecord> open_runs) {
  for (RunRecord& run : open_runs) {
    last_id_ = std::max(last_id_, run.id);
    running_.push_back(std::move(run));
  }
}

// The wall clock stepped (NTP, a date set by hand) between the last sample and `now`, by more than
// sampling's own jitter: the open runs' times move with it, so that they stay the times of their
// start and last sight on the clock as it reads now. A date set a year ahead and corrected left
// runs ending a year ahead (counted whole in every "last 30 days" for a year), and one stepped
// back left a run's hour in the last ten minutes.
void RunTracker::follow_wall_clock_step(const SampleTime& now) {
  if (!now.monotonic || !previous_->monotonic) return;
  const auto step = (now.when - previous_->when) - (*now.monotonic - *previous_->monotonic);
  if (step > -std::chrono::seconds(1) && step < std::chrono::seconds(1)) return;
  const auto shift = std::chrono::duration_cast<WallTime::duration>(step);
  for (RunRecord& run : running_) {
    run.start += shift;
    run.last_seen += shift;
  }
}

std::vector<RunRecord> RunTracker::observe(const MachineSample& sample) {
  // The time since the last sample, credited to the runs it saw: on the steady clock, so that the
  // wall clock stepped back (an hour's correction) or forward loses or adds nothing; none for a
  // first sample or for a gap longer than max_credit.
  double credit_s = 0;
  if (previous_) {
    const std::chrono::milliseconds gap = sample.time().since(*previous_);
    if (gap <= settings_.max_credit + allowance_) credit_s = std::chrono::duration<double>(gap).count();
    follow_wall_clock_step(sample.time());
  }
  previous_ = sample.time();
  allowance_ = std::chrono::milliseconds(0);

  std::map<int, std::optional<double>> utilization;
  for (const GpuReading& gpu : sample.gpus) utilization[gpu.index] = gpu.utilization_percent;

  // A process gone from /proc that the driver still lists (it is letting go) is the run of its pid
  // (the latest seen, should the pid have been used twice), not a new one; renamed before the merge,
  // so that its GPUs join those listed while /proc still had it.
  // One that was a container's last sample is that container's run (its job exiting), if still running.
  std::vector<HolderSample> holders = sample.holders;
  std::map<long, std::string> container_of_pid;
  for (const HolderSample& holder : holders)
    for (const long pid : holder.pids) container_of_pid[pid] = holder.key;
  for (HolderSample& holder : holders) {
    if (const RunRecord* same_pid = run_of_holder(running_, holder.key)) {
      holder.key = same_pid->key;
    } else if (const auto pid = exited_pid(holder.key)) {
      const auto was = container_of_pid_.find(*pid);
      if (was != container_of_pid_.end() && run_of_holder(running_, was->second) != nullptr) {
        holder.key = was->second;
        container_of_pid.emplace(*pid, was->second);  // for as long as the driver lists it
      }
    }
  }
  container_of_pid_ = std::move(container_of_pid);
  std::map<std::string, HolderSample> seen;  // by key: new runs are numbered in key order
  for (HolderSample& holder : merged_holders(holders)) {
    std::sort(holder.gpus.begin(), holder.gpus.end());
    std::sort(holder.computing_gpus.begin(), holder.computing_gpus.end());
    seen.emplace(holder.key, std::move(holder));
  }

  // A whole GPU held by several (processes of two users, --allow-busy; a container given every
  // GPU beside the jobs) is the time of those computing on it, in equal parts; where none computes,
  // of all who hold it, in equal parts: the users' GPU-hours add up to the GPU's, and a container
  // that only holds a GPU others work on (dcgm-exporter's --gpus all) takes none of their time.
  // MIG instances are parts of their own, and a GPU whose instances are worked on is theirs: a
  // whole holder with no process there (dcgm-exporter again) takes none of it; where none is worked
  // on, what the instances' holders do not hold.
  std::map<int, int> whole_holders;      // GPU → runs credited for the whole of it
  std::map<int, int> computing;          // GPU → of those, the ones with a process on it
  std::set<int> instances_computing;     // GPUs with a process in one of their MIG instances
  std::map<int, double> instances_held;  // GPU → the shares its instances' holders are credited
  for (const auto& [key, holder] : seen) {
    if (run_of_holder(running_, key) == nullptr) continue;  // new: credited from the next sample
    for (const int gpu : holder.gpus) {
      const bool on_it = std::binary_search(holder.computing_gpus.begin(), holder.computing_gpus.end(), gpu);
      if (const auto share = holder.mig_share.find(gpu); share != holder.mig_share.end()) {
        if (on_it) instances_computing.insert(gpu);
        instances_held[gpu] += std::clamp(share->second, 0.0, 1.0);
        continue;
      }
      ++whole_holders[gpu];
      if (on_it) ++computing[gpu];
    }
  }
  const auto part_of = [&](const HolderSample& holder, int gpu) {
    if (const int on = computing[gpu]; on > 0)
      return std::binary_search(holder.computing_gpus.begin(), holder.computing_gpus.end(), gpu) ? 1.0 / on : 0.0;
    if (instances_computing.contains(gpu)) return 0.0;
    // Idle instances are their holders' still: the whole holders share what is left of the GPU.
    const auto held = instances_held.find(gpu);
    const double left = held == instances_held.end() ? 1.0 : std::max(0.0, 1.0 - held->second);
    return left / std::max(1, whole_holders[gpu]);
  };

  for (auto& entry : seen) {
    HolderSample& holder = entry.second;
    auto run = std::find_if(running_.begin(), running_.end(), [&](const RunRecord& r) { return r.key == entry.first; });
    const bool is_new = run == running_.end();
    if (is_new) {
      running_.push_back(started(holder, sample.when, ++last_id_));
      run = std::prev(running_.end());
    }
    run->missed = 0;
    run->last_seen = sample.when;
    merge_gpus(run->gpus, holder.gpus);
    if (run->user.empty() && !holder.user.empty()) run->user = holder.user;  // learnt later
    // The engine's word on what it is: a container first seen through its processes alone (the
    // engine did not answer) had a placeholder name and image; one renamed is found by its new name.
    if (holder.listed_by_engine) {
      run->name = holder.name;
      run->image = holder.image;
      if (!holder.command.empty()) run->command = holder.command;
    }
    if (holder.memory_used_mib) run->max_memory_mib = std::max(run->max_memory_mib, *holder.memory_used_mib);
    if (is_new || credit_s <= 0) continue;

    bool all_idle = !holder.gpus.empty();
    for (int gpu : holder.gpus) {
      const auto part = holder.mig_share.find(gpu);
      const double held_s =
          credit_s * (part == holder.mig_share.end() ? part_of(holder, gpu) : std::clamp(part->second, 0.0, 1.0));
      run->gpu_seconds += held_s;
      const auto found = utilization.find(gpu);
      const std::optional<double> util = found == utilization.end() ? std::nullopt : found->second;
      if (util)
        run->busy_gpu_seconds += held_s * std::clamp(*util, 0.0, 100.0) / 100.0;
      else
        run->unmeasured_gpu_seconds += held_s;
      if (!util || *util > settings_.idle_threshold_percent) all_idle = false;
    }
    if (all_idle) run->idle_seconds += credit_s;
  }

  std::set<int> held;
  for (const auto& entry : seen) held.insert(entry.second.gpus.begin(), entry.second.gpus.end());
  std::map<int, SampleTime> idle_from;
  idle_since_.clear();
  for (const auto& [index, util] : utilization) {
    if (!held.contains(index) || !util || *util > settings_.idle_threshold_percent) continue;
    const auto before = idle_from_.find(index);
    const SampleTime from = before != idle_from_.end() ? before->second : sample.time();
    idle_from.emplace(index, from);
    idle_since_[index] = sample.when - sample.time().since(from);
  }
  idle_from_ = std::move(idle_from);

  for (const auto& entry : seen) last_seen_[entry.first] = sample.time();
  std::vector<RunRecord> ended;
  for (auto run = running_.begin(); run != running_.end();) {
    // Since it was last seen on the steady clock where this tracker saw it; a run resumed from the
    // store and not seen since, by the wall clock.
    const auto seen_at = last_seen_.find(run->key);
    const std::chrono::milliseconds unseen =
        seen_at != last_seen_.end()
            ? sample.time().since(seen_at->second)
            : std::chrono::duration_cast<std::chrono::milliseconds>(sample.when - run->last_seen);
    const bool within_grace = unseen <= settings_.engine_outage_grace;
    const bool engine_silent = sample.containers_unknown && run->key.starts_with("container:") && within_grace;
    const bool gpus_unread =
        !run->gpus.empty() && within_grace &&
        std::all_of(run->gpus.begin(), run->gpus.end(), [&](int gpu) { return sample.gpus_unknown.contains(gpu); });
    if (seen.contains(run->key) || engine_silent || gpus_unread || ++run->missed < settings_.gone_after_samples) {
      ++run;
      continue;
    }
    run->end = run->last_seen;
    run->ended_by = "gone";
    last_seen_.erase(run->key);
    ended.push_back(std::move(*run));
    run = running_.erase(run);
  }
  return ended;
}

}  // namespace gpurun
