#pragma once
// One look at the machine as the run model wants it (gpurun/history/run_tracker.hpp): each GPU's
// utilization and every holder of a GPU, containers (of any engine, the engine's answer completed
// from the GPU processes' cgroups) and, where no container holds it, each GPU process by itself.
#include <string>
#include <vector>

#include "gpurun/engine/containers.hpp"
#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

// `containers`: the engine's answer (empty where it cannot be asked); `proc_root`: where /proc is
// read (a fake tree in tests).
MachineSample machine_sample(WallTime when, const Snapshot& snapshot, std::vector<GpuContainer> containers,
                             const std::string& proc_root);

}  // namespace gpurun
