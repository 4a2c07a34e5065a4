// UtilizationStats: the streaming figures of --report, checked against hand-computed values.
#include <gtest/gtest.h>

#include "gpurun/gpu/utilization_stats.hpp"

namespace gpurun {
namespace {

UtilizationStats feed(std::initializer_list<std::optional<double>> samples) {
  UtilizationStats stats;
  for (const auto& s : samples) stats.add(s, std::nullopt);
  return stats;
}

TEST(UtilizationStats, NoSamplesGiveNoFigures) {
  const UtilizationStats stats;
  EXPECT_EQ(stats.samples(), 0u);
  EXPECT_FALSE(stats.mean());
  EXPECT_FALSE(stats.p95());
  EXPECT_FALSE(stats.share_under_50());
  EXPECT_FALSE(stats.memory_peak_mib());
}

TEST(UtilizationStats, MeanP95AndShareUnder50) {
  const UtilizationStats stats = feed({90, 95, 100, 20, 30, 40, 45, 50, 60, 70});
  EXPECT_EQ(stats.samples(), 10u);
  EXPECT_DOUBLE_EQ(*stats.mean(), 60.0);
  EXPECT_EQ(*stats.p95(), 100);  // nearest rank: the 10th of 10
  EXPECT_DOUBLE_EQ(*stats.share_under_50(), 0.4);
}

TEST(UtilizationStats, P95OfTwentySamplesIsTheNineteenth) {
  UtilizationStats stats;
  for (int i = 1; i <= 20; ++i) stats.add(i * 5.0, std::nullopt);  // 5, 10, ..., 100
  EXPECT_EQ(*stats.p95(), 95);
}

TEST(UtilizationStats, MissingSamplesAreCountedApart) {
  const UtilizationStats stats = feed({std::nullopt, 80, std::nullopt});
  EXPECT_EQ(stats.samples(), 1u);
  EXPECT_EQ(stats.missing(), 2u);
  EXPECT_DOUBLE_EQ(*stats.mean(), 80.0);
}

TEST(UtilizationStats, OutOfRangeValuesAreClamped) {
  const UtilizationStats stats = feed({-5, 130});
  EXPECT_DOUBLE_EQ(*stats.mean(), 50.0);
  EXPECT_EQ(*stats.p95(), 100);
}

TEST(UtilizationStats, MemoryPeakIsTheHighestSample) {
  UtilizationStats stats;
  stats.add(10, 1000);
  stats.add(std::nullopt, 4000);
  stats.add(10, std::nullopt);
  stats.add(10, 2000);
  EXPECT_DOUBLE_EQ(*stats.memory_peak_mib(), 4000);
}

}  // namespace
}  // namespace gpurun
