#pragma once
// The machine's GPUs as the verbs see them: read (nvidia-smi or a snapshot), joined with what
// nvidia-smi cannot show (reservations of other launches, containers holding GPUs), assessed.
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpurun/config/options.hpp"
#include "gpurun/engine/container_engine.hpp"
#include "gpurun/gpu/gpu_source.hpp"
#include "gpurun/locks/reservation.hpp"
#include "gpurun/select/placement.hpp"
#include "gpurun/select/selection.hpp"

namespace gpurun {

Thresholds thresholds_from(const Options& options);

// --smi-timeout: the same bound serves every child gpurun asks.
std::chrono::milliseconds smi_timeout(const Options& options);

// Whether the container engine was asked which containers hold GPUs, and what came of it.
struct EngineAnswer {
  std::string engine;  // "docker" or "podman"
  std::string error;   // why it could not say; empty when it answered
  int exit_code = 0;   // the error's: 127 (126) where its client could not be run at all
};

struct Inventory {
  std::vector<GpuContainer> containers;  // running containers that hold GPUs
  std::vector<GpuAssessment> assessed;   // one per GPU, in index order
  std::vector<LostGpu> lost;             // GPUs the driver named but could not reach
  std::vector<std::string> warnings;     // the GPU source's (a lost GPU, a corrupted infoROM)
  bool processes_known = true;           // false: a snapshot without a process list
  std::string source;                    // which GPU source answered: "nvml", "nvidia-smi", "snapshot FILE"
  std::vector<GpuAssessment> mig_units;  // the MIG instances as units (mig_units.hpp), assessed
  bool topology_readable = false;        // sysfs places GPUs on this host (never for a snapshot)
  std::vector<GpuLink> links;            // the links the GPU source knows; empty: ask gpu_links()
  std::optional<EngineAnswer> engine;    // nullopt: not asked (a snapshot, --ignore-containers)
};

// The GPU source the options name: the --from-csv snapshot (with --from-apps-csv), or nvidia-smi.
GpuSourceSpec gpu_source_spec(const Options& options);

// The container engine the options name (engine, docker, podman).
EngineSpec engine_spec(const Options& options);

// What every verb that looks at the GPUs opens first: the GPU source and the container engine the
// options name (take_inventory decides whether the engine is asked).
struct Machine {
  std::unique_ptr<GpuSource> source;
  std::unique_ptr<ContainerEngine> engine;
};
Machine open_machine(const Options& options);

// How an engine is named in a sentence: "Docker", "Podman".
std::string engine_title(const std::string& engine);

// Reads the GPUs from `source` and, at the same time, asks `engine` which containers hold GPUs
// (not when it is null, for a --from-csv snapshot or with container awareness off; a failure
// there is a warning, and Inventory::engine says it). With a `lock_dir`, GPUs other launches have reserved count as
// busy. Warnings are returned, not logged.
Inventory take_inventory(const Options& options, const std::string& lock_dir, GpuSource& source,
                         ContainerEngine* engine);

// take_inventory's second half, for a snapshot and containers read already (the gpurun service's
// sample): the holders joined and every GPU assessed.
Inventory assess_inventory(const Options& options, const std::string& lock_dir, Snapshot snapshot,
                           std::vector<GpuContainer> containers);

// What the options ask for: `options.gpus` GPUs, or with --mig that many MIG instances. Throws
// Error (exit 125) for --mig when the source is not NVML (MIG instances need it). `launch`: the
// advice on too few offers --wait as a flag (pick's, a launch with it).
PickResult pick_units(const Options& options, const Inventory& inventory, bool launch = true);

// The links between the GPUs: the source's, else (where sysfs shows this is the GPUs' host)
// `nvidia-smi topo -m`'s; empty when unknown.
std::vector<GpuLink> gpu_links(const Options& options, const Inventory& inventory);

// What pick() may ask about the topology: the links, asked only when needed. Refers to
// `options` and `inventory`, which must outlive it.
PlacementHints placement_hints(const Options& options, const Inventory& inventory);

// Who runs each GPU process, from this host's /proc: in a rootless container, the engine's user
// (not the subordinate uid it runs as). Only for the views that show users (status): a launch
// never reads /proc for it. Nothing for a --from-csv snapshot.
void name_process_users(const Options& options, Inventory& inventory);

// Logs the warnings not in `told` yet, and adds them there: a wait loop says each once.
void warn_once(const std::vector<std::string>& warnings, std::set<std::string>& told);

// The warning for a pick from a snapshot without a process list, or "" when processes were read.
std::string unchecked_processes_warning(const Inventory& inventory);

// Where the options put the reservations (lock_dir, lock_group).
LockDirSpec lock_dir_spec(const Options& options);

// The lock directory, for looking at reservations only: empty, with a warning, when unusable.
std::string lock_dir_for_reading(const Options& options);

}  // namespace gpurun
