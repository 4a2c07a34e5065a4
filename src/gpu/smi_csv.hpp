#pragma once
// Parsers for `nvidia-smi --query-gpu` and `--query-compute-apps` CSV output.
// They never crash on any input: malformed text is reported as gpurun::Error naming the line.
#include <array>
#include <string_view>
#include <vector>

#include "gpu/gpu.hpp"

namespace gpurun {

// The --query-gpu fields gpurun asks for, in the order a header-less CSV must use.
inline constexpr std::array<std::string_view, 7> kGpuQueryFields{
    "index", "uuid", "name", "memory.used", "memory.total", "utilization.gpu", "mig.mode.current"};

// The --query-compute-apps fields gpurun asks for, in this order.
inline constexpr std::array<std::string_view, 3> kComputeAppFields{"gpu_uuid", "pid", "used_memory"};

// Parses --query-gpu CSV. With a header, columns are matched by name in any order (unknown
// columns are ignored; `index`, `memory.used` and `memory.total` are required); without one,
// the columns must be kGpuQueryFields in order. Units in the header or the values are accepted.
std::vector<Gpu> parse_gpu_csv(std::string_view input);

// Parses --query-compute-apps CSV (gpu_uuid, pid, used_memory), with or without header and units.
std::vector<GpuProcess> parse_compute_apps_csv(std::string_view input);

// Attaches each process to the GPU with its UUID; processes on unknown GPUs are ignored.
void attach_processes(std::vector<Gpu>& gpus, const std::vector<GpuProcess>& processes);

}  // namespace gpurun
