#pragma once
// Where GpuMonitor's samples come from: one long-lived nvidia-smi stream, or NVML polled in
// process (no child at all). A sampler runs on the monitor's thread until told to stop.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpurun {

// One sample of GPU `index`: utilization (%) and memory used (MiB), each missing when unread.
using SampleSink = std::function<void(int index, std::optional<double> utilization, std::optional<double> memory_mib)>;

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  GpuSampler() = default;
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // Feeds samples to `sink` until `stopping` is set; returns within about 100 ms of it.
  virtual void run(const std::atomic<bool>& stopping, const SampleSink& sink) = 0;
};

// `nvidia-smi --query-gpu=... -lms INTERVAL -i INDICES`, restarted if it dies.
std::unique_ptr<GpuSampler> make_smi_stream_sampler(std::string nvidia_smi, std::vector<int> indices,
                                                    std::chrono::milliseconds interval);

// NVML every interval: utilization from nvmlDeviceGetSamples when the library has it (every
// sample the driver took since the last look), else nvmlDeviceGetUtilizationRates; memory used
// from nvmlDeviceGetMemoryInfo(_v2). Loads the library (`""`: libnvidia-ml.so.1) when it starts;
// a library that does not load leaves the statistics empty (the report says "no samples").
std::unique_ptr<GpuSampler> make_nvml_sampler(std::string library_path, std::vector<int> indices,
                                              std::chrono::milliseconds interval);

}  // namespace gpurun
