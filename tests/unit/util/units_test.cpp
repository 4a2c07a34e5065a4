// Unit tests for the typed setting values: memory and utilization limits, wait durations, and
// the one duration formatter.
#include "gpurun/util/units.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// parse_memory_limit / parse_utilization_limit

struct MemoryLimitCase {
  const char* text;
  MemoryLimit::Kind kind;
  double value;
};

void PrintTo(const MemoryLimitCase& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class ParseMemoryLimit : public ::testing::TestWithParam<MemoryLimitCase> {};

TEST_P(ParseMemoryLimit, ReadsAmountsAndShares) {
  const MemoryLimit limit = parse_memory_limit(GetParam().text);
  EXPECT_EQ(limit.kind, GetParam().kind);
  EXPECT_DOUBLE_EQ(limit.value, GetParam().value);
}

INSTANTIATE_TEST_SUITE_P(Good, ParseMemoryLimit,
                         ::testing::Values(MemoryLimitCase{"2GiB", MemoryLimit::Kind::mib, 2048},
                                           MemoryLimitCase{"500MiB", MemoryLimit::Kind::mib, 500},
                                           MemoryLimitCase{"500 MiB", MemoryLimit::Kind::mib, 500},
                                           MemoryLimitCase{"1.5gib", MemoryLimit::Kind::mib, 1536},
                                           MemoryLimitCase{"2G", MemoryLimit::Kind::mib, 2048},
                                           MemoryLimitCase{"300M", MemoryLimit::Kind::mib, 300},
                                           MemoryLimitCase{"15%", MemoryLimit::Kind::percent, 15},
                                           MemoryLimitCase{"0%", MemoryLimit::Kind::percent, 0},
                                           MemoryLimitCase{"100%", MemoryLimit::Kind::percent, 100},
                                           MemoryLimitCase{"0MiB", MemoryLimit::Kind::mib, 0}));

class ParseMemoryLimitRejects : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseMemoryLimitRejects, WithAnErrorNamingTheOption) {
  const auto e = test::caught_error([&] { parse_memory_limit(GetParam()); });
  EXPECT_EQ(e.exit_code, exit_code::failure);
  EXPECT_THAT(e.message, AllOf(HasSubstr("--max-memory"), HasSubstr(std::string("\"") + GetParam() + "\"")));
}

INSTANTIATE_TEST_SUITE_P(Bad, ParseMemoryLimitRejects,
                         ::testing::Values("", "abc", "12", "-1%", "101%", "-5MiB", "5 PiB", "%", "MiB", "inf%", "nan%",
                                           "1x%", "10%%"));

TEST(ParseMemoryLimit, BareNumberErrorSaysAUnitIsNeeded) {
  EXPECT_THAT(test::caught_error([] { parse_memory_limit("12"); }).message, HasSubstr("needs a unit"));
}

TEST(ParseMemorySize, ReadsMibGibAndTib) {
  EXPECT_DOUBLE_EQ(parse_memory_size("500MiB", "--min-free-memory"), 500.0);
  EXPECT_DOUBLE_EQ(parse_memory_size("20G", "--min-free-memory"), 20480.0);
  EXPECT_DOUBLE_EQ(parse_memory_size("1.5gib", "--min-free-memory"), 1536.0);
  EXPECT_DOUBLE_EQ(parse_memory_size("1TiB", "--min-free-memory"), 1024.0 * 1024.0);
}

TEST(ParseMemorySize, RefusesPercentagesZeroAndBareNumbers) {
  for (const char* bad : {"10%", "0GiB", "-1GiB", "20", "", "lots"}) {
    const auto e = test::caught_error([&] { parse_memory_size(bad, "--min-free-memory"); });
    EXPECT_THAT(e.message, AllOf(HasSubstr("--min-free-memory"), HasSubstr("20GiB"))) << bad;
  }
}

TEST(ParseUtilizationLimit, AcceptsPercentWithOrWithoutTheSign) {
  EXPECT_DOUBLE_EQ(parse_utilization_limit("10"), 10);
  EXPECT_DOUBLE_EQ(parse_utilization_limit("10%"), 10);
  EXPECT_DOUBLE_EQ(parse_utilization_limit("7.5 %"), 7.5);
  EXPECT_DOUBLE_EQ(parse_utilization_limit("0"), 0);
  EXPECT_DOUBLE_EQ(parse_utilization_limit("100%"), 100);
}

TEST(ParseUtilizationLimit, RejectsOutOfRangeAndGarbage) {
  for (const char* bad : {"", "abc", "-1", "-1%", "101", "100.5%", "10 MiB", "10%%", "inf", "nan", "1x"}) {
    const auto e = test::caught_error([&] { parse_utilization_limit(bad); });
    EXPECT_EQ(e.exit_code, exit_code::failure) << bad;
    EXPECT_THAT(e.message, HasSubstr("--max-util")) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// parse_wait_duration / format_duration

TEST(ParseWaitDuration, EmptyOrForeverMeansNoLimit) {
  EXPECT_EQ(parse_wait_duration(""), std::nullopt);
  EXPECT_EQ(parse_wait_duration("  "), std::nullopt);
  EXPECT_EQ(parse_wait_duration("forever"), std::nullopt);
}

TEST(ParseWaitDuration, ReadsSecondsMinutesHoursAndDays) {
  EXPECT_EQ(parse_wait_duration("90"), 90s);
  EXPECT_EQ(parse_wait_duration(" 30s "), 30s);
  EXPECT_EQ(parse_wait_duration("5m"), 300s);
  EXPECT_EQ(parse_wait_duration("1.5m"), 90s);
  EXPECT_EQ(parse_wait_duration("2h"), 7200s);
  EXPECT_EQ(parse_wait_duration("1d"), 86400s);
  EXPECT_EQ(parse_wait_duration("0"), 0s);
}

TEST(ParseWaitDuration, RejectsOtherUnitsNegativesAndHugeValuesNamingTheOption) {
  for (const char* bad : {"-1", "5x", "5M", "abc", "m", "nan"}) {
    const auto e = test::caught_error([&] { parse_wait_duration(bad); });
    EXPECT_EQ(e.exit_code, exit_code::failure) << bad;
    EXPECT_EQ(e.message, std::string("--wait=") + bad +
                             ": expected a duration such as 90, 30s, 5m or 2h (bare --wait waits without limit)");
  }
  for (const char* huge : {"1e10", "99999999999999h"}) {  // a duration, but past the limit, which is named
    const auto e = test::caught_error([&] { parse_wait_duration(huge); });
    EXPECT_EQ(e.message,
              std::string("--wait=") + huge + ": at most 1000000000 s (31 years); bare --wait waits without limit");
  }
}

TEST(FormatDuration, ShowsOnlyTheUnitsItNeedsWithTwoDigitsAfterTheFirst) {
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(12s), "12s");
  EXPECT_EQ(format_duration(59s), "59s");
  EXPECT_EQ(format_duration(60s), "1m 00s");
  EXPECT_EQ(format_duration(187s), "3m 07s");
  EXPECT_EQ(format_duration(3600s), "1h 00m 00s");
  EXPECT_EQ(format_duration(3725s), "1h 02m 05s");
  EXPECT_EQ(format_duration(90000s), "25h 00m 00s");
}

}  // namespace
}  // namespace gpurun
