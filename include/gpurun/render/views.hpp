#pragma once
// How GPUs are shown to people (a table) and to programs (JSON).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/engine/containers.hpp"
#include "gpurun/select/claims.hpp"
#include "gpurun/select/selection.hpp"

namespace gpurun {

// A value for JSON output: null when unknown, never a made-up zero.
template <typename T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

// One row per GPU, in the order given, under a header line; ends with a newline.
std::string format_gpu_table(const std::vector<GpuAssessment>& gpus);

// Lines after the GPU table naming each GPU the driver could not reach; "" when none.
std::string format_lost_gpus(const std::vector<LostGpu>& lost);

// "processes" is null when no process list was read.
nlohmann::ordered_json gpu_json(const GpuAssessment& a);
// {"gpus": [gpu_json...]}, "lost": [{"pci_bus_id", "error"}...] when a GPU was lost, and
// "source" (which GPU source answered) when given.
nlohmann::ordered_json status_json(const std::vector<GpuAssessment>& gpus, const std::vector<LostGpu>& lost = {},
                                   const std::string& source = "");
// status_json with "mig_instances" on each MIG GPU: [{uuid, profile, gpu_instance_id,
// compute_instance_id, memory..., utilization_percent: null, processes, free, reasons}].
nlohmann::ordered_json status_json(const std::vector<GpuAssessment>& gpus, const std::vector<LostGpu>& lost,
                                   const std::string& source, const std::vector<GpuAssessment>& mig_units);
// {"indices": [2, 5], "gpus": [gpu_json...]}
nlohmann::ordered_json pick_json(const std::vector<GpuAssessment>& chosen);

// The live view of `status --watch`: utilization bars, memory, processes and who holds each GPU
// (the containers holding it, the users and commands of its processes), fitted to `width` columns.
std::string format_watch_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuContainer>& containers,
                               std::size_t width = 80);

// "2,5"
std::string index_list(const std::vector<GpuAssessment>& gpus);

}  // namespace gpurun
