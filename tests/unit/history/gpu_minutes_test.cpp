// Unit tests for the GPU history's rows (gpurun/history/gpu_minutes.hpp): raw rows per sample,
// and one row per GPU per minute.
#include "gpurun/history/gpu_minutes.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurun {
namespace {

using namespace std::chrono_literals;

const WallTime kMinute0 = WallTime{} + std::chrono::minutes(29'000'000);  // 2025, on a minute

HolderSample holder(const std::string& key, std::vector<int> gpus) {
  return {.key = key,
          .name = key,
          .user = "alice",
          .container_id = "",
          .image = "",
          .command = "",
          .gpus = std::move(gpus),
          .memory_used_mib = std::nullopt};
}

MachineSample sample(std::chrono::seconds t, std::optional<double> util0, std::vector<HolderSample> holders) {
  return {.when = kMinute0 + t,
          .gpus = {{.index = 0, .utilization_percent = util0, .memory_used_mib = 1000 + static_cast<double>(t.count())},
                   {.index = 1, .utilization_percent = 0, .memory_used_mib = 0}},
          .holders = std::move(holders)};
}

TEST(GpuSampleRows, OneRowPerGpuWithItsDistinctHolders) {
  // "a" is listed once per GPU process; it is one holder of GPU 0.
  const auto rows = gpu_sample_rows(sample(0s, 50, {holder("a", {0}), holder("a", {0}), holder("b", {0})}));
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].holders, 2);
  EXPECT_EQ(rows[0].utilization_percent, 50);
  EXPECT_EQ(rows[0].memory_used_mib, 1000);
  EXPECT_EQ(rows[1].holders, 0);
}

TEST(MinuteRollup, SumsEachGpuOverItsMinuteAndFinishesItWhenTheNextBegins) {
  MinuteRollup rollup(5.0);
  rollup.add(gpu_sample_rows(sample(0s, 90, {holder("a", {0, 1})})));
  rollup.add(gpu_sample_rows(sample(20s, 3, {holder("a", {0, 1})})));
  rollup.add(gpu_sample_rows(sample(40s, std::nullopt, {})));
  EXPECT_TRUE(rollup.take_finished().empty());
  ASSERT_EQ(rollup.in_progress().size(), 2U);

  rollup.add(gpu_sample_rows(sample(60s, 10, {})));
  const std::vector<GpuMinute> done = rollup.take_finished();
  ASSERT_EQ(done.size(), 2U);
  const GpuMinute& gpu0 = done[0];
  EXPECT_EQ(gpu0.minute, 29'000'000);
  EXPECT_EQ(gpu0.gpu, 0);
  EXPECT_EQ(gpu0.samples, 3);
  EXPECT_EQ(gpu0.utilization_samples, 2);  // one unknown
  EXPECT_DOUBLE_EQ(*gpu0.utilization_mean(), 46.5);
  EXPECT_DOUBLE_EQ(gpu0.utilization_max, 90);
  EXPECT_EQ(gpu0.idle_samples, 1);  // the 3 %, held
  EXPECT_DOUBLE_EQ(gpu0.memory_max_mib, 1040);
  EXPECT_EQ(gpu0.holders_max, 1);
  EXPECT_EQ(done[1].idle_samples, 2);  // GPU 1 at 0 % while held; not counted once let go
  EXPECT_TRUE(rollup.take_finished().empty());
  ASSERT_EQ(rollup.in_progress().size(), 2U);
  EXPECT_EQ(rollup.in_progress()[0].minute, 29'000'001);
}

TEST(MinuteRollup, AMinuteOpenedAgainGoesOnFromWhatWasKeptOfIt) {
  // The service stopped 30 s into the minute, having written 3 samples of GPU 0 at 90 %.
  GpuMinute before{.minute = 29'000'000,
                   .gpu = 0,
                   .samples = 3,
                   .utilization_samples = 3,
                   .utilization_sum = 270,
                   .utilization_max = 90,
                   .idle_samples = 0,
                   .memory_max_mib = 5000,
                   .holders_max = 1};
  std::vector<std::pair<std::int64_t, int>> asked;
  MinuteRollup rollup(5.0, [&](std::int64_t minute, int gpu) -> std::optional<GpuMinute> {
    asked.emplace_back(minute, gpu);
    if (gpu == 0 && minute == before.minute) return before;
    return std::nullopt;
  });
  rollup.add(gpu_sample_rows(sample(40s, 10, {})));
  rollup.add(gpu_sample_rows(sample(50s, 20, {})));
  const std::vector<GpuMinute> now = rollup.in_progress();
  ASSERT_EQ(now.size(), 2U);
  EXPECT_EQ(now[0].samples, 5);  // its row is replaced by this one: the 3 before are in it
  EXPECT_DOUBLE_EQ(now[0].utilization_sum, 300);
  EXPECT_DOUBLE_EQ(now[0].utilization_max, 90);
  EXPECT_DOUBLE_EQ(now[0].memory_max_mib, 5000);
  EXPECT_EQ(now[0].holders_max, 1);
  EXPECT_EQ(now[1].samples, 2);  // nothing kept of GPU 1's
  EXPECT_EQ(asked.size(), 2U);   // once per GPU and minute, not per sample
}

TEST(MinuteRollup, AClockSteppedBackReopensAFinishedMinuteWithItsSamples) {
  MinuteRollup rollup(5.0, [](std::int64_t, int) -> std::optional<GpuMinute> { return std::nullopt; });
  rollup.add(gpu_sample_rows(sample(0s, 40, {})));
  rollup.add(gpu_sample_rows(sample(30s, 60, {})));
  rollup.add(gpu_sample_rows(sample(70s, 0, {})));   // minute 0 finished, not yet taken
  rollup.add(gpu_sample_rows(sample(45s, 80, {})));  // the clock stepped back into it
  std::vector<GpuMinute> rows = rollup.take_finished();
  EXPECT_TRUE(rows.empty());  // taken back: it is open again
  rows = rollup.in_progress();
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[0].minute, 29'000'000);
  EXPECT_EQ(rows[0].samples, 3);
  EXPECT_DOUBLE_EQ(rows[0].utilization_sum, 180);
  EXPECT_EQ(rows[2].minute, 29'000'001);
  EXPECT_EQ(rows[2].samples, 1);
}

}  // namespace
}  // namespace gpurun
