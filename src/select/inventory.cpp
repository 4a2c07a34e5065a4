#include "gpurun/select/inventory.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>

#include "gpurun/engine/gpu_process_owner.hpp"
#include "gpurun/gpu/topology.hpp"
#include "gpurun/locks/reservation.hpp"
#include "gpurun/select/claims.hpp"
#include "gpurun/select/mig_units.hpp"
#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

// The snapshot's MIG instances as units, assessed as GPUs are: free when no process runs on it
// and its memory is below the limit, and not reserved or held by a container (by MIG UUID).
std::vector<GpuAssessment> assess_mig_units(const Options& options, const Snapshot& snapshot,
                                            const std::vector<GpuContainer>& containers, const std::string& lock_dir) {
  const std::vector<Gpu> units = mig_units(snapshot);
  if (units.empty()) return {};
  ExternalClaims claims = container_claims(containers, units);
  if (!lock_dir.empty()) add_claims(claims, reserved_gpus(lock_dir, units));
  for (const Gpu& unit : units)
    if (!gpu_allowed(options.policy, unit.mig->gpu_index))
      claims[unit.index].insert(claims[unit.index].begin(),
                                {.reason = gpu_not_allowed_reason(options.policy), .holder = {}});
  std::vector<GpuAssessment> assessed = assess(units, thresholds_from(options), claims);
  for (GpuAssessment& a : assessed) {
    a.withheld = !gpu_allowed(options.policy, a.gpu.mig->gpu_index);
    for (std::string& note : a.notes)
      if (note.starts_with("utilization unknown")) note = kMigUtilizationNote;
  }
  return assessed;
}

}  // namespace

Thresholds thresholds_from(const Options& options) { return {options.max_util.value, options.max_memory}; }

std::chrono::milliseconds smi_timeout(const Options& options) { return options.smi_timeout; }

GpuSourceSpec gpu_source_spec(const Options& options) {
  return {options.nvidia_smi, options.from_csv, options.from_apps_csv, options.gpu_source, options.nvml_library};
}

EngineSpec engine_spec(const Options& options) { return {options.engine, options.docker, options.podman}; }

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

// Which containers hold GPUs, or why the engine could not say (logged by the caller's thread).
struct Holders {
  std::vector<GpuContainer> containers;
  std::string error;
  int exit_code = 0;
};

Holders ask_holders(ContainerEngine& engine, std::chrono::milliseconds timeout) {
  try {
    return {engine.gpu_holders(timeout, Listing::running), {}};
  } catch (const Error& e) {
    return {{}, e.what(), e.exit_code()};
  } catch (const std::exception& e) {
    return {{}, e.what(), exit_code::failure};
  }
}

}  // namespace

std::string engine_title(const std::string& engine) { return engine == "podman" ? "Podman" : "Docker"; }

Inventory take_inventory(const Options& options, const std::string& lock_dir, GpuSource& source,
                         ContainerEngine* engine) {
  const auto timeout = smi_timeout(options);
  const bool ask_engine = engine != nullptr && !options.from_csv && !options.ignore_containers;
  // The engine is asked while the GPUs are read, so that a launch is not slower for it: here,
  // while nvidia-smi's processes work (as a floor program would, with no thread to start);
  // on a thread of its own while an in-process source (NVML) reads on this one.
  Snapshot snapshot;
  Holders holders;
  if (ask_engine && source.works_in_other_processes()) {
    engine->ask_gpu_holders_ahead(timeout, Listing::running);  // the engine lists while nvidia-smi starts
    std::function<Snapshot()> gpus = source.begin_read(timeout);
    holders = ask_holders(*engine, timeout);
    snapshot = gpus();  // GPUs in index order
  } else {
    // Under sudo, one after the other: the engine's client raises to root for its socket
    // (AsRoot), which changes every thread's ids, this one's reading the GPUs among them.
    std::future<Holders> asked;
    if (ask_engine)
      asked = std::async(options.caller ? std::launch::deferred : std::launch::async,
                         [engine, timeout] { return ask_holders(*engine, timeout); });
    snapshot = source.read(timeout);
    if (asked.valid()) holders = asked.get();
  }
  Inventory inventory = assess_inventory(options, lock_dir, std::move(snapshot), std::move(holders.containers));
  if (ask_engine)
    inventory.engine = EngineAnswer{.engine = engine->name(), .error = holders.error, .exit_code = holders.exit_code};
  if (!holders.error.empty())
    inventory.warnings.push_back(
        fmt::format("cannot ask the {} engine which containers hold GPUs, going by the GPUs' processes alone: {}",
                    engine_title(engine->name()), holders.error));
  return inventory;
}

Inventory assess_inventory(const Options& options, const std::string& lock_dir, Snapshot snapshot,
                           std::vector<GpuContainer> containers) {
  const Thresholds thresholds = thresholds_from(options);
  Inventory inventory;
  place_gpus(options, snapshot, inventory);
  const std::vector<Gpu>& gpus = snapshot.gpus;
  inventory.lost = snapshot.lost;
  inventory.warnings = snapshot.warnings;
  inventory.processes_known = snapshot.processes_known;
  inventory.source = snapshot.source;
  inventory.containers = std::move(containers);

  ExternalClaims claims;
  // The GPU processes' own containers: those of engines not asked (rootless ones, other users').
  // Not for a snapshot, whose PIDs are of another moment or machine.
  if (!options.from_csv && !options.ignore_containers)
    add_process_holders(inventory.containers, gpus, host_proc_root());
  add_claims(claims, container_claims(inventory.containers, gpus));
  if (!lock_dir.empty()) add_claims(claims, reserved_gpus(lock_dir, gpus));
  std::vector<bool> withheld(gpus.size(), false);  // by the site policy's allowed_gpus
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int index = gpus[i].index;
    withheld[i] = !gpu_allowed(options.policy, index);
    if (withheld[i])
      claims[index].insert(claims[index].begin(), {.reason = gpu_not_allowed_reason(options.policy), .holder = {}});
  }
  inventory.assessed = assess(snapshot, thresholds, claims);  // in the order of `gpus`
  for (std::size_t i = 0; i < gpus.size(); ++i) inventory.assessed[i].withheld = withheld[i];
  inventory.mig_units = assess_mig_units(options, snapshot, inventory.containers, lock_dir);
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

PickResult pick_units(const Options& options, const Inventory& inventory, bool launch) {
  if (!options.mig)
    return pick(inventory.assessed, options.gpus,
                Sharing{.any_busy = options.allow_busy,
                        .min_free_memory_mib = options.min_free_memory_mib,
                        .allowed = options.policy.allow_sharing,
                        .launch = launch},
                placement_hints(options, inventory));
  if (inventory.source != "nvml")
    throw Error(
        fmt::format("--mig needs NVML as the GPU source, but {} answered: MIG instances and their processes "
                    "are read through NVML. Use --gpu-source nvml (or auto where the driver's "
                    "libnvidia-ml.so.1 loads), or leave out --mig",
                    inventory.source));
  return pick_mig(inventory.mig_units, options.gpus, *options.mig, options.mig_allow_larger, options.allow_busy);
}

void name_process_users(const Options& options, Inventory& inventory) {
  if (options.from_csv) return;  // a snapshot's PIDs are another moment's or machine's
  const std::string proc_root = host_proc_root();
  for (std::vector<GpuAssessment>* list : {&inventory.assessed, &inventory.mig_units})
    for (GpuAssessment& a : *list)
      for (GpuProcess& p : a.gpu.processes)
        if (const auto owner = process_owner(p.pid, proc_root)) p.user = owner->user;
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

Machine open_machine(const Options& options) {
  return {make_gpu_source(gpu_source_spec(options)), make_container_engine(engine_spec(options))};
}

LockDirSpec lock_dir_spec(const Options& options) {
  return {.dir = options.lock_dir, .group = options.lock_group, .shared = options.lock_dir_shared};
}

std::string lock_dir_for_reading(const Options& options) {
  try {
    std::string dir = prepare_lock_dir(lock_dir_spec(options), LockDirUse::read);
    spdlog::debug("reservations: {}", dir);
    return dir;
  } catch (const Error& e) {
    spdlog::warn("{}; reservations of other launches are not shown", e.what());
    return {};
  }
}

}  // namespace gpurun
