#include "gpu/gpu_monitor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.hpp"
#include "util/process.hpp"
#include "gpu/smi_csv.hpp"
#include "gpu/smi_query.hpp"

namespace gpurun {

GpuMonitor::GpuMonitor(std::string nvidia_smi, std::vector<int> indices, std::chrono::milliseconds interval)
    : nvidia_smi_(std::move(nvidia_smi)), indices_(std::move(indices)), interval_(interval) {
  for (int index : indices_) stats_[index];
  thread_ = std::thread([this] { run(); });
}

GpuMonitor::~GpuMonitor() { stop(); }

std::map<int, UtilizationStats> GpuMonitor::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  return stats_;
}

// Feeds every complete line of `pending` to the statistics; keeps a partial last line.
void GpuMonitor::consume(std::string& pending) {
  std::size_t end = 0;
  while ((end = pending.find('\n')) != std::string::npos) {
    const std::string line = pending.substr(0, end);
    pending.erase(0, end + 1);
    try {
      for (const Gpu& gpu : parse_gpu_csv(line)) {
        std::lock_guard lock(mutex_);
        if (const auto it = stats_.find(gpu.index); it != stats_.end())
          it->second.add(gpu.utilization_percent, gpu.memory_used_mib);
      }
    } catch (const Error& e) {
      spdlog::debug("monitor: skipping a sample: {}", e.what());
    }
  }
}

void GpuMonitor::run() {
  ProcessSpec spec = gpu_query(nvidia_smi_);
  spec.argv.insert(spec.argv.end(), {"-lms", std::to_string(interval_.count()), "-i", fmt::format("{}", fmt::join(indices_, ","))});
  const auto poll = std::chrono::milliseconds(100);
  while (!stopping_) {
    try {
      ChildStream stream(spec);
      std::string pending;
      while (!stopping_ && stream.read(pending, poll)) consume(pending);
    } catch (const Error& e) {
      spdlog::debug("monitor: {}", e.what());
    }
    if (stopping_) break;
    // The stream died: start another after a pause, not in a tight loop.
    spdlog::debug("monitor: nvidia-smi stream ended; restarting");
    for (int i = 0; i < 10 && !stopping_; ++i) std::this_thread::sleep_for(poll);
  }
}

}  // namespace gpurun
