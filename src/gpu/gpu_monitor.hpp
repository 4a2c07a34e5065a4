#pragma once
// Samples the job's GPUs from one long-lived `nvidia-smi --query-gpu=... -lms N -i IDS` stream
// on a thread of its own (never one process per sample), restarting the stream if it dies.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/utilization_stats.hpp"

namespace gpurun {

class GpuMonitor {
 public:
  GpuMonitor(std::string nvidia_smi, std::vector<int> indices, std::chrono::milliseconds interval);
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;
  ~GpuMonitor();

  // Stops sampling (kills the stream) and returns the statistics per GPU index.
  std::map<int, UtilizationStats> stop();

 private:
  void run();
  void consume(std::string& pending);

  std::string nvidia_smi_;
  std::vector<int> indices_;
  std::chrono::milliseconds interval_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<int, UtilizationStats> stats_;
  std::thread thread_;
};

}  // namespace gpurun
