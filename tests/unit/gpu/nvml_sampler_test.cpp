// The monitor sampling through NVML (the stand-in libnvidia-ml): nvmlDeviceGetSamples when the
// library has it, else the current utilization each interval; memory each interval.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gpurun/gpu/gpu_monitor.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;

// Samples GPUs 0 and 1 every 20 ms until each has at least four samples: 0.3 s is plenty
// unloaded; a loaded sanitizer build may need longer windows (at most 6 s in all).
std::map<int, UtilizationStats> sample_for_a_while(const std::string& library) {
  const test::EnvGuard scenario("FAKE_NVML_SCENARIO", std::string(GPURUN_TEST_DATA_DIR) + "/nvml/sampled.json");
  std::map<int, UtilizationStats> stats;
  for (const auto window : {300ms, 1500ms, 4000ms}) {
    GpuMonitor monitor(make_nvml_sampler(library, {0, 1}, 20ms), {0, 1});
    std::this_thread::sleep_for(window);
    stats = monitor.stop();
    if (stats.at(0).samples() >= 4 && stats.at(1).samples() >= 4) break;
  }
  return stats;
}

TEST(NvmlSampler, TakesTheDriversSamplesWhenTheLibraryHasThem) {
  const auto stats = sample_for_a_while(FAKE_NVML_FULL);
  ASSERT_EQ(stats.size(), 2u);  // GPU 2 was not asked for
  // GPU 0's samples alternate 30, 50 (its current rate, 5, is never used).
  ASSERT_GE(stats.at(0).samples(), 4u);
  // An odd count is 10/n off 40; the division's rounding (n = 7, 9, 19...) may add an ulp.
  EXPECT_NEAR(*stats.at(0).mean(), 40, 10.0 / static_cast<double>(stats.at(0).samples()) + 1e-9);
  EXPECT_EQ(stats.at(0).p95(), 50);
  EXPECT_DOUBLE_EQ(*stats.at(0).memory_peak_mib(), 1000);
  // GPU 1 has no samples: its current rate each interval.
  ASSERT_GE(stats.at(1).samples(), 4u);
  EXPECT_DOUBLE_EQ(*stats.at(1).mean(), 55);
  EXPECT_DOUBLE_EQ(*stats.at(1).memory_peak_mib(), 2000);
  EXPECT_EQ(stats.at(1).missing(), 0u);
}

TEST(NvmlSampler, PollsTheCurrentUtilizationWithoutGetSamples) {
  const auto stats = sample_for_a_while(FAKE_NVML_MINIMAL);
  ASSERT_GE(stats.at(0).samples(), 4u);
  EXPECT_DOUBLE_EQ(*stats.at(0).mean(), 5);
  EXPECT_DOUBLE_EQ(*stats.at(0).memory_peak_mib(), 1000);
}

TEST(NvmlSampler, ALibraryThatDoesNotLoadLeavesTheStatsEmpty) {
  GpuMonitor monitor(make_nvml_sampler("/nonexistent/libnvidia-ml.so.1", {3}, 20ms), {3});
  std::this_thread::sleep_for(50ms);
  const auto stats = monitor.stop();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats.at(3).samples(), 0u);
}

}  // namespace
}  // namespace gpurun
