#pragma once
// Parsers for `nvidia-smi --query-gpu` and `--query-compute-apps` CSV output.
// They never crash on any input: malformed text is reported as gpurun::Error naming the line.
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/gpu/gpu.hpp"

namespace gpurun {

// The --query-gpu fields gpurun asks for, in the order a header-less CSV must use.
inline constexpr std::array<std::string_view, 7> kGpuQueryFields{
    "index", "uuid", "name", "memory.used", "memory.total", "utilization.gpu", "mig.mode.current"};

// Asked too where sysfs can place GPUs by it (an optional field: drivers that refuse it go without).
inline constexpr std::string_view kPciBusIdField = "pci.bus_id";

// Asked too when the source is to read sensors (gpurund): optional fields like the bus id.
inline constexpr std::array<std::string_view, 2> kSensorFields{"power.draw", "temperature.gpu"};

// The --query-compute-apps fields gpurun asks for, in this order.
inline constexpr std::array<std::string_view, 3> kComputeAppFields{"gpu_uuid", "pid", "used_memory"};

// What a --query-gpu answer holds besides the rows: GPUs the driver lost, and its warnings.
struct GpuTable {
  std::vector<Gpu> gpus;              // in the order printed
  std::vector<LostGpu> lost;          // "Unable to determine the device handle for GPU...: ..." lines
  std::vector<std::string> warnings;  // "WARNING: infoROM is corrupted at gpu 0000:01:00.0" lines
};

// Parses --query-gpu CSV. With a header, columns are matched by name in any order (unknown
// columns are ignored; `index`, `memory.used` and `memory.total` are required); without one,
// the columns must be `columns` in order. Units in the header or the values are accepted.
// Lost-GPU and WARNING lines may come anywhere; they are collected, not parsed as rows.
GpuTable parse_gpu_table(std::string_view input, std::span<const std::string_view> columns = kGpuQueryFields);

// parse_gpu_table's GPUs alone.
std::vector<Gpu> parse_gpu_csv(std::string_view input);

// A line nvidia-smi prints for a GPU it cannot reach, or nullopt for any other line.
std::optional<LostGpu> parse_lost_gpu_line(std::string_view line);

// A driver warning line ("WARNING: infoROM is corrupted at gpu ..."), printed before or among rows.
bool is_warning_line(std::string_view line);

// Parses --query-compute-apps CSV (gpu_uuid, pid, used_memory), with or without header and units.
std::vector<GpuProcess> parse_compute_apps_csv(std::string_view input);

// Attaches each process to the GPU with its UUID; processes on unknown GPUs are ignored.
void attach_processes(std::vector<Gpu>& gpus, const std::vector<GpuProcess>& processes);

}  // namespace gpurun
