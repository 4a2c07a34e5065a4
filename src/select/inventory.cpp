#include "select/inventory.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>

#include "gpu/topology.hpp"
#include "select/claims.hpp"
#include "util/error.hpp"
#include "locks/reservation.hpp"

namespace gpurun {

Thresholds thresholds_from(const Options& options) { return {options.max_util.value, options.max_memory}; }

std::chrono::milliseconds smi_timeout(const Options& options) { return options.smi_timeout; }

GpuSourceSpec gpu_source_spec(const Options& options) {
  return {options.nvidia_smi, options.from_csv, options.from_apps_csv};
}

namespace {

// Where each GPU sits on this host (sysfs), and the links the source knows; not for a snapshot,
// which may come from another machine.
void place_gpus(const Options& options, Snapshot& snapshot, Inventory& inventory) {
  inventory.links = snapshot.links;
  if (options.from_csv) return;
  const std::string root = sysfs_root();
  inventory.topology_readable = pci_sysfs_readable(root);
  if (inventory.topology_readable) locate_gpus(snapshot.gpus, root);
}

}  // namespace

Inventory take_inventory(const Options& options, const std::string& lock_dir, GpuSource& source) {
  const Thresholds thresholds = thresholds_from(options);
  const auto timeout = smi_timeout(options);

  Inventory inventory;
  // The engine is asked while nvidia-smi works, so that a launch is not slower for it.
  std::future<std::vector<GpuContainer>> containers;
  if (!options.from_csv && !options.ignore_containers)
    containers = std::async(std::launch::async, list_gpu_containers, options.docker, timeout);

  Snapshot snapshot = source.read(timeout);  // GPUs in index order
  place_gpus(options, snapshot, inventory);
  const std::vector<Gpu>& gpus = snapshot.gpus;
  inventory.lost = snapshot.lost;
  inventory.warnings = snapshot.warnings;
  inventory.processes_known = snapshot.processes_known;

  ExternalClaims claims;
  if (containers.valid()) {
    try {
      inventory.containers = containers.get();
      add_claims(claims, container_claims(inventory.containers, gpus));
    } catch (const std::exception& e) {
      spdlog::warn("cannot ask the Docker engine which containers hold GPUs, going by nvidia-smi alone: {}", e.what());
    }
  }
  if (!lock_dir.empty()) add_claims(claims, reserved_gpus(lock_dir, gpus));
  std::vector<bool> withheld(gpus.size(), false);  // by the site policy's allowed_gpus
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int index = gpus[i].index;
    withheld[i] = !gpu_allowed(options.policy, index);
    if (withheld[i]) claims[index].insert(claims[index].begin(), gpu_not_allowed_reason(options.policy));
  }
  inventory.assessed = assess(snapshot, thresholds, claims);  // in the order of `gpus`
  for (std::size_t i = 0; i < gpus.size(); ++i) inventory.assessed[i].withheld = withheld[i];
  return inventory;
}

std::vector<GpuLink> gpu_links(const Options& options, const Inventory& inventory) {
  if (!inventory.links.empty() || !inventory.topology_readable) return inventory.links;
  return read_gpu_links(options.nvidia_smi, smi_timeout(options));
}

PlacementHints placement_hints(const Options& options, const Inventory& inventory) {
  PlacementHints hints;
  if (inventory.links.empty() && !inventory.topology_readable) return hints;
  hints.links = [&options, &inventory] { return gpu_links(options, inventory); };
  return hints;
}

void warn_once(const std::vector<std::string>& warnings, std::set<std::string>& told) {
  for (const std::string& warning : warnings)
    if (told.insert(warning).second) spdlog::warn("{}", warning);
}

std::string unchecked_processes_warning(const Inventory& inventory) {
  if (inventory.processes_known) return {};
  return "processes were not checked: the snapshot has no process list, so a GPU running a job may look free "
         "(record `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv` with it and pass "
         "--from-apps-csv FILE)";
}

std::string lock_dir_for_reading(const Options& options) {
  try {
    return prepare_lock_dir(options.lock_dir);
  } catch (const Error& e) {
    spdlog::warn("{}; reservations of other launches are not shown", e.what());
    return {};
  }
}

}  // namespace gpurun
