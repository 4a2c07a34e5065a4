#include "gpurun/select/claims.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gpurun {

std::vector<int> held_gpu_indices(const GpuContainer& container, const std::vector<Gpu>& gpus) {
  std::vector<int> held;
  for (const Gpu& gpu : gpus) {
    const std::string index = std::to_string(gpu.index);
    const bool named = std::any_of(container.devices.begin(), container.devices.end(), [&](const std::string& d) {
      // A device node's minor number is taken for the index (see device_minor).
      return d == index || (!gpu.uuid.empty() && d == gpu.uuid) || device_minor(d) == gpu.index;
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
