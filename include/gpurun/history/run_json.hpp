#pragma once
// A run as JSON, the form `gpurun history --json` prints and the service's socket answers in:
// id, name, user, container (null for a process), image, command, gpus, start, end (null while
// it runs), gpu_seconds, busy_gpu_seconds, efficiency, idle_seconds, max_memory_mib, ended_by.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

// The most runs one answer of `/v1/runs` holds, the newest (`limit=N` asks for fewer): a year of a
// busy server is 100 000 runs, 40 MB of JSON, which no one request may make the root service hold.
inline constexpr std::size_t kMostRunsAnAnswer = 10'000;

nlohmann::ordered_json run_json(const RunRecord& run);

// A run as it is shown to whoever may look (the web, a chat's webhook): its command, and a bare
// process's name (its command line), by its program alone. Arguments may carry tokens.
RunRecord with_programs_only(RunRecord run);

// The run `run_json` wrote. Throws Error when `json` is not one (a service of another version).
RunRecord run_from_json(const nlohmann::ordered_json& json);
std::vector<RunRecord> runs_from_json(const nlohmann::ordered_json& json);

// What the history table shows of many runs, as the socket answers `/v1/runs?fields=table`:
// {"columns": [...], "rows": [[id, name, user, gpus, start_ms, end_ms, gpu_seconds,
// busy_gpu_seconds, idle_seconds, ended_by], ...]}. Rows of values, not objects, and times as
// milliseconds: a year of runs is a tenth of a second less to write and to read than as objects.
nlohmann::json runs_table_json(const std::vector<RunRecord>& runs);
// Its columns, and one run's row: for an answer written a row at a time.
const std::vector<std::string>& runs_table_columns();
nlohmann::json runs_table_row(const RunRecord& run);
// The runs `runs_table_json` wrote; throws Error for another shape (a service of another version).
std::vector<RunRecord> runs_from_table_json(const nlohmann::json& json);

}  // namespace gpurun
