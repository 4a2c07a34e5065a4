#pragma once
// --report: how well a job used its GPUs (like seff), as text and JSON. job/supervise.hpp runs
// the job and fills it.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpurun/gpu/utilization_stats.hpp"
#include "gpurun/select/selection.hpp"

namespace gpurun {

struct JobReport {
  double wall_s = 0;
  int exit_status = 0;
  int cpus = 0;
  double threshold_percent = 80;
  std::vector<Gpu> gpus;                  // the granted GPUs
  std::map<int, UtilizationStats> stats;  // by GPU index
};

// The whole job's GPU efficiency: the mean utilization over its GPUs (those with samples).
std::optional<double> gpu_efficiency(const JobReport& report);

// Plain advice from the lab guides this project grew from, for jobs that starve their GPUs (also
// `gpurun report`'s, which knows no CPU count: nullopt).
std::vector<std::string> low_efficiency_hints(std::optional<int> cpus_per_gpu, std::size_t gpus, double efficiency);

std::string format_job_report(const JobReport& report);
nlohmann::ordered_json job_report_json(const JobReport& report);

// --report-json: writes the report to `path` (nothing when empty) and returns the status to exit
// with: the job's, or 125 where the job succeeded but its report could not be written (a full
// disk, a FIFO nobody reads), which is said on stderr.
// Where --report-json will write, checked before the job starts (as the caller, under sudo): a
// missing directory found only when the job ends loses the report of the whole run. Throws Error.
void check_report_destination(const std::string& file);

int write_report_json(const std::string& path, const JobReport& report, int job_status);

}  // namespace gpurun
