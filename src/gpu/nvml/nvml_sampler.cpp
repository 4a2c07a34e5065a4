// The NVML sampler: no child process, a few library calls per GPU each interval.
#include <spdlog/spdlog.h>

#include <thread>

#include "gpurun/gpu/gpu_sampler.hpp"
#include "gpurun/util/error.hpp"
#include "nvml/nvml_library.hpp"
#include "nvml/nvml_processes.hpp"

namespace gpurun {
namespace {

class NvmlSampler : public GpuSampler {
 public:
  NvmlSampler(std::string library_path, std::vector<int> indices, std::chrono::milliseconds interval)
      : library_path_(std::move(library_path)), indices_(std::move(indices)), interval_(interval) {}

  void run(const std::atomic<bool>& stopping, const SampleSink& sink) override {
    std::unique_ptr<NvmlLibrary> library;
    try {
      library = std::make_unique<NvmlLibrary>(library_path_);
    } catch (const Error& e) {
      spdlog::warn("the job's GPUs are not sampled: {}", e.what());
      return;
    }
    std::vector<Watched> watched;
    for (int index : indices_) {
      nvml::Device device = nullptr;
      if (library->device_get_handle_by_index(static_cast<unsigned>(index), &device) == nvml::kSuccess)
        watched.push_back({index, device, now_us()});  // only samples taken from now on count
    }
    const auto poll = std::chrono::milliseconds(100);
    while (!stopping) {
      const auto next = std::chrono::steady_clock::now() + interval_;
      for (Watched& gpu : watched) sample(*library, gpu, sink);
      while (!stopping && std::chrono::steady_clock::now() < next)
        std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
            poll, std::chrono::duration_cast<std::chrono::milliseconds>(next - std::chrono::steady_clock::now()) +
                      std::chrono::milliseconds(1)));
    }
  }

 private:
  struct Watched {
    int index;
    nvml::Device device;
    unsigned long long last_seen;  // the newest sample's timestamp (microseconds, as NVML's)
  };

  // NVML stamps its samples with the CPU clock in microseconds since the epoch.
  static unsigned long long now_us() {
    return static_cast<unsigned long long>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
  }

  static std::optional<double> memory_used(const NvmlLibrary& library, nvml::Device device) {
    if (library.device_get_memory_info_v2 != nullptr) {
      nvml::Memory_v2 memory{};
      memory.version = nvml::kMemory_v2Version;
      if (library.device_get_memory_info_v2(device, &memory) == nvml::kSuccess) return nvml_mib(memory.used);
    }
    nvml::Memory memory{};
    if (library.device_get_memory_info(device, &memory) == nvml::kSuccess) return nvml_mib(memory.used);
    return std::nullopt;
  }

  // The utilization samples the driver took since the last look; empty when it took none (or the
  // library cannot say), and the caller asks for the current rate instead.
  static std::vector<double> new_samples(const NvmlLibrary& library, Watched& gpu) {
    std::vector<double> values;
    if (library.device_get_samples == nullptr) return values;
    unsigned value_type = 0;
    unsigned count = 0;
    if (library.device_get_samples(gpu.device, nvml::kGpuUtilizationSamples, gpu.last_seen, &value_type, &count,
                                   nullptr) != nvml::kSuccess ||
        count == 0)
      return values;
    std::vector<nvml::Sample> samples(count);
    if (library.device_get_samples(gpu.device, nvml::kGpuUtilizationSamples, gpu.last_seen, &value_type, &count,
                                   samples.data()) != nvml::kSuccess)
      return values;
    for (unsigned i = 0; i < count && i < samples.size(); ++i) {
      if (samples[i].timeStamp <= gpu.last_seen) continue;
      gpu.last_seen = samples[i].timeStamp;
      values.push_back(static_cast<double>(samples[i].sampleValue.uiVal));  // NVML_VALUE_TYPE_UNSIGNED_INT
    }
    return values;
  }

  static void sample(const NvmlLibrary& library, Watched& gpu, const SampleSink& sink) {
    const std::optional<double> memory = memory_used(library, gpu.device);
    const std::vector<double> values = new_samples(library, gpu);
    for (double value : values) sink(gpu.index, value, memory);
    if (!values.empty()) return;
    nvml::Utilization utilization{};
    const bool read = library.device_get_utilization_rates(gpu.device, &utilization) == nvml::kSuccess;
    sink(gpu.index, read ? std::optional<double>(utilization.gpu) : std::nullopt, memory);
  }

  std::string library_path_;
  std::vector<int> indices_;
  std::chrono::milliseconds interval_;
};

}  // namespace

std::unique_ptr<GpuSampler> make_nvml_sampler(std::string library_path, std::vector<int> indices,
                                              std::chrono::milliseconds interval) {
  return std::make_unique<NvmlSampler>(std::move(library_path), std::move(indices), interval);
}

}  // namespace gpurun
