#pragma once
// --report: run the job as a child, sample its GPUs, and say how well they were used (like seff).
#include <nlohmann/json.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "select/selection.hpp"
#include "gpu/utilization_stats.hpp"

namespace gpurun {

struct JobReport {
  double wall_s = 0;
  int exit_status = 0;
  int cpus = 0;
  double threshold_percent = 80;
  std::vector<Gpu> gpus;                       // the granted GPUs
  std::map<int, UtilizationStats> stats;       // by GPU index
};

// The whole job's GPU efficiency: the mean utilization over its GPUs (those with samples).
std::optional<double> gpu_efficiency(const JobReport& report);

std::string format_job_report(const JobReport& report);
nlohmann::ordered_json job_report_json(const JobReport& report);

struct SupervisedRun {
  std::vector<std::string> argv;        // the docker run command
  std::string nvidia_smi;
  std::chrono::milliseconds interval{1000};
  bool nvml = false;         // sample through NVML (the launch read its GPUs there): no nvidia-smi
  std::string nvml_library;  // "": libnvidia-ml.so.1
};

// Runs argv as a child in the foreground of the terminal, forwarding SIGINT, SIGTERM, SIGHUP,
// SIGQUIT and SIGWINCH to it, while sampling `report.gpus`; fills `report` and returns the
// child's exit status (128+N when a signal N ended it).
int run_supervised(const SupervisedRun& run, JobReport& report);

}  // namespace gpurun
