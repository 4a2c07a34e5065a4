#include "gpurun/service/lab_page.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "gpurun/history/time_text.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

using json = nlohmann::ordered_json;

std::string text_at(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::optional<double> number_at(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? std::optional(j[key].get<double>()) : std::nullopt;
}

std::string gib(double mib) { return fmt::format("{:.1f}", mib / 1024); }

// A name as the page shows it: no control or invisible character (a right-to-left override would
// turn the row around), and each backslash as \x5c, so that a name spelling "\x0a" is not one
// holding a line end. page.js's shown() does the same.
std::string page_safe(std::string_view name, std::size_t most_chars = 0) {
  std::string spelled;
  for (const char c : name) spelled += c == '\\' ? std::string("\\x5c") : std::string(1, c);
  return most_chars == 0 ? text::terminal_safe(spelled) : text::terminal_safe_cut(spelled, most_chars);
}

// Every string of a GPU's board entry (its state, users, holders, reasons: names users chose)
// as page_safe shows it.
void clean_strings(json& value) {
  if (value.is_string())
    value = page_safe(value.get<std::string>());
  else if (value.is_structured())
    for (json& item : value) clean_strings(item);
}

// "alice · bob_gpu2 (run 3)", one per holder; "" for none.
std::string holders_text(const json& held_by) {
  std::string text;
  for (const json& h : held_by) {
    if (!text.empty()) text += ", ";
    const std::string user = text_at(h, "user");  // board_json cleaned both names
    text += user.empty() ? "unknown" : user;
    text += " · " + text_at(h, "name");
    if (h.contains("run") && h["run"].is_number_integer()) text += fmt::format(" (run {})", h["run"].get<long long>());
  }
  return text;
}

std::string meter(std::optional<double> value, double max) {
  if (!value) return "";
  return fmt::format("<meter min=\"0\" max=\"{:.0f}\" value=\"{:.0f}\"></meter> ", max, std::clamp(*value, 0.0, max));
}

// One row of the board, as page.js draws it too (keep the two alike).
void board_row(std::string& html, const json& gpu) {
  const auto idle = number_at(gpu, "idle_s");
  const std::string state = text_at(gpu, "state");
  const bool held = gpu.contains("held_by") && gpu["held_by"].is_array() && !gpu["held_by"].empty();
  const std::string row_class = idle && held ? "idle" : state == "free" ? "free" : "busy";
  const auto util = number_at(gpu, "utilization_percent");
  const auto used = number_at(gpu, "memory_used_mib");
  const auto total = number_at(gpu, "memory_total_mib");
  html += fmt::format(R"(<tr class="{}" data-gpu="{}">)", row_class, gpu.value("index", 0));
  html += fmt::format(R"(<td class="index">{}</td>)", gpu.value("index", 0));
  html += fmt::format(R"(<td class="model">{}</td>)", html_escape(text_at(gpu, "name")));
  html += fmt::format(R"(<td class="util">{}<span>{}</span></td>)", meter(util, 100),
                      util ? fmt::format("{:.0f} %", *util) : "?");
  html += fmt::format(R"(<td class="mem">{}<span>{}</span></td>)", total ? meter(used, *total) : "",
                      used && total ? fmt::format("{} / {} GiB", gib(*used), gib(*total)) : "?");
  html += fmt::format(R"(<td class="state">{}</td>)", html_escape(state));
  html += fmt::format(R"(<td class="holder">{}</td>)", held ? html_escape(holders_text(gpu["held_by"])) : "");
  html += fmt::format(
      R"(<td class="idle">{}</td></tr>)",
      idle && held ? html_escape(format_duration(std::chrono::seconds(std::llround(*idle)), DurationStyle::brief))
                   : "");
  if (!gpu.contains("mig_instances") || !gpu["mig_instances"].is_array()) return;
  for (const json& mig : gpu["mig_instances"]) {
    const auto mig_used = number_at(mig, "memory_used_mib");
    const auto mig_total = number_at(mig, "memory_total_mib");
    html += fmt::format(
        R"(<tr class="mig"><td class="index"></td><td class="model">MIG {}</td><td class="util"></td>)"
        R"(<td class="mem">{}<span>{}</span></td><td class="state">{}</td><td class="holder"></td><td class="idle"></td></tr>)",
        html_escape(text_at(mig, "profile")), mig_total ? meter(mig_used, *mig_total) : "",
        mig_used && mig_total ? fmt::format("{} / {} GiB", gib(*mig_used), gib(*mig_total)) : "?",
        mig.value("free", false) ? "free" : "busy");
  }
}

// Said after "as of" while the GPU source fails: the board is what it last gave, or nothing where
// it never gave any, and why (page.js says the same).
std::string not_sampled(const json& gpus) {
  const std::string why = text_at(gpus, "source_error");
  return fmt::format(R"( · <strong class="stale">{}{}</strong>)",
                     gpus.value("sampled", true) ? "the GPUs could not be looked at since: this is the last reading"
                                                 : "the GPUs could not be looked at yet",
                     why.empty() ? "" : " (" + html_escape(why) + ")");
}

// "3 of 8 GPUs free · 2 held idle · as of TIME", in the header.
void summary(std::string& html, const json& gpus) {
  int free = 0;
  int idle = 0;
  int count = 0;
  if (gpus.contains("gpus") && gpus["gpus"].is_array())
    for (const json& gpu : gpus["gpus"]) {
      ++count;
      if (text_at(gpu, "state") == "free") ++free;
      if (number_at(gpu, "idle_s") && gpu.contains("held_by") && !gpu["held_by"].empty()) ++idle;
    }
  html += fmt::format(R"(<p id="summary"><strong>{} of {}</strong> GPUs free · <strong>{}</strong> held idle · as of )"
                      R"(<time id="as-of">{}</time>{}</p>)",
                      free, count, idle, html_escape(text_at(gpus, "time")),
                      gpus.value("sample_ok", true) ? "" : not_sampled(gpus));
}

void board(std::string& html, const json& gpus) {
  html += R"(<section id="board"><h2>Which GPUs are free</h2><div class="scroll"><table class="board">)"
          R"(<thead><tr><th>GPU</th><th>Model</th><th>Utilization</th><th>Memory</th><th>State</th>)"
          R"(<th>Held by</th><th>Idle for</th></tr></thead><tbody id="board-rows">)";
  if (gpus.contains("gpus") && gpus["gpus"].is_array())
    for (const json& gpu : gpus["gpus"]) board_row(html, gpu);
  html += "</tbody></table></div></section>";
}

std::string hours(double h) { return fmt::format("{:.1f}", h); }

void usage_table(std::string& html, const LabPage& page) {
  html += R"(<section id="usage"><h2>Who used what: the last 30 days</h2>)";
  if (!page.usage && !page.usage_why.empty()) {  // not read this time: the script draws the chart when it can
    html += fmt::format(R"(<p class="note stale">{}</p><div id="usage-chart" class="chart"></div></section>)",
                        html_escape(page.usage_why));
    return;
  }
  if (!page.usage) {
    html += fmt::format(R"(<p class="note">{}</p></section>)", html_escape(page.hidden_why));
    return;
  }
  html += R"(<div id="usage-chart" class="chart"></div><div class="scroll"><table class="usage"><thead><tr>)"
          R"(<th>User</th><th>GPU-hours</th><th>Busy GPU-hours</th><th>Efficiency</th><th>Idle GPU-hours</th>)"
          R"(<th>Runs</th></tr></thead><tbody id="usage-rows">)";
  for (const UsageRow& row : *page.usage) {
    const auto efficiency = row.efficiency();
    // A user's name links to their runs; runs nobody is known for have no such view.
    const std::string user =
        row.key.empty() ? "unknown"
                        : fmt::format(R"(<a href="?user={}#runs">{}</a>)", html_escape(text::percent_encode(row.key)),
                                      html_escape(page_safe(row.key)));
    html += fmt::format(R"(<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>)", user,
                        hours(row.gpu_hours), hours(row.busy_gpu_hours),
                        efficiency ? fmt::format("{:.0f} %", *efficiency) : "?", hours(row.idle_gpu_hours), row.runs);
  }
  if (page.usage->empty()) html += R"(<tr><td colspan="6">No runs in the last 30 days.</td></tr>)";
  html += "</tbody></table></div></section>";
}

void runs_table(std::string& html, const LabPage& page) {
  if (!page.runs && !page.runs_why.empty())
    html += fmt::format(R"(<section id="runs"><h2>Runs of {}</h2><p class="note stale">{}</p></section>)",
                        html_escape(page_safe(page.user)), html_escape(page.runs_why));
  if (!page.runs) return;
  html += fmt::format(R"(<section id="runs"><h2>Runs of {}</h2>)", html_escape(page_safe(page.user)));
  if (page.runs_cut)  // as `gpurun history` and /api/runs say it: never a list cut without a word
    html += fmt::format(R"(<p class="note">These are the newest {} runs, as many as one answer holds; )"
                        R"(<code>gpurun history --user NAME --since …</code> narrows them.</p>)",
                        page.runs->size());
  html += R"(<div class="scroll"><table class="runs"><thead><tr>)"
          R"(<th>Run</th><th>Name</th><th>GPUs</th><th>Start</th><th>Duration</th><th>GPU-hours</th>)"
          R"(<th>Efficiency</th><th>Idle</th><th>Ended by</th></tr></thead><tbody>)";
  for (const RunRecord& run : *page.runs) {
    const auto efficiency = run.efficiency();
    const WallTime end = run.end.value_or(std::max(page.now, run.start));  // (the JSON has no last_seen)
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        run.id, html_escape(page_safe(run.name, 80)), fmt::join(run.gpus, ","), html_escape(rfc3339(run.start)),
        html_escape(format_duration(std::chrono::floor<std::chrono::seconds>(end - run.start), DurationStyle::brief)),
        hours(run.gpu_seconds / 3600), efficiency ? fmt::format("{:.0f} %", *efficiency) : "?",
        html_escape(format_duration(std::chrono::seconds(std::llround(run.idle_seconds)), DurationStyle::brief)),
        run.end ? html_escape(run.ended_by) : "running");
  }
  if (page.runs->empty()) html += R"(<tr><td colspan="9">No runs.</td></tr>)";
  html += "</tbody></table></div></section>";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == '\x7f')
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

json board_json(const Inventory& inventory, const MetricsState& metrics, WallTime now) {
  json board = status_json(inventory.assessed, inventory.lost, inventory.source, inventory.mig_units);
  board["host"] = metrics.hostname;
  board["time"] = rfc3339(metrics.sampled_at.value_or(now));  // as of the last good sample
  // False once a look failed (not before the first: nothing failed yet) or none has succeeded
  // for a while (the sampling held up): the board is then what was read last.
  const bool fresh = metrics.fresh(now);
  board["sample_ok"] = (metrics.last_sample_ok || metrics.source_errors == 0) && (fresh || !metrics.sampled_at);
  board["fresh"] = fresh;
  board["sampled"] = metrics.sampled_at.has_value();  // false: no reading since the start
  board["source_error"] = metrics.source_error.empty() ? json() : json(page_safe(metrics.source_error, 300));
  for (json& gpu : board["gpus"]) {
    clean_strings(gpu);
    const int index = gpu.value("index", -1);
    const std::optional<WallTime> idle = metrics.held_idle_since(index);
    gpu["idle_s"] =
        !idle || !fresh  // not counted on from a stale reading
            ? json()
            : json(std::max<long long>(0, std::chrono::duration_cast<std::chrono::seconds>(now - *idle).count()));
    json held_by = json::array();
    for (const HolderSample& h : merged_holders(metrics.holders)) {
      if (std::find(h.gpus.begin(), h.gpus.end(), index) == h.gpus.end()) continue;
      const RunRecord* run = run_of_holder(metrics.running, h.key);
      // A process by its program alone, as /metrics names it: its arguments may carry tokens,
      // and the board is shown to whoever reaches the page, whatever history_visibility says.
      // Both names are cleaned here, once, for the server's rows and page.js's alike (readable in
      // any script): JSON.parse turns an escaped right-to-left override back into one, which
      // would reorder the cell.
      held_by.push_back({{"user", h.user.empty() ? json() : json(page_safe(h.user, 64))},
                         {"name", page_safe(hpc_job_of(h), 80)},
                         {"container", h.container_id.empty() ? json() : json(h.container_id.substr(0, 12))},
                         {"run", run == nullptr ? json() : json(run->id)}});
    }
    gpu["held_by"] = std::move(held_by);
  }
  return board;
}

std::string lab_page_html(const LabPage& page) {
  const std::string host = html_escape(text_at(page.board, "host"));
  std::string html =
      fmt::format(R"(<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">)"
                  R"(<meta name="viewport" content="width=device-width, initial-scale=1"><title>GPUs on {0}</title>)"
                  R"(<link rel="stylesheet" href="page.css"><script src="page.js" defer></script></head>)"
                  R"(<body data-refresh="{1}"><header><h1>GPUs on <span id="host">{0}</span></h1>)",
                  host, page.refresh_s);
  summary(html, page.board);
  // What the script could not fetch, said where it is seen (page.js); empty until then.
  html += R"(<p id="page-status" class="note stale" role="status"></p></header><main>)";
  board(html, page.board);
  html += R"(<section id="day"><h2>The last 24 hours</h2><p class="note">Utilization of each GPU, one point )"
          R"(a minute (its mean).</p><div id="day-charts" class="chart"></div><noscript><p class="note">The charts )"
          R"(need JavaScript; <a href="api/minutes">api/minutes</a> has the figures.</p></noscript></section>)";
  usage_table(html, page);
  runs_table(html, page);
  // Relative links: the page works behind a proxy that serves it under a path of its own.
  html += R"(</main><footer>gpurund · JSON: <a href="api/gpus">api/gpus</a> · <a href="api/runs">api/runs</a> )"
          R"(· <a href="api/usage">api/usage</a> · <a href="api/minutes">api/minutes</a> · )"
          R"(<a href="metrics">metrics</a></footer></body></html>)";
  html += "\n";
  return html;
}

}  // namespace gpurun
