#pragma once
// The nearest integer without libm: gpurun loads libc alone, and loading libm as well cost every
// launch about 0.08 ms for the four functions gpurun took from it (docs/performance.md).
#include <limits>

namespace gpurun {

// std::llround's answer (halves away from zero) where it has one; NaN gives 0, and a value beyond
// long long's range the nearest end of it (where std::llround's answer is unspecified).
constexpr long long round_to_integer(double x) {
  constexpr double kBeyond = 9223372036854775808.0;  // 2^63
  if (x != x) return 0;
  if (x <= -kBeyond) return std::numeric_limits<long long>::min();
  if (x >= kBeyond) return std::numeric_limits<long long>::max();
  const auto whole = static_cast<long long>(x);        // toward zero
  const double rest = x - static_cast<double>(whole);  // exact: |x| < 2^52 or x is whole
  if (rest >= 0.5) return whole + 1;
  if (rest <= -0.5) return whole - 1;
  return whole;
}

}  // namespace gpurun
