// The gpurun service's costs with a synthetic clock (issue 22): 8 GPUs sampled every 10 s, jobs of
// about 8 hours on each, driven through the run tracker, the minute rollup and the SQLite store as
// gpurund drives them (written every 60 samples here, every sample group in gpurund: the rows are
// the same). It reports the database's size at default retention, the CPU per sample, the
// resident set before and after, and then the time of `history` and `usage` over that year
// through the service's request handler (the socket adds about a millisecond; see
// compare_service.sh for the whole process).
//   build-bench/gpurun_service_bench                       (30 days, then 365: a few minutes)
//   build-bench/gpurun_service_bench --benchmark_filter=Query   (reuses the year's database)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpurun/history/gpu_minutes.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/service/run_store.hpp"
#include "gpurun/service/service_server.hpp"

namespace {

using namespace gpurun;
using namespace std::chrono_literals;

constexpr int kGpus = 8;
constexpr auto kInterval = 10s;
// The simulated year ends now, so that `--since 365d` from the service's clock covers all of it.
const WallTime kStart =
    std::chrono::floor<std::chrono::minutes>(std::chrono::system_clock::now()) - std::chrono::hours(24 * 365);

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::string db_dir(int days) { return fmt::format("/var/tmp/gpurun-service-bench-{}d", days); }

// Sample `i`: GPU g runs job (i + g * offset) / per_job, idle for its first 10 minutes (loading),
// then busy at a pseudo-random 30-100 %; 20 users take turns.
MachineSample synthetic(long i) {
  constexpr long per_job = 8 * 360;  // 8 hours of samples
  MachineSample sample{.when = kStart + i * kInterval, .gpus = {}, .holders = {}};
  for (int g = 0; g < kGpus; ++g) {
    const long shifted = i + g * 397;
    const long job = shifted / per_job * kGpus + g;
    const bool loading = shifted % per_job < 60;
    const auto noise = static_cast<double>((static_cast<unsigned long>(shifted) * 2654435761UL >> 7) % 71);
    sample.gpus.push_back(
        {.index = g, .utilization_percent = loading ? 0.0 : 30.0 + noise, .memory_used_mib = 20000.0 + noise * 100});
    sample.holders.push_back({.key = fmt::format("container:{:012x}", job),
                              .name = fmt::format("train-{}", job),
                              .user = fmt::format("user{:02}", job % 20),
                              .container_id = fmt::format("{:012x}", job),
                              .image = fmt::format("lab/pytorch:24.{:02}", job % 12 + 1),
                              .command = "python train.py --config configs/big.yaml",
                              .gpus = {g},
                              .memory_used_mib = 20000.0 + noise * 100});
  }
  return sample;
}

struct YearResult {
  double cpu_us_per_sample = 0;
  long rss_before_kib = 0;
  long rss_after_kib = 0;
  double db_mib = 0;
  std::size_t runs = 0;
};

YearResult simulate(int days) {
  std::filesystem::remove_all(db_dir(days));
  std::filesystem::create_directories(db_dir(days));
  RunStore store(db_dir(days) + "/gpurund.db");
  RunTracker tracker;
  MinuteRollup rollup;
  std::vector<RunRecord> ended;
  std::vector<GpuSampleRow> rows;
  YearResult result;
  const long samples = days * 86400L / kInterval.count();
  const auto cpu_start = std::clock();
  for (long i = 0; i < samples; ++i) {
    if (i == samples / 30) result.rss_before_kib = resident_kib();  // after the first day's caches
    const MachineSample sample = synthetic(i);
    for (RunRecord& run : tracker.observe(sample)) ended.push_back(std::move(run));
    const std::vector<GpuSampleRow> these = gpu_sample_rows(sample);
    rollup.add(these);
    rows.insert(rows.end(), these.begin(), these.end());
    if (i % 60 == 59 || i == samples - 1) {
      std::vector<GpuMinute> minutes = rollup.take_finished();
      for (const GpuMinute& m : rollup.in_progress()) minutes.push_back(m);
      store.save(tracker.running(), ended, rows, minutes);
      store.prune(sample.when - std::chrono::hours(24 * 14), sample.when - std::chrono::hours(24 * 400));
      result.runs += ended.size();
      ended.clear();
      rows.clear();
    }
  }
  result.cpu_us_per_sample =
      1e6 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC / static_cast<double>(samples);
  result.rss_after_kib = resident_kib();
  std::uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(db_dir(days))) bytes += entry.file_size();
  result.db_mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return result;
}

void BM_RecorderOverDays(benchmark::State& state) {
  const int days = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const YearResult r = simulate(days);
    state.counters["cpu_us_per_sample"] = r.cpu_us_per_sample;
    state.counters["cpu_percent_at_10s"] = r.cpu_us_per_sample / 1e6 / 10 * 100;
    state.counters["rss_day1_kib"] = static_cast<double>(r.rss_before_kib);
    state.counters["rss_end_kib"] = static_cast<double>(r.rss_after_kib);
    state.counters["db_mib"] = r.db_mib;
    state.counters["runs"] = static_cast<double>(r.runs);  // a few thousand: exact in a double
  }
}
BENCHMARK(BM_RecorderOverDays)->Arg(30)->Arg(365)->Iterations(1)->Unit(benchmark::kSecond);

// `gpurun history --since 365d` and `usage --since 365d` as the service answers them.
void query(benchmark::State& state, const std::string& what) {
  const std::string path = db_dir(365) + "/gpurund.db";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("run BM_RecorderOverDays/365 first: it writes the year's database");
    return;
  }
  const RunStore store(path);  // the recorder's, open beside the queries' own connections
  ServedRuns served;
  served.store_path = path;
  const ServerSettings settings;
  const WallTime end = kStart + std::chrono::hours(24 * 365);
  const long long since =
      std::chrono::duration_cast<std::chrono::milliseconds>((end - std::chrono::hours(24 * 365)).time_since_epoch())
          .count();
  const std::string target = fmt::format("/v1/{}?since={}", what, since);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const ServiceAnswer answer =
        answer_request({.target = target, .peer_uid = 0, .claimed_caller = ""}, served, settings);
    bytes = answer.body.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["answer_kib"] = static_cast<double>(bytes) / 1024;
}
void BM_QueryHistoryYear(benchmark::State& state) { query(state, "runs"); }
void BM_QueryUsageYear(benchmark::State& state) { query(state, "usage"); }
BENCHMARK(BM_QueryHistoryYear)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QueryUsageYear)->Unit(benchmark::kMillisecond);

}  // namespace
