// The nvidia-smi sampler: one long-lived `-lms` stream on the monitor's thread (never one process
// per sample), restarted after a pause if it dies.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "gpurun/gpu/gpu_sampler.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "smi/smi_csv.hpp"
#include "smi/smi_query.hpp"

namespace gpurun {
namespace {

class SmiStreamSampler : public GpuSampler {
 public:
  SmiStreamSampler(std::string nvidia_smi, std::vector<int> indices, std::chrono::milliseconds interval)
      : nvidia_smi_(std::move(nvidia_smi)), indices_(std::move(indices)), interval_(interval) {}

  void run(const std::atomic<bool>& stopping, const SampleSink& sink) override {
    ProcessSpec spec = gpu_query(nvidia_smi_);
    spec.argv.insert(spec.argv.end(),
                     {"-lms", std::to_string(interval_.count()), "-i", fmt::format("{}", fmt::join(indices_, ","))});
    const auto poll = std::chrono::milliseconds(100);
    while (!stopping) {
      try {
        ChildStream stream(spec);
        std::string pending;
        while (!stopping && stream.read(pending, poll)) consume(pending, sink);
      } catch (const Error& e) {
        spdlog::debug("monitor: {}", e.what());
      }
      // cppcheck-suppress oppositeInnerCondition ; `stopping` is atomic: another thread sets it
      if (stopping) break;
      spdlog::debug("monitor: nvidia-smi stream ended; restarting");
      for (int i = 0; i < 10 && !stopping; ++i) std::this_thread::sleep_for(poll);
    }
  }

 private:
  // Feeds every complete line of `pending` to the sink; keeps a partial last line.
  static void consume(std::string& pending, const SampleSink& sink) {
    std::size_t end = 0;
    while ((end = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      try {
        for (const Gpu& gpu : parse_gpu_csv(line)) sink(gpu.index, gpu.utilization_percent, gpu.memory_used_mib);
      } catch (const Error& e) {
        spdlog::debug("monitor: skipping a sample: {}", e.what());
      }
    }
  }

  std::string nvidia_smi_;
  std::vector<int> indices_;
  std::chrono::milliseconds interval_;
};

}  // namespace

std::unique_ptr<GpuSampler> make_smi_stream_sampler(std::string nvidia_smi, std::vector<int> indices,
                                                    std::chrono::milliseconds interval) {
  return std::make_unique<SmiStreamSampler>(std::move(nvidia_smi), std::move(indices), interval);
}

}  // namespace gpurun
