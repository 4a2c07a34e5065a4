#pragma once
// Decides which GPUs are free, scores them and picks the best N.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu.hpp"
#include "util/error.hpp"
#include "util/units.hpp"

namespace gpurun {

struct Thresholds {
  double max_utilization_percent = 10.0;
  MemoryLimit max_memory;
};

struct GpuAssessment {
  Gpu gpu;
  bool free = false;
  double score = 0.0;                // 0 (idle) .. 100 (full); lower is better
  std::vector<std::string> reasons;  // why it is busy; empty when free
  std::vector<std::string> notes;    // facts worth showing that do not make it busy
  bool withheld = false;             // the site policy forbids handing it out, even with allow_busy
};

// The ranking score: the mean of memory used (% of total) and utilization (%). With one of them
// unknown, the other alone; with both unknown, 100 (ranked last).
double score(const Gpu& gpu);

// Assesses every GPU, in the order given.
std::vector<GpuAssessment> assess(const std::vector<Gpu>& gpus, const Thresholds& thresholds,
                                  const ExternalClaims& claims = {});

// The `count` lowest-scoring free GPUs (all GPUs when allow_busy), ties broken by index, returned
// in ascending index order. Throws Error (exit 125) listing every GPU and why it is not free
// when too few qualify.
std::vector<GpuAssessment> pick(const std::vector<GpuAssessment>& assessed, int count, bool allow_busy);

// pick()'s error when fewer GPUs qualify than asked for (exit 125).
class NotEnoughGpus : public Error {
 public:
  NotEnoughGpus(const std::string& message, std::size_t available) : Error(message), available_(available) {}
  std::size_t available() const { return available_; }

 private:
  std::size_t available_;
};

// All GPUs best first: free before busy, then by score, then index.
std::vector<GpuAssessment> ranked(std::vector<GpuAssessment> assessed);

}  // namespace gpurun
