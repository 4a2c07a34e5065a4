#include "gpurun/inventory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "gpurun/error.hpp"
#include "gpurun/smi_query.hpp"

namespace gpurun {

Thresholds thresholds_from(const Options& options) {
  return {parse_utilization_limit(options.max_util), parse_memory_limit(options.max_memory)};
}

std::vector<GpuAssessment> assess_machine(const Options& options) {
  const Thresholds thresholds = thresholds_from(options);
  if (!(options.smi_timeout_s > 0 && options.smi_timeout_s <= 3600))
    throw Error(fmt::format("--smi-timeout {:g} must be between 0 and 3600 seconds", options.smi_timeout_s));
  const auto timeout = std::chrono::milliseconds(std::llround(options.smi_timeout_s * 1000.0));

  std::vector<Gpu> gpus = options.from_csv ? read_gpu_snapshot(*options.from_csv) : query_gpus(options.nvidia_smi, timeout);
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return assess(gpus, thresholds);
}

}  // namespace gpurun
