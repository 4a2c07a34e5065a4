// Unit tests for gpurun::round_to_integer: std::llround's answers without libm.
#include "gpurun/util/rounding.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpurun {
namespace {

TEST(RoundToInteger, AgreesWithStdLlroundWhereItHasAnAnswer) {
  const double two_to_52 = 4503599627370496.0;  // from here on every double is whole
  const double products[] = {61.2 * 1000.0, 0.001 * 1000.0};
  const double values[] = {0.0,          0.4,
                           0.5,          0.6,
                           1.5,          2.5,
                           0.49,         0.49999999999999994,
                           1000000000.5, 9.2e18,
                           123456.789,   products[0],
                           products[1],  two_to_52 - 0.5,
                           two_to_52,    two_to_52 + 1};
  for (double x : values) {  // and each negated: halves go away from zero both ways
    EXPECT_EQ(round_to_integer(x), std::llround(x)) << "x = " << x;
    EXPECT_EQ(round_to_integer(-x), std::llround(-x)) << "x = " << -x;
  }
}

TEST(RoundToInteger, GivesTheNearestEndBeyondRangeAndZeroForNaN) {
  constexpr auto most = std::numeric_limits<long long>::max();
  constexpr auto least = std::numeric_limits<long long>::min();
  EXPECT_EQ(round_to_integer(1e19), most);
  EXPECT_EQ(round_to_integer(std::numeric_limits<double>::infinity()), most);
  EXPECT_EQ(round_to_integer(-1e300), least);
  EXPECT_EQ(round_to_integer(-9223372036854775808.0), least);
  EXPECT_EQ(round_to_integer(std::numeric_limits<double>::quiet_NaN()), 0);
}

static_assert(round_to_integer(2.5) == 3 && round_to_integer(-2.5) == -3, "usable at compile time");

}  // namespace
}  // namespace gpurun
