#pragma once
// Whether this machine has an NVIDIA CDI spec where docker looks for them (issue 25): a docker
// that resolves `--device nvidia.com/gpu=UUID` needs one, so without one `gpu_request: auto`
// takes --gpus with no question to the engine (its /info costs ~8 ms, `docker info` ~30 ms).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/engine/container_engine.hpp"

namespace gpurun {

// Docker's default CDI spec directories, under $GPURUN_SYSFS_ROOT as /proc and /sys are (tests).
std::vector<std::string> default_cdi_spec_dirs();

// The first spec file (*.json, *.yaml, *.yml) in `dirs` that names the kind nvidia.com/gpu;
// nullopt where none does. A few stats and one small read.
std::optional<std::string> nvidia_cdi_spec(const std::vector<std::string>& dirs);

// What `gpu_request: auto` needs to know of `engine`: podman's own answer; docker's where an
// NVIDIA spec exists in default_cdi_spec_dirs(), else "no" without asking it.
CdiSupport launch_cdi_support(ContainerEngine& engine, std::chrono::milliseconds timeout);

}  // namespace gpurun
