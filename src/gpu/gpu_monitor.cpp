#include "gpurun/gpu/gpu_monitor.hpp"

namespace gpurun {

GpuMonitor::GpuMonitor(std::unique_ptr<GpuSampler> sampler, const std::vector<int>& indices)
    : sampler_(std::move(sampler)) {
  for (int index : indices) stats_[index];
  thread_ = std::thread([this] {
    sampler_->run(stopping_, [this](int index, std::optional<double> utilization, std::optional<double> memory) {
      std::lock_guard lock(mutex_);
      if (const auto it = stats_.find(index); it != stats_.end()) it->second.add(utilization, memory);
    });
  });
}

GpuMonitor::GpuMonitor(std::string nvidia_smi, const std::vector<int>& indices, std::chrono::milliseconds interval)
    : GpuMonitor(make_smi_stream_sampler(std::move(nvidia_smi), indices, interval), indices) {}

GpuMonitor::~GpuMonitor() { stop(); }

std::map<int, UtilizationStats> GpuMonitor::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace gpurun
