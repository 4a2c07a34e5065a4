#pragma once
// A run as JSON, the form `gpurun history --json` prints and the service's socket answers in:
// id, name, user, container (null for a process), image, command, gpus, start, end (null while
// it runs), gpu_seconds, busy_gpu_seconds, efficiency, idle_seconds, max_memory_mib, ended_by.
#include <nlohmann/json.hpp>
#include <vector>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

// `for_table`: without container, image and command, which the history table does not show and
// which are most of the bytes (a year of runs is megabytes of JSON to parse otherwise).
nlohmann::ordered_json run_json(const RunRecord& run, bool for_table = false);

// The run `run_json` wrote. Throws Error when `json` is not one (a service of another version).
RunRecord run_from_json(const nlohmann::ordered_json& json);
std::vector<RunRecord> runs_from_json(const nlohmann::ordered_json& json);

}  // namespace gpurun
