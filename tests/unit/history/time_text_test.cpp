// Unit tests for the service's times (gpurun/history/time_text.hpp).
#include "gpurun/history/time_text.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const WallTime kNoon = WallTime{} + std::chrono::seconds(1'795'953'600);  // 2026-11-29T12:00:00Z

TEST(UnixMs, ReadsBackAndRefusesWhatAClockOfNanosecondsCannotHold) {
  const WallTime when = WallTime{} + std::chrono::milliseconds(1'795'953'600'123);
  EXPECT_EQ(unix_ms(when), 1'795'953'600'123);
  EXPECT_EQ(from_unix_ms(unix_ms(when)), when);
  EXPECT_TRUE(from_unix_ms(-9'000'000'000'000LL));
  EXPECT_FALSE(from_unix_ms(9'000'000'000'001LL));
  EXPECT_FALSE(from_unix_ms(-9'000'000'000'001LL));
}

TEST(TimeTextTest, Rfc3339ReadsWhatItWritesAndOffsets) {
  EXPECT_EQ(rfc3339(kNoon), "2026-11-29T12:00:00Z");
  EXPECT_EQ(parse_rfc3339("2026-11-29T12:00:00Z"), kNoon);
  EXPECT_EQ(parse_rfc3339("2026-11-29T14:00:00+02:00"), kNoon);
  EXPECT_EQ(parse_rfc3339("2026-11-29T11:30:00.25-00:30"), kNoon);
  {
    const test::EnvGuard utc("TZ", "UTC0");
    ::tzset();
    EXPECT_EQ(parse_rfc3339("2026-11-29"), kNoon - 12h);
  }
  ::tzset();
  for (const char* bad : {"", "yesterday", "2026-11-29T12:00", "2026-11-29T12:00:00Zjunk", "2026-13-40"})
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
}

// `--since 2026-11-29` in Tokyo is that day's midnight there, as the answers show their times.
TEST(TimeTextTest, ADateOrTimeWithoutAZoneIsLocal) {
  {
    const test::EnvGuard tokyo("TZ", "JST-9");
    ::tzset();
    EXPECT_EQ(parse_rfc3339("2026-11-29"), kNoon - 21h);
    EXPECT_EQ(parse_rfc3339("2026-11-29T21:00:00"), kNoon);
    EXPECT_EQ(parse_rfc3339("2026-11-29T12:00:00Z"), kNoon);  // a zone given is kept
  }
  ::tzset();
}

TEST(TimeTextTest, SinceTakesADurationBackOrADate) {
  EXPECT_EQ(parse_since("30d", kNoon), kNoon - 30 * 24h);
  EXPECT_EQ(parse_since("12h", kNoon), kNoon - 12h);
  EXPECT_EQ(parse_since("90m", kNoon), kNoon - 90min);
  EXPECT_EQ(parse_since("2w", kNoon), kNoon - 14 * 24h);
  EXPECT_EQ(parse_since("45s", kNoon), kNoon - 45s);
  EXPECT_EQ(parse_since("2026-11-29", kNoon), kNoon - 12h);
  EXPECT_EQ(parse_since("2024-02-29T00:00:00Z", kNoon), WallTime{} + std::chrono::seconds(1'709'164'800));
  EXPECT_EQ(parse_since("1970-01-01T00:00:00Z", kNoon), WallTime{});
  // Years the clock cannot hold came back as others (1000-01-01 as 2169), a day a month has not
  // as one of the next month.
  for (const char* bad : {"", "d", "-3d", "3y", "1000000w", "last week", "1000-01-01", "2300-01-01", "0001-01-01",
                          "9999-12-31T00:00:00Z", "1969-12-31", "2026-02-30", "2026-04-31T08:00:00Z"}) {
    try {
      parse_since(bad, kNoon);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("expected a time back from now (30d, 12h, 90m, 2w) or a date")) << bad;
    }
  }
  // A date later than now (2062 typed for 2026): a window that holds nothing, said so.
  try {
    parse_since("2062-11-01", kNoon);
    ADD_FAILURE() << "a date to come was taken";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--since \"2062-11-01\" is later than now (2026-11-29T12:00:00Z)"));
  }
}

}  // namespace
}  // namespace gpurun
