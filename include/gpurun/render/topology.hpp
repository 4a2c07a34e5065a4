#pragma once
// `gpurun status --topology`: the links between the GPUs, as a matrix, with each GPU's NUMA
// node and local CPUs.
#include <string>
#include <vector>

#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/select/selection.hpp"

namespace gpurun {

// One row and one column per GPU ("X" on the diagonal, "?" where no link is known), then NUMA
// and CPUS ("-" where unknown); a closing line says when no link is known at all.
std::string format_topology(const std::vector<GpuAssessment>& gpus, const std::vector<GpuLink>& links);

}  // namespace gpurun
