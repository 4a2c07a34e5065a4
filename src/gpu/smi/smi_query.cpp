#include "smi/smi_query.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpurun {

ProcessSpec gpu_query(const std::string& nvidia_smi, std::span<const std::string_view> fields) {
  return {{nvidia_smi, fmt::format("--query-gpu={}", fmt::join(fields, ",")), "--format=csv,noheader,nounits"}, {}};
}

ProcessSpec compute_apps_query(const std::string& nvidia_smi, bool stamped) {
  return {{nvidia_smi,
           fmt::format("--query-compute-apps={}{}", stamped ? "timestamp," : "", fmt::join(kComputeAppFields, ",")),
           "--format=csv,noheader,nounits"},
          {}};
}

}  // namespace gpurun
