#pragma once
// Samples the job's GPUs on a thread of its own, from a GpuSampler: one long-lived nvidia-smi
// stream (never one process per sample), or NVML in process.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpurun/gpu/gpu_sampler.hpp"
#include "gpurun/gpu/utilization_stats.hpp"

namespace gpurun {

class GpuMonitor {
 public:
  // Samples `indices` from `sampler`; samples of other GPUs are ignored.
  GpuMonitor(std::unique_ptr<GpuSampler> sampler, const std::vector<int>& indices);
  // The nvidia-smi stream.
  GpuMonitor(std::string nvidia_smi, const std::vector<int>& indices, std::chrono::milliseconds interval);
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;
  ~GpuMonitor();

  // Stops sampling (kills the stream) and returns the statistics per GPU index.
  std::map<int, UtilizationStats> stop();

 private:
  std::unique_ptr<GpuSampler> sampler_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<int, UtilizationStats> stats_;
  std::thread thread_;
};

}  // namespace gpurun
