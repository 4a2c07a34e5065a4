#include "gpurun/select/claims.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/gpu/topology.hpp"

namespace gpurun {

std::vector<int> held_gpu_indices(const GpuContainer& container, const std::vector<Gpu>& gpus) {
  std::vector<int> held;
  const bool by_node = std::any_of(container.devices.begin(), container.devices.end(),
                                   [](const std::string& d) { return device_minor(d).has_value(); });
  for (const Gpu& gpu : gpus) {
    const std::string index = std::to_string(gpu.index);
    // A device node (--device /dev/nvidiaN) names the GPU of that minor number, as the driver
    // gives it; where it does not say, the index (they agree on nearly every host). Asked only
    // for a container that has one: a launch reads nothing more.
    const int minor = by_node ? nvidia_device_minor(gpu, sysfs_root()).value_or(gpu.index) : gpu.index;
    const bool named = std::any_of(container.devices.begin(), container.devices.end(), [&](const std::string& d) {
      return d == index || (!gpu.uuid.empty() && d == gpu.uuid) || device_minor(d) == minor;
    });
    if (container.all_gpus || named) held.push_back(gpu.index);
  }
  return held;
}

ExternalClaims container_claims(const std::vector<GpuContainer>& containers, const std::vector<Gpu>& gpus) {
  ExternalClaims claims;
  for (const GpuContainer& c : containers) {
    const std::string who = c.user.empty() ? c.image : fmt::format("{}, {}", c.user, c.image);
    for (int index : held_gpu_indices(c, gpus))
      claims[index].push_back({.reason = fmt::format("in use by container {} ({})", c.name, who),
                               .holder = Holder{.kind = Holder::Kind::container, .user = c.user, .name = c.name}});
  }
  return claims;
}

void add_claims(ExternalClaims& claims, const ExternalClaims& more) {
  for (const auto& [index, reasons] : more) claims[index].insert(claims[index].end(), reasons.begin(), reasons.end());
}

}  // namespace gpurun
