// Unit tests for the GPU monitor: one long-lived nvidia-smi stream (here a stand-in script),
// its samples counted per GPU, restarted when it dies, killed when the monitor stops.
#include "gpurun/gpu/gpu_monitor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Waits (up to 10 s) until `path` has `lines` lines.
bool wait_for_lines(const std::string& path, std::size_t lines) {
  for (const auto deadline = Clock::now() + 10s; Clock::now() < deadline; std::this_thread::sleep_for(10ms)) {
    if (!std::filesystem::exists(path)) continue;
    const std::string text = test::read_file(path);
    if (static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) >= lines) return true;
  }
  return false;
}

TEST(GpuMonitor, CountsTheSamplesOfItsGpusAndRestartsAStreamThatDied) {
  const test::TempDir dir("gpurun-monitor");
  const std::string calls = dir / "calls";
  // The first stream prints a few samples (one of a GPU not watched, one unreadable) and ends;
  // the second stays silent, as a real stream between samples.
  const std::string smi =
      test::write_script(dir / "nvidia-smi", "printf '%s\\n' \"$*\" >> '" + calls +
                                                 "'\n"
                                                 "[ \"$(wc -l < '" +
                                                 calls +
                                                 "')\" -gt 1 ] && exec sleep 30\n"
                                                 "echo '0, GPU-0, A100, 100, 81920, 40, Disabled'\n"
                                                 "echo '2, GPU-2, A100, 300, 81920, 80, Disabled'\n"
                                                 "echo '1, GPU-1, A100, 999, 81920, 99, Disabled'\n"
                                                 "echo 'not a sample'\n"
                                                 "echo '0, GPU-0, A100, 200, 81920, 60, Disabled'\n");
  GpuMonitor monitor(smi, {0, 2}, 50ms);
  ASSERT_TRUE(wait_for_lines(calls, 2)) << "the stream was not restarted";
  const auto stopping = Clock::now();
  const auto stats = monitor.stop();
  EXPECT_LT(Clock::now() - stopping, 2s) << "stop() must not wait for the silent stream";

  const std::string first_call = test::read_file(calls).substr(0, test::read_file(calls).find('\n'));
  EXPECT_EQ(first_call,
            "--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu,mig.mode.current "
            "--format=csv,noheader,nounits -lms 50 -i 0,2");
  ASSERT_EQ(stats.size(), 2u);  // GPU 1 was not asked for
  EXPECT_EQ(stats.at(0).samples(), 2u);
  EXPECT_DOUBLE_EQ(*stats.at(0).mean(), 50);
  EXPECT_DOUBLE_EQ(*stats.at(0).memory_peak_mib(), 200);
  EXPECT_EQ(stats.at(2).samples(), 1u);
  EXPECT_DOUBLE_EQ(*stats.at(2).mean(), 80);
}

TEST(GpuMonitor, StoppingWithoutAnySampleGivesEmptyStatsForEachGpu) {
  const test::TempDir dir("gpurun-monitor");
  GpuMonitor monitor(test::write_script(dir / "nvidia-smi", "exec sleep 30"), {1}, 1000ms);
  const auto stats = monitor.stop();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats.at(1).samples(), 0u);
  EXPECT_EQ(stats.at(1).mean(), std::nullopt);
}

}  // namespace
}  // namespace gpurun
