#include "gpurun/gpu/utilization_stats.hpp"
#include "gpurun/util/rounding.hpp"

#include <algorithm>
#include <cmath>

namespace gpurun {

void UtilizationStats::add(std::optional<double> utilization_percent, std::optional<double> memory_used_mib) {
  if (memory_used_mib) memory_peak_ = std::max(memory_peak_.value_or(0.0), *memory_used_mib);
  if (!utilization_percent) {
    ++missing_;
    return;
  }
  const double value = std::clamp(*utilization_percent, 0.0, 100.0);
  ++histogram_[static_cast<std::size_t>(round_to_integer(value))];
  ++samples_;
  sum_ += value;
}

std::optional<double> UtilizationStats::mean() const {
  if (samples_ == 0) return std::nullopt;
  return sum_ / static_cast<double>(samples_);
}

std::optional<int> UtilizationStats::p95() const {
  if (samples_ == 0) return std::nullopt;
  // The smallest value with at least 95 % of the samples at or below it.
  const auto rank = static_cast<std::uint64_t>(std::ceil(0.95 * static_cast<double>(samples_)));
  std::uint64_t seen = 0;
  for (std::size_t value = 0; value < histogram_.size(); ++value) {
    seen += histogram_[value];
    if (seen >= rank) return static_cast<int>(value);
  }
  return 100;
}

std::optional<double> UtilizationStats::share_under_50() const {
  if (samples_ == 0) return std::nullopt;
  std::uint64_t under = 0;
  for (std::size_t value = 0; value < 50; ++value) under += histogram_[value];
  return static_cast<double>(under) / static_cast<double>(samples_);
}

}  // namespace gpurun
