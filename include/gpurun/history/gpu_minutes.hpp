#pragma once
// The GPU history the service keeps beside its runs (issue 22): each GPU's raw readings per
// sample, and one row per GPU per minute (mean and peak utilization, idle samples, peak memory,
// most holders) that Grafana and the lab's page draw from. Pure logic: the store writes the rows.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

// One GPU in one sample, as the store keeps it raw.
struct GpuSampleRow {
  WallTime when;
  int gpu = 0;
  std::optional<double> utilization_percent;
  std::optional<double> memory_used_mib;
  int holders = 0;  // runs holding it
};

// Stored rows handed over one at a time, oldest first (a sample time's rows together): a walk
// over days of samples holds one row, not all of them (the idle policy's look back after a restart).
using GpuSampleVisit = std::function<void(const GpuSampleRow&)>;
using GpuSampleWalk = std::function<void(const GpuSampleVisit&)>;

// One GPU over one minute.
struct GpuMinute {
  std::int64_t minute = 0;  // Unix time / 60
  int gpu = 0;
  int samples = 0;
  int utilization_samples = 0;  // those with a utilization reading
  double utilization_sum = 0;   // mean = sum / utilization_samples
  double utilization_max = 0;
  int idle_samples = 0;  // held, and at or below the idle threshold
  double memory_max_mib = 0;
  int holders_max = 0;

  std::optional<double> utilization_mean() const;
};

// The rows of one sample: one per GPU, its holders counted from the sample's holders.
std::vector<GpuSampleRow> gpu_sample_rows(const MachineSample& sample);

// What was kept of a minute (minute, gpu) the rollup no longer holds: the store's row.
using KeptMinute = std::function<std::optional<GpuMinute>(std::int64_t minute, int gpu)>;

// Sums samples into minutes. A minute is finished when a sample of a later minute comes. A minute
// opened again (the service restarted within it, or the clock stepped back into it) goes on from
// what was kept of it, since its row is written whole and replaces the one before.
class MinuteRollup {
 public:
  explicit MinuteRollup(double idle_threshold_percent = 5.0, KeptMinute kept = {})
      : idle_threshold_percent_(idle_threshold_percent), kept_(std::move(kept)) {}

  void add(const std::vector<GpuSampleRow>& rows);
  // The finished minutes since the last call, oldest first.
  std::vector<GpuMinute> take_finished();
  // The minute in progress, as it stands (written at each flush, replaced when it grows).
  std::vector<GpuMinute> in_progress() const;

 private:
  double idle_threshold_percent_;
  KeptMinute kept_;
  std::map<std::pair<std::int64_t, int>, GpuMinute> open_;  // (minute, gpu)
  std::vector<GpuMinute> finished_;

  GpuMinute reopened(std::int64_t minute, int gpu);
};

}  // namespace gpurun
