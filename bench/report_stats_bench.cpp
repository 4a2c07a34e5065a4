// --report's statistics over a long synthetic run: time per sample, and memory that stays flat
// however many samples come (the resident set is measured before and after feeding them).
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <string>

#include "gpurun/gpu/utilization_stats.hpp"

namespace {

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// One sample per second per GPU for `hours` hours on 8 GPUs: 8 x 3600 x hours samples.
void BM_LongRunStaysFlat(benchmark::State& state) {
  const long samples_per_gpu = state.range(0) * 3600;
  for (auto _ : state) {
    std::map<int, gpurun::UtilizationStats> stats;
    for (int gpu = 0; gpu < 8; ++gpu) stats[gpu];
    const long before = resident_kib();
    unsigned value = 12345;
    for (long i = 0; i < samples_per_gpu; ++i) {
      for (auto& [gpu, s] : stats) {
        value = value * 1103515245u + 12345u;  // a cheap deterministic utilization trace
        s.add(static_cast<double>(value % 101), 1000.0 + static_cast<double>(value % 7));
      }
    }
    benchmark::DoNotOptimize(stats.at(0).p95());
    state.counters["rss_growth_kib"] = static_cast<double>(resident_kib() - before);
    state.counters["bytes_per_gpu"] = sizeof(gpurun::UtilizationStats);
  }
  state.SetItemsProcessed(state.iterations() * samples_per_gpu * 8);
}
BENCHMARK(BM_LongRunStaysFlat)->Arg(1)->Arg(24)->Arg(24 * 30)->Unit(benchmark::kMillisecond);

}  // namespace
