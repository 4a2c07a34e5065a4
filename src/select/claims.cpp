#include "gpurun/select/claims.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/gpu/topology.hpp"

namespace gpurun {

namespace {

// Whether `device`, as a container names a GPU, is `gpu`: its index or UUID, or the device node
// of its minor number.
bool names_gpu(const std::string& device, int index, const std::string& uuid, int minor) {
  return device == std::to_string(index) || (!uuid.empty() && device == uuid) || device_minor(device) == minor;
}

// Whether `device` names the parent GPU of MIG unit `unit` in a way that reaches the unit: the
// parent's node given with capabilities (podman's CDI MIG device) reaches only the instance those
// capabilities open; otherwise the whole parent is taken as held.
bool names_parent(const GpuContainer& container, const std::string& device, const Gpu& unit, int minor) {
  const MigPlace& mig = *unit.mig;
  if (!names_gpu(device, mig.gpu_index, mig.parent_uuid, minor)) return false;
  if (!device_minor(device) || container.mig_caps.empty()) return true;
  const auto caps = mig_cap_minors(minor, mig.gpu_instance_id, mig.compute_instance_id, sysfs_root());
  if (!caps) return true;  // the driver does not say which: all of them, as with no capabilities
  const auto has = [&](int cap) {
    return std::find(container.mig_caps.begin(), container.mig_caps.end(), cap) != container.mig_caps.end();
  };
  return has(caps->gpu_instance) && has(caps->compute_instance);
}

}  // namespace

std::vector<int> held_gpu_indices(const GpuContainer& container, const std::vector<Gpu>& gpus) {
  std::vector<int> held;
  const bool by_node = std::any_of(container.devices.begin(), container.devices.end(),
                                   [](const std::string& d) { return device_minor(d).has_value(); });
  for (const Gpu& gpu : gpus) {
    // A device node (--device /dev/nvidiaN) names the GPU of that minor number, as the driver
    // gives it; where it does not say, the index (they agree on nearly every host). Asked only
    // for a container that has one: a launch reads nothing more. A MIG instance's node is its
    // parent's.
    const int parent = gpu.mig ? gpu.mig->gpu_index : gpu.index;
    const int minor = by_node ? nvidia_device_minor(gpu, sysfs_root()).value_or(parent) : parent;
    const bool named = std::any_of(container.devices.begin(), container.devices.end(), [&](const std::string& d) {
      if (!gpu.mig) return names_gpu(d, gpu.index, gpu.uuid, minor);
      // A MIG unit's index is its place among the units, not a GPU's: a container holds it by
      // its MIG UUID, by "GPU:N", or by holding its whole parent GPU.
      return (!gpu.uuid.empty() && d == gpu.uuid) || d == fmt::format("{}:{}", parent, gpu.mig->device_index) ||
             names_parent(container, d, gpu, minor);
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
