#pragma once
// The machine's GPUs as the verbs see them: read (nvidia-smi or a snapshot), joined with what
// nvidia-smi cannot show (reservations of other launches, containers holding GPUs), assessed.
#include <chrono>
#include <string>
#include <vector>

#include "config/options.hpp"
#include "engine/container_engine.hpp"
#include "select/selection.hpp"

namespace gpurun {

Thresholds thresholds_from(const Options& options);

// --smi-timeout as a duration, checked (0 < s <= 3600); the same bound serves every child gpurun asks.
std::chrono::milliseconds smi_timeout(const Options& options);

struct Inventory {
  std::vector<GpuContainer> containers;   // running containers that hold GPUs
  std::vector<GpuAssessment> assessed;    // one per GPU, in index order
};

// The GPU table the options name (nvidia-smi, or the --from-csv snapshot), in index order.
std::vector<Gpu> read_gpus(const Options& options, std::chrono::milliseconds timeout);

// Reads the GPU table the options name and, at the same time, asks `engine` which containers
// hold GPUs (not when it is null, for a --from-csv snapshot or with container awareness off; a
// failure there is a warning). With a `lock_dir`, GPUs other launches have reserved count as busy.
Inventory take_inventory(const Options& options, const std::string& lock_dir, ContainerEngine* engine);

// The lock directory, for looking at reservations only: empty, with a warning, when unusable.
std::string lock_dir_for_reading(const Options& options);

}  // namespace gpurun
