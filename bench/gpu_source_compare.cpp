// NVML against nvidia-smi on a real machine (issue 14): do both sources see the same GPUs (UUID,
// memory used, processes), and what does one look cost through each? Prints one line per GPU
// and the timings; exits 1 when the sources disagree. Run on a GPU host:
//   build-bench/gpurun_gpu_source_compare [ROUNDS]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpurun/gpu/gpu_source.hpp"
#include "nvml/nvml_source.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpurun;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  const auto timeout = std::chrono::seconds(30);
  try {
    auto started = Clock::now();
    NvmlProbe probe = probe_nvml_source("");
    const double nvml_init_ms = ms_since(started);
    if (!probe.source) {
      std::printf("NVML did not load: %s\n", probe.failure.c_str());
      return 2;
    }
    auto smi = make_gpu_source(GpuSourceSpec{});
    started = Clock::now();
    const Snapshot by_smi = smi->read(timeout);
    const double smi_first_ms = ms_since(started);
    const Snapshot by_nvml = probe.source->read(timeout);

    bool agree = by_smi.gpus.size() == by_nvml.gpus.size();
    for (std::size_t i = 0; i < by_smi.gpus.size() && i < by_nvml.gpus.size(); ++i) {
      const Gpu& a = by_smi.gpus[i];
      const Gpu& b = by_nvml.gpus[i];
      const bool same = a.index == b.index && a.uuid == b.uuid && a.memory_used_mib == b.memory_used_mib &&
                        a.memory_total_mib == b.memory_total_mib && a.processes.size() == b.processes.size();
      agree = agree && same;
      std::printf("GPU %d %s: nvidia-smi %s %.0f/%.0f MiB %zu procs | nvml %s %.0f/%.0f MiB %zu procs\n", a.index,
                  same ? "agree" : "DIFFER", a.uuid.c_str(), a.memory_used_mib.value_or(-1),
                  a.memory_total_mib.value_or(-1), a.processes.size(), b.uuid.c_str(), b.memory_used_mib.value_or(-1),
                  b.memory_total_mib.value_or(-1), b.processes.size());
    }

    started = Clock::now();
    for (int r = 0; r < rounds; ++r) (void)smi->read(timeout);
    const double smi_ms = ms_since(started) / rounds;
    started = Clock::now();
    for (int r = 0; r < rounds; ++r) (void)probe.source->read(timeout);
    const double nvml_ms = ms_since(started) / rounds;
    std::printf("nvidia-smi: first look %.2f ms, then %.2f ms per look (both queries)\n", smi_first_ms, smi_ms);
    std::printf("NVML: load and init %.2f ms, then %.3f ms per look\n", nvml_init_ms, nvml_ms);
    std::printf("%s\n", agree ? "the sources agree" : "the sources DISAGREE");
    return agree ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 2;
  }
}
