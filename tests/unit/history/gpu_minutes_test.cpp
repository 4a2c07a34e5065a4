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

}  // namespace
}  // namespace gpurun
