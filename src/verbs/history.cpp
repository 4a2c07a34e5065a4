// history, usage and report: what the gpurun service recorded (issue 22), asked over its socket.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <ctime>
#include <ostream>

#include "gpurun/history/run_json.hpp"
#include "gpurun/history/time_text.hpp"
#include "gpurun/history/usage.hpp"
#include "gpurun/job/job_report.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/rounding.hpp"
#include "gpurun/util/table.hpp"
#include "gpurun/util/terminal.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"
#include "gpurun/verbs/verbs.hpp"
#include "service_client.hpp"

namespace gpurun {
namespace {

using Align = Column::Align;

// The query part every verb sends: since (Unix ms) and user where given, then `more`.
std::string query(const Options& options, std::optional<WallTime> since,
                  const std::vector<std::pair<std::string_view, std::string>>& more = {}) {
  std::string q;
  const auto add = [&](std::string_view key, const std::string& value) {
    q += fmt::format("{}{}={}", q.empty() ? "?" : "&", key, text::percent_encode(value));
  };
  if (since) add("since", std::to_string(unix_ms(*since)));
  if (!options.history_user.empty()) add("user", options.history_user);
  for (const auto& [key, value] : more) add(key, value);
  return q;
}

std::optional<WallTime> since_of(const Options& options, std::optional<std::chrono::hours> fallback) {
  const WallTime now = std::chrono::system_clock::now();
  if (!options.history_since.empty()) return parse_since(options.history_since, now);
  if (fallback) return now - *fallback;
  return std::nullopt;
}

std::string local_time(WallTime when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm local{};
  ::localtime_r(&seconds, &local);
  char text[32];
  return std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local) != 0 ? text : "?";
}

std::chrono::seconds elapsed(const RunRecord& run) {
  const WallTime until = run.end.value_or(std::chrono::system_clock::now());
  return std::max(std::chrono::seconds(0), std::chrono::duration_cast<std::chrono::seconds>(until - run.start));
}

std::string brief(double seconds) {
  return format_duration(std::chrono::seconds(round_to_integer(std::max(seconds, 0.0))), DurationStyle::brief);
}

// " of alice" where --user names someone: an empty answer says whose runs it looked for.
std::string of_user(const Options& options) {
  return options.history_user.empty() ? "" : " of " + text::terminal_safe_cut(options.history_user, 32);
}

std::string percent_or_dash(std::optional<double> value) { return value ? fmt::format("{:.0f}%", *value) : "-"; }

std::string state(const RunRecord& run) { return !run.end ? "running" : run.ended_by.empty() ? "ended" : run.ended_by; }

// The service answers the newest kMostRunsAnAnswer runs at most: say so where an answer may be cut.
void note_if_cut(std::size_t runs) {
  if (runs >= kMostRunsAnAnswer)
    spdlog::warn(
        "these are the newest {} runs, the most the service answers at once (there may be more): narrow "
        "them with --since or --user",
        kMostRunsAnAnswer);
}

std::string gpu_list(const std::vector<int>& gpus) {
  return gpus.empty() ? "-" : fmt::format("{}", fmt::join(gpus, ","));
}

}  // namespace

int run_history(const Options& options, std::ostream& out) {
  const auto since = since_of(options, std::nullopt);
  if (options.json) {
    const nlohmann::ordered_json runs = ask_service(options, "/v1/runs" + query(options, since));
    out << json_text(runs);
    note_if_cut(runs.size());
    return 0;
  }
  const std::vector<RunRecord> runs =
      runs_from_table_json(ask_service_plain(options, "/v1/runs" + query(options, since, {{"fields", "table"}})));
  if (runs.empty()) {
    spdlog::info("the service has recorded no runs{}{}", of_user(options), since ? " since " + local_time(*since) : "");
    return 0;
  }
  // The ID first: what `report` takes where a name is cut to fit, or several runs share it.
  Table table({Column::fitted("ID", Align::right), Column::shrinkable("NAME", 12), Column::shrinkable("USER", 8),
               Column::fitted("GPUS"), Column::fitted("START"), Column::fitted("ELAPSED", Align::right),
               Column::fitted("GPU-H", Align::right), Column::fitted("EFF%", Align::right),
               Column::fitted("IDLE", Align::right), Column::fitted("STATE")});
  for (const RunRecord& run : runs)
    table.add_row({std::to_string(run.id), text::terminal_safe_cut(run.name, 60),
                   run.user.empty() ? "?" : text::terminal_safe_cut(run.user, 32), gpu_list(run.gpus),
                   local_time(run.start), format_duration(elapsed(run), DurationStyle::brief),
                   fmt::format("{:.2f}", run.gpu_seconds / 3600), percent_or_dash(run.efficiency()),
                   brief(run.idle_seconds), state(run)});
  if (const auto width = width_to_fit(STDOUT_FILENO)) table.fit(*width);
  out << table.str();
  note_if_cut(runs.size());
  return 0;
}

int run_usage(const Options& options, std::ostream& out) {
  const auto since = since_of(options, std::chrono::hours(30 * 24));
  const std::string by(word_of(options.usage_by));
  const nlohmann::ordered_json answer = ask_service(options, "/v1/usage" + query(options, since, {{"by", by}}));
  if (options.json) {
    out << json_text(answer);
    return 0;
  }
  const std::vector<UsageRow> rows = usage_from_json(answer);
  if (rows.empty()) {
    spdlog::info("the service has recorded no runs{} since {}", of_user(options), local_time(*since));
    return 0;
  }
  Table table({Column::shrinkable(text::to_upper(by), 12), Column::fitted("RUNS", Align::right),
               Column::fitted("GPU-H", Align::right), Column::fitted("BUSY GPU-H", Align::right),
               Column::fitted("EFF%", Align::right), Column::fitted("IDLE GPU-H", Align::right)});
  for (const UsageRow& row : rows)
    table.add_row({row.key.empty() ? "-" : text::terminal_safe_cut(row.key, 60), std::to_string(row.runs),
                   fmt::format("{:.2f}", row.gpu_hours), fmt::format("{:.2f}", row.busy_gpu_hours),
                   percent_or_dash(row.efficiency()), fmt::format("{:.2f}", row.idle_gpu_hours)});
  if (const auto width = width_to_fit(STDOUT_FILENO)) table.fit(*width);
  out << table.str();
  return 0;
}

int run_report(const std::string& name, const Options& options, std::ostream& out) {
  if (name.empty()) throw Error("report needs a run: gpurun report NAME (or its id; `gpurun history` lists them)");
  const nlohmann::ordered_json answer = ask_service(options, "/v1/runs/" + text::percent_encode(name));
  if (options.json) {
    out << json_text(answer);
    return 0;
  }
  const RunRecord run = run_from_json(answer);
  const auto line = [&](std::string_view label, const std::string& value) {
    out << fmt::format("  {:<15} {}\n", label, value);
  };
  out << fmt::format("gpurun: run report: {} (run {})\n", text::terminal_safe_cut(run.name, 80), run.id);
  line("user", run.user.empty() ? "?" : text::terminal_safe_cut(run.user, 32));
  line("holder", run.container_id.empty()
                     ? "a process (no container)"
                     : fmt::format("container {} ({})", run.container_id.substr(0, 12),
                                   run.image.empty() ? "?" : text::terminal_safe_cut(run.image, 80)));
  line("command", run.command.empty() ? "?" : text::terminal_safe_cut(run.command, 200));
  line("GPUs", fmt::format("{}", fmt::join(run.gpus, ", ")));
  line("started", local_time(run.start));
  line("ended", run.end ? fmt::format("{} ({})", local_time(*run.end), state(run)) : "still running");
  line("elapsed", format_duration(elapsed(run)));
  line("GPU-hours", fmt::format("{:.2f} (busy {:.2f})", run.gpu_seconds / 3600, run.busy_gpu_seconds / 3600));
  const auto efficiency = run.efficiency();
  line("GPU efficiency", efficiency ? fmt::format("{:.1f}%", *efficiency) : "n/a");
  line("idle", fmt::format("{} (every GPU of it at or below the idle threshold)", brief(run.idle_seconds)));
  line("memory peak", run.max_memory_mib > 0 ? fmt::format("{:.0f} MiB", run.max_memory_mib) : "n/a");
  if (!efficiency && run.unmeasured_gpu_seconds > 0) {
    out << "  (no utilization known: its GPUs are MIG instances, whose utilization NVML does not give)\n";
  } else if (!efficiency) {
    out << "  (no utilization yet: the service has not sampled it over a whole interval)\n";
  } else if (*efficiency < options.report_threshold) {
    out << fmt::format("  Below {:g}%: the GPUs waited for work much of the time. What usually helps:\n",
                       options.report_threshold);
    for (const auto& hint : low_efficiency_hints(std::nullopt, run.gpus.size(), *efficiency))
      out << fmt::format("    - {}\n", hint);
  }
  return 0;
}

}  // namespace gpurun
