#pragma once
// Streaming statistics of one GPU's samples: O(1) memory however long the job runs. Utilization
// is a whole percentage, so a 101-bucket histogram gives the exact p95 without keeping samples.
#include <array>
#include <cstdint>
#include <optional>

namespace gpurun {

class UtilizationStats {
 public:
  // One sample; a missing value ([N/A]) is counted apart and left out of the figures.
  void add(std::optional<double> utilization_percent, std::optional<double> memory_used_mib);

  std::uint64_t samples() const { return samples_; }
  std::uint64_t missing() const { return missing_; }
  std::optional<double> mean() const;
  std::optional<int> p95() const;                // nearest rank
  std::optional<double> share_under_50() const;  // 0..1
  std::optional<double> memory_peak_mib() const { return memory_peak_; }

 private:
  std::array<std::uint64_t, 101> histogram_{};
  std::uint64_t samples_ = 0;
  std::uint64_t missing_ = 0;
  double sum_ = 0;
  std::optional<double> memory_peak_;
};

}  // namespace gpurun
