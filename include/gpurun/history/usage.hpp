#pragma once
// `gpurun usage`: the runs' sums per user, image or GPU, the columns Princeton's jobstats reports
// use. A run that began before the window counts the share of its time inside it, its sums taken
// as spread evenly over its life (the service keeps per-run sums, not per-minute ones): a
// two-month run is not two months of "the last 30 days". Per GPU, a run's GPU-hours and busy GPU-hours are shared
// evenly between its GPUs (the run keeps no per-GPU split); its idle time counts on each of them, since a run is idle
// only while every one of its GPUs is.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/history/run_tracker.hpp"
#include "gpurun/util/choices.hpp"

namespace gpurun {

struct UsageRow {
  std::string key;  // the user, the image ("" for a bare process) or the GPU index
  int runs = 0;
  double gpu_hours = 0;
  double busy_gpu_hours = 0;
  double unmeasured_gpu_hours = 0;           // of gpu_hours, with no utilization known (MIG)
  double idle_gpu_hours = 0;                 // a run's idle time × the GPUs it held, at most its GPU-hours
  std::optional<double> efficiency() const;  // 100 × busy / the GPU-hours whose utilization was known
};

// The sums, run by run: what a year of runs adds up to without holding them all.
class UsageTally {
 public:
  // `since`: where the window starts (none: every run counts whole).
  explicit UsageTally(UsageKey by, std::optional<WallTime> since = std::nullopt) : by_(by), since_(since) {}
  void add(const RunRecord& run);
  std::vector<UsageRow> rows() const;  // one per key, the most GPU-hours first

 private:
  void add_to(const std::string& key, const RunRecord& run, double share, double idle_gpus);
  UsageKey by_;
  std::optional<WallTime> since_;
  std::map<std::string, UsageRow> rows_;
};

nlohmann::ordered_json usage_json(const std::vector<UsageRow>& rows);
std::vector<UsageRow> usage_from_json(const nlohmann::ordered_json& json);  // throws Error on anything else

}  // namespace gpurun
