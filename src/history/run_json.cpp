#include "gpurun/history/run_json.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "gpurun/history/time_text.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

nlohmann::ordered_json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(text);
}
std::string text_of(const nlohmann::ordered_json& value) { return value.is_string() ? value.get<std::string>() : ""; }

WallTime time_of(const nlohmann::ordered_json& value, const char* key) {
  const auto when = value.is_string() ? parse_rfc3339(value.get<std::string>()) : std::nullopt;
  if (!when) throw Error(fmt::format("the service's run has no valid \"{}\"", key));
  return *when;
}

// The last is newer than the rest: a table without it (an older service) is read too.
const std::vector<std::string> kTableColumns{"id",
                                             "name",
                                             "user",
                                             "gpus",
                                             "start_ms",
                                             "end_ms",
                                             "gpu_seconds",
                                             "busy_gpu_seconds",
                                             "idle_seconds",
                                             "ended_by",
                                             "unmeasured_gpu_seconds"};

}  // namespace

RunRecord with_programs_only(RunRecord run) {
  if (run.container_id.empty() && run.name == run.command) run.name = std::string(text::program_of(run.name));
  run.command = std::string(text::program_of(run.command));
  return run;
}

nlohmann::ordered_json run_json(const RunRecord& run) {
  const auto efficiency = run.efficiency();
  nlohmann::ordered_json json{{"id", run.id}, {"name", run.name}, {"user", run.user}};
  json["container"] = text_or_null(run.container_id);
  json["image"] = text_or_null(run.image);
  json["command"] = run.command;
  json["gpus"] = run.gpus;
  json["start"] = rfc3339(run.start);
  json["end"] = run.end ? nlohmann::ordered_json(rfc3339(*run.end)) : nlohmann::ordered_json();
  json["gpu_seconds"] = run.gpu_seconds;
  json["busy_gpu_seconds"] = run.busy_gpu_seconds;
  json["unmeasured_gpu_seconds"] = run.unmeasured_gpu_seconds;
  json["efficiency"] = efficiency ? nlohmann::ordered_json(*efficiency) : nlohmann::ordered_json();
  json["idle_seconds"] = run.idle_seconds;
  json["max_memory_mib"] = run.max_memory_mib;
  json["ended_by"] = text_or_null(run.ended_by);
  return json;
}

RunRecord run_from_json(const nlohmann::ordered_json& json) {
  if (!json.is_object() || !json.contains("id") || !json["id"].is_number_integer())
    throw Error("the service answered with something that is not a run");
  RunRecord run;
  run.id = json["id"].get<std::int64_t>();
  run.name = text_of(json.value("name", nlohmann::ordered_json()));
  run.user = text_of(json.value("user", nlohmann::ordered_json()));
  run.container_id = text_of(json.value("container", nlohmann::ordered_json()));
  run.image = text_of(json.value("image", nlohmann::ordered_json()));
  run.command = text_of(json.value("command", nlohmann::ordered_json()));
  if (json.contains("gpus") && json["gpus"].is_array())
    for (const auto& gpu : json["gpus"])
      if (gpu.is_number_integer()) run.gpus.push_back(gpu.get<int>());
  run.start = time_of(json.value("start", nlohmann::ordered_json()), "start");
  run.last_seen = run.start;
  if (json.contains("end") && !json["end"].is_null()) run.end = run.last_seen = time_of(json["end"], "end");
  const auto number = [&](const char* key) {
    return json.contains(key) && json[key].is_number() ? json[key].get<double>() : 0.0;
  };
  run.gpu_seconds = number("gpu_seconds");
  run.busy_gpu_seconds = number("busy_gpu_seconds");
  run.unmeasured_gpu_seconds = number("unmeasured_gpu_seconds");  // none from an older service
  run.idle_seconds = number("idle_seconds");
  run.max_memory_mib = number("max_memory_mib");
  run.ended_by = text_of(json.value("ended_by", nlohmann::ordered_json()));
  return run;
}

nlohmann::json runs_table_json(const std::vector<RunRecord>& runs) {
  nlohmann::json rows = nlohmann::json::array();
  rows.get_ref<nlohmann::json::array_t&>().reserve(runs.size());
  for (const RunRecord& run : runs)
    rows.push_back(
        nlohmann::json::array({run.id, run.name, run.user, run.gpus, unix_ms(run.start),
                               run.end ? nlohmann::json(unix_ms(*run.end)) : nlohmann::json(), run.gpu_seconds,
                               run.busy_gpu_seconds, run.idle_seconds, run.ended_by, run.unmeasured_gpu_seconds}));
  return {{"columns", kTableColumns}, {"rows", std::move(rows)}};
}

std::vector<RunRecord> runs_from_table_json(const nlohmann::json& json) {
  const auto other = [] { return Error("the service answered the history table in another shape (another version?)"); };
  if (!json.is_object() || !json.contains("rows") || !json["rows"].is_array()) throw other();
  const nlohmann::json columns = json.value("columns", nlohmann::json());
  const std::vector<std::string> older(kTableColumns.begin(), kTableColumns.end() - 1);
  const bool with_unmeasured = columns == nlohmann::json(kTableColumns);
  if (!with_unmeasured && columns != nlohmann::json(older)) throw other();
  const std::size_t width = with_unmeasured ? kTableColumns.size() : older.size();
  std::vector<RunRecord> runs;
  runs.reserve(json["rows"].size());
  const auto time_at = [&other](const nlohmann::json& value) {
    const std::int64_t ms = value.get<std::int64_t>();
    if (ms < 0 || ms > 10'000'000'000'000) throw other();  // beyond 2286: no time a service wrote
    return WallTime(std::chrono::milliseconds(ms));
  };
  for (const nlohmann::json& row : json["rows"]) {
    if (!row.is_array() || row.size() != width || !row[0].is_number_integer() || !row[1].is_string() ||
        !row[2].is_string() || !row[3].is_array() || !row[4].is_number_integer() ||
        !(row[5].is_null() || row[5].is_number_integer()) || !row[6].is_number() || !row[7].is_number() ||
        !row[8].is_number() || !row[9].is_string() || (with_unmeasured && !row[10].is_number()))
      throw other();
    RunRecord run;
    run.id = row[0].get<std::int64_t>();
    run.name = row[1].get<std::string>();
    run.user = row[2].get<std::string>();
    for (const auto& gpu : row[3])
      if (gpu.is_number_integer()) run.gpus.push_back(gpu.get<int>());
    run.start = run.last_seen = time_at(row[4]);
    if (!row[5].is_null()) run.end = run.last_seen = time_at(row[5]);
    run.gpu_seconds = row[6].get<double>();
    run.busy_gpu_seconds = row[7].get<double>();
    run.idle_seconds = row[8].get<double>();
    run.ended_by = row[9].get<std::string>();
    if (with_unmeasured) run.unmeasured_gpu_seconds = row[10].get<double>();
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<RunRecord> runs_from_json(const nlohmann::ordered_json& json) {
  if (!json.is_array()) throw Error("the service answered with something that is not a list of runs");
  std::vector<RunRecord> runs;
  runs.reserve(json.size());
  for (const auto& item : json) runs.push_back(run_from_json(item));
  return runs;
}

}  // namespace gpurun
