#include "gpurun/history/run_json.hpp"

#include <fmt/format.h>

#include <map>

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

// The last is newer than the rest: a table without it (an older service) is read too, and one with
// more columns than these (a newer one) too.
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

const std::vector<std::string>& runs_table_columns() { return kTableColumns; }

nlohmann::json runs_table_row(const RunRecord& run) {
  return nlohmann::json::array({run.id, run.name, run.user, run.gpus, unix_ms(run.start),
                                run.end ? nlohmann::json(unix_ms(*run.end)) : nlohmann::json(), run.gpu_seconds,
                                run.busy_gpu_seconds, run.idle_seconds, run.ended_by, run.unmeasured_gpu_seconds});
}

nlohmann::json runs_table_json(const std::vector<RunRecord>& runs) {
  nlohmann::json rows = nlohmann::json::array();
  rows.get_ref<nlohmann::json::array_t&>().reserve(runs.size());
  for (const RunRecord& run : runs) rows.push_back(runs_table_row(run));
  return {{"columns", kTableColumns}, {"rows", std::move(rows)}};
}

std::vector<RunRecord> runs_from_table_json(const nlohmann::json& json) {
  const auto other = [] { return Error("the service answered the history table in another shape (another version?)"); };
  if (!json.is_object() || !json.contains("rows") || !json["rows"].is_array() || !json.contains("columns") ||
      !json["columns"].is_array())
    throw other();
  // Columns by name: a service of another version may have more (ignored) or lack a newer one.
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < json["columns"].size(); ++i)
    if (json["columns"][i].is_string()) at.emplace(json["columns"][i].get<std::string>(), i);
  for (std::size_t i = 0; i + 1 < kTableColumns.size(); ++i)  // all but the newest are needed
    if (!at.contains(kTableColumns[i])) throw other();
  const auto column = [&at](const char* name) { return at.at(name); };
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const auto found = at.find("unmeasured_gpu_seconds");  // kNone: an older service's table
  const std::size_t unmeasured = found == at.end() ? kNone : found->second;
  std::vector<RunRecord> runs;
  runs.reserve(json["rows"].size());
  const auto time_at = [&other](const nlohmann::json& value) {
    const std::int64_t ms = value.get<std::int64_t>();
    if (ms < 0 || ms > 10'000'000'000'000) throw other();  // beyond 2286: no time a service wrote
    return WallTime(std::chrono::milliseconds(ms));
  };
  for (const nlohmann::json& row : json["rows"]) {
    if (!row.is_array() || row.size() != json["columns"].size()) throw other();
    const auto& id = row[column("id")];
    const auto& name = row[column("name")];
    const auto& user = row[column("user")];
    const auto& gpus = row[column("gpus")];
    const auto& start = row[column("start_ms")];
    const auto& end = row[column("end_ms")];
    const auto& gpu_seconds = row[column("gpu_seconds")];
    const auto& busy = row[column("busy_gpu_seconds")];
    const auto& idle = row[column("idle_seconds")];
    const auto& ended_by = row[column("ended_by")];
    if (!id.is_number_integer() || !name.is_string() || !user.is_string() || !gpus.is_array() ||
        !start.is_number_integer() || !(end.is_null() || end.is_number_integer()) || !gpu_seconds.is_number() ||
        !busy.is_number() || !idle.is_number() || !ended_by.is_string() ||
        (unmeasured != kNone && !row[unmeasured].is_number()))
      throw other();
    RunRecord run;
    run.id = id.get<std::int64_t>();
    run.name = name.get<std::string>();
    run.user = user.get<std::string>();
    for (const auto& gpu : gpus)
      if (gpu.is_number_integer()) run.gpus.push_back(gpu.get<int>());
    run.start = run.last_seen = time_at(start);
    if (!end.is_null()) run.end = run.last_seen = time_at(end);
    run.gpu_seconds = gpu_seconds.get<double>();
    run.busy_gpu_seconds = busy.get<double>();
    run.idle_seconds = idle.get<double>();
    run.ended_by = ended_by.get<std::string>();
    if (unmeasured != kNone) run.unmeasured_gpu_seconds = row[unmeasured].get<double>();
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
