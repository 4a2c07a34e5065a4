#pragma once
// A run as JSON, the form `gpurun history --json` prints and the service's socket answers in:
// id, name, user, container (null for a process), image, command, gpus, start, end (null while
// it runs), gpu_seconds, busy_gpu_seconds, efficiency, idle_seconds, max_memory_mib, ended_by.
#include <nlohmann/json.hpp>
#include <vector>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

nlohmann::ordered_json run_json(const RunRecord& run);

// The run `run_json` wrote. Throws Error when `json` is not one (a service of another version).
RunRecord run_from_json(const nlohmann::ordered_json& json);
std::vector<RunRecord> runs_from_json(const nlohmann::ordered_json& json);

}  // namespace gpurun
