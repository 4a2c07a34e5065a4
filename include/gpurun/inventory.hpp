#pragma once
// The machine's GPUs as the verbs see them: read (nvidia-smi or a snapshot) and assessed.
#include <vector>

#include "gpurun/options.hpp"
#include "gpurun/selection.hpp"

namespace gpurun {

Thresholds thresholds_from(const Options& options);

// Reads the GPU table the options name and assesses every GPU, in index order.
std::vector<GpuAssessment> assess_machine(const Options& options);

}  // namespace gpurun
