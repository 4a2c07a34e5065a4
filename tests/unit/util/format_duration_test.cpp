// Unit tests for the one duration formatter, in both its styles.
#include <gtest/gtest.h>

#include <chrono>

#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

using std::chrono::seconds;

TEST(FormatDuration, ExactGoesToTheSecondWithTwoDigitsAfterTheFirstUnit) {
  EXPECT_EQ(format_duration(seconds(0)), "0s");
  EXPECT_EQ(format_duration(seconds(12)), "12s");
  EXPECT_EQ(format_duration(seconds(60)), "1m 00s");
  EXPECT_EQ(format_duration(seconds(187)), "3m 07s");
  EXPECT_EQ(format_duration(seconds(3600)), "1h 00m 00s");
  EXPECT_EQ(format_duration(seconds(3725)), "1h 02m 05s");
  EXPECT_EQ(format_duration(seconds(26 * 3600 + 61)), "26h 01m 01s");  // no days
  EXPECT_EQ(format_duration(seconds(-5)), "-5s");
}

TEST(FormatDuration, BriefSaysTheTwoLargestUnitsLeavingOutAZeroSecond) {
  constexpr auto brief = DurationStyle::brief;
  EXPECT_EQ(format_duration(seconds(0), brief), "0s");
  EXPECT_EQ(format_duration(seconds(59), brief), "59s");
  EXPECT_EQ(format_duration(seconds(60), brief), "1m");  // a zero second unit is left out
  EXPECT_EQ(format_duration(seconds(187), brief), "3m 7s");
  EXPECT_EQ(format_duration(seconds(3725), brief), "1h 2m");
  EXPECT_EQ(format_duration(seconds(86399), brief), "23h 59m");
  EXPECT_EQ(format_duration(seconds(86400), brief), "1d");
  EXPECT_EQ(format_duration(seconds(3 * 86400 + 4 * 3600 + 59), brief), "3d 4h");
}

}  // namespace
}  // namespace gpurun
