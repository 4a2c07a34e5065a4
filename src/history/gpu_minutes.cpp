#include "gpurun/history/gpu_minutes.hpp"

#include <algorithm>

namespace gpurun {

std::optional<double> GpuMinute::utilization_mean() const {
  if (utilization_samples == 0) return std::nullopt;
  return utilization_sum / utilization_samples;
}

std::vector<GpuSampleRow> gpu_sample_rows(const MachineSample& sample) {
  std::vector<GpuSampleRow> rows;
  rows.reserve(sample.gpus.size());
  for (const GpuReading& gpu : sample.gpus) {
    // A holder listed once per GPU is still one holder of each: count distinct keys.
    std::vector<const std::string*> keys;
    for (const HolderSample& holder : sample.holders)
      if (std::find(holder.gpus.begin(), holder.gpus.end(), gpu.index) != holder.gpus.end() &&
          std::none_of(keys.begin(), keys.end(), [&](const std::string* k) { return *k == holder.key; }))
        keys.push_back(&holder.key);
    rows.push_back({.when = sample.when,
                    .gpu = gpu.index,
                    .utilization_percent = gpu.utilization_percent,
                    .memory_used_mib = gpu.memory_used_mib,
                    .holders = static_cast<int>(keys.size())});
  }
  return rows;
}

void MinuteRollup::add(const std::vector<GpuSampleRow>& rows) {
  for (const GpuSampleRow& row : rows) {
    const std::int64_t minute = std::chrono::duration_cast<std::chrono::minutes>(row.when.time_since_epoch()).count();
    // Every open minute before this one is done (samples come in time order; a clock stepping
    // back reopens a minute, below).
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->first.first < minute) {
        finished_.push_back(it->second);
        it = open_.erase(it);
      } else {
        ++it;
      }
    }
    auto open = open_.find({minute, row.gpu});
    if (open == open_.end()) open = open_.emplace(std::pair{minute, row.gpu}, reopened(minute, row.gpu)).first;
    GpuMinute& m = open->second;
    ++m.samples;
    if (row.utilization_percent) {
      const double util = std::clamp(*row.utilization_percent, 0.0, 100.0);
      ++m.utilization_samples;
      m.utilization_sum += util;
      m.utilization_max = std::max(m.utilization_max, util);
      if (row.holders > 0 && util <= idle_threshold_percent_) ++m.idle_samples;
    }
    if (row.memory_used_mib) m.memory_max_mib = std::max(m.memory_max_mib, *row.memory_used_mib);
    m.holders_max = std::max(m.holders_max, row.holders);
  }
}

GpuMinute MinuteRollup::reopened(std::int64_t minute, int gpu) {
  const auto same = [&](const GpuMinute& m) { return m.minute == minute && m.gpu == gpu; };
  if (const auto done = std::find_if(finished_.begin(), finished_.end(), same); done != finished_.end()) {
    GpuMinute m = *done;  // finished but not taken yet: it is written with what comes now
    finished_.erase(done);
    return m;
  }
  if (kept_)
    if (std::optional<GpuMinute> m = kept_(minute, gpu); m && same(*m)) return *m;
  GpuMinute fresh;
  fresh.minute = minute;
  fresh.gpu = gpu;
  return fresh;
}

std::vector<GpuMinute> MinuteRollup::take_finished() { return std::exchange(finished_, {}); }

std::vector<GpuMinute> MinuteRollup::in_progress() const {
  std::vector<GpuMinute> minutes;
  minutes.reserve(open_.size());
  for (const auto& entry : open_) minutes.push_back(entry.second);
  return minutes;
}

}  // namespace gpurun
