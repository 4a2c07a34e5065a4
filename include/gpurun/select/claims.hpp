#pragma once
// What nvidia-smi cannot show: containers that hold GPUs, as claims that make those GPUs busy.
#include <vector>

#include "gpurun/engine/containers.hpp"
#include "gpurun/gpu/gpu.hpp"

namespace gpurun {

// Which of `gpus` each container holds.
std::vector<int> held_gpu_indices(const GpuContainer& container, const std::vector<Gpu>& gpus);

// "in use by container alice_gpu2_1a2b3c4d (alice, me/torch:24.05)" for each GPU a container holds.
ExternalClaims container_claims(const std::vector<GpuContainer>& containers, const std::vector<Gpu>& gpus);

// Merges `more` into `claims`.
void add_claims(ExternalClaims& claims, const ExternalClaims& more);

}  // namespace gpurun
