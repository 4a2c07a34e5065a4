#pragma once
// --report: the job runs as gpurun's child in the terminal's foreground while its GPUs are
// sampled (through NVML, or one streaming nvidia-smi), filling a JobReport.
#include <chrono>
#include <string>
#include <vector>

#include "gpurun/job/job_report.hpp"

namespace gpurun {

struct SupervisedRun {
  std::vector<std::string> argv;  // the docker run command
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
