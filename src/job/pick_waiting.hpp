#pragma once
// Picking GPUs for a launch (src/job/launch.cpp): under the selection lock, and with --wait in the
// lock directory's queue until enough are free, Ctrl-C ending the wait cleanly.
#include <optional>
#include <string>
#include <vector>

#include "gpurun/config/options.hpp"
#include "gpurun/engine/container_engine.hpp"
#include "gpurun/gpu/gpu_source.hpp"
#include "gpurun/locks/reservation.hpp"
#include "gpurun/select/inventory.hpp"

namespace gpurun {

// Picks the GPUs under the selection lock (held on return, for a real launch); with --wait,
// queues and retries every second until enough are free. Returns the exit status to end with
// at once (128+N when a signal N ended the wait; 0 for a dry run that would wait), or nullopt
// when `chosen` holds the GPUs.
std::optional<int> pick_gpus(const Options& options, const std::string& lock_dir, GpuSource& source,
                             ContainerEngine& engine, FileLock& selection, Inventory& inventory,
                             std::vector<GpuAssessment>& chosen);

}  // namespace gpurun
