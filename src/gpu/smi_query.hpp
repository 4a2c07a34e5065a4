#pragma once
// Reads the GPU table: from a live nvidia-smi, or from a recorded --query-gpu CSV snapshot.
#include <chrono>
#include <string>
#include <vector>

#include "gpu/gpu.hpp"
#include "util/process.hpp"

namespace gpurun {

// The two nvidia-smi invocations gpurun makes (GPUs, and the compute processes on them).
ProcessSpec gpu_query(const std::string& nvidia_smi);
ProcessSpec compute_apps_query(const std::string& nvidia_smi);

// Runs both queries at once, each killed after `timeout`. Throws Error with nvidia-smi's own
// message (it prints its errors on stdout) when either fails.
std::vector<Gpu> query_gpus(const std::string& nvidia_smi, std::chrono::milliseconds timeout);

// Reads a --query-gpu CSV snapshot from `path` ("-" for stdin). It has no process list.
std::vector<Gpu> read_gpu_snapshot(const std::string& path);

}  // namespace gpurun
