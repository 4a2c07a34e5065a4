#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <ostream>

#include "gpurun/engine/gpu_process_owner.hpp"
#include "gpurun/select/claims.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/table.hpp"
#include "gpurun/util/terminal.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"
#include "gpurun/verbs/verbs.hpp"
#include "service_client.hpp"

namespace gpurun {
namespace {

// Seconds since an RFC 3339 time as docker prints it ("2026-11-21T08:19:37.123456789Z").
std::optional<long long> seconds_since(const std::string& rfc3339) {
  std::tm tm{};
  if (rfc3339.size() < 19 || ::strptime(rfc3339.substr(0, 19).c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr)
    return std::nullopt;
  const std::time_t started = ::timegm(&tm);
  const std::time_t now = std::time(nullptr);
  if (started <= 0 || now < started) return std::nullopt;
  return static_cast<long long>(now - started);
}

std::optional<long long> running_s(const GpuContainer& c) {
  return has_ended(c) ? std::nullopt : seconds_since(c.started_at);
}

// "1h 2m"; "-" where it has ended; "?" where docker's start time cannot be read.
std::string running_for(const GpuContainer& c) {
  if (has_ended(c)) return "-";
  const auto seconds = seconds_since(c.started_at);
  return seconds ? format_duration(std::chrono::seconds(*seconds), DurationStyle::brief) : "?";
}

// How long every GPU the container holds has been idle (the shortest of them); nullopt where one
// of them is busy or the service does not know.
std::optional<long long> idle_for(const GpuContainer& c, const std::vector<Gpu>& gpus,
                                  const std::map<int, long long>& idle_s) {
  if (has_ended(c)) return std::nullopt;
  const std::vector<int> held = held_gpu_indices(c, gpus);
  std::optional<long long> shortest;
  for (int index : held) {
    const auto found = idle_s.find(index);
    if (found == idle_s.end()) return std::nullopt;
    shortest = std::min(shortest.value_or(found->second), found->second);
  }
  return shortest;
}

std::string gpu_list(const GpuContainer& c, const std::vector<Gpu>& gpus) {
  if (gpus.empty()) return c.all_gpus ? "all" : fmt::format("{}", fmt::join(c.devices, ","));
  return fmt::format("{}", fmt::join(held_gpu_indices(c, gpus), ","));
}

}  // namespace

int run_ps(const Options& options, std::ostream& out) {
  const auto timeout = smi_timeout(options);
  // GPU indices and UUIDs come from nvidia-smi (asked while the engine answers); without it, the
  // devices as docker was told.
  const Machine machine = open_machine(options);
  // Under sudo, one thing at a time: the engine's client raises to root for its socket (AsRoot),
  // which changes every thread's ids, and a file read beside it (--from-csv) would be read as root.
  auto gpus_read = std::async(options.caller ? std::launch::deferred : std::launch::async,
                              [&] { return machine.source->read(timeout); });
  std::vector<GpuContainer> containers =
      machine.engine->gpu_holders(timeout, options.ps_all ? Listing::all : Listing::running);
  std::vector<Gpu> gpus;
  try {
    gpus = gpus_read.get().gpus;
  } catch (const Error& e) {
    spdlog::warn("GPUs are shown as docker was told, without nvidia-smi: {}", e.what());
  }
  // Containers the engine cannot show (a rootless engine's, another user's), from the GPU processes.
  if (!options.from_csv) add_process_holders(containers, gpus, host_proc_root());

  const auto idle_s = service_idle_gpus(options);  // with the service only

  if (options.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& c : containers) {
      nlohmann::ordered_json held = nlohmann::ordered_json::array();
      for (int index : held_gpu_indices(c, gpus))
        for (const Gpu& g : gpus)
          if (g.index == index) held.push_back({{"index", g.index}, {"uuid", g.uuid}});
      const auto ran_s = running_s(c);
      list.push_back({{"id", c.id},
                      {"name", c.name},
                      {"user", string_or_null(c.user)},
                      {"image", c.image},
                      {"status", c.status},
                      {"exit_code", c.exit_code ? nlohmann::ordered_json(*c.exit_code) : nlohmann::ordered_json()},
                      {"started_at", string_or_null(c.started_at)},
                      {"command", string_or_null(c.command)},
                      {"running_s", ran_s ? nlohmann::ordered_json(*ran_s) : nlohmann::ordered_json()},
                      {"gpus", held},
                      {"devices", c.devices},
                      {"all_gpus", c.all_gpus},
                      {"started_by_gpurun", c.started_by_gpurun}});
      if (idle_s) {
        const auto idle = idle_for(c, gpus, *idle_s);
        list.back()["idle_s"] = idle ? nlohmann::ordered_json(*idle) : nlohmann::ordered_json();
      }
    }
    out << json_text(nlohmann::ordered_json{{"containers", list}});
    return 0;
  }
  using Align = Column::Align;
  // The command, last, is cut to the terminal's width (80 where there is none, as docker ps cuts
  // it); the rest is whole, each column as wide as its widest cell: a fixed one let a long user or
  // GPU list push the rest of its row out of line.
  std::vector<Column> columns{Column::fitted("NAME"), Column::fitted("USER"), Column::fitted("GPUS"),
                              Column::fitted("IMAGE"), Column::fitted("RUNNING FOR", Align::right)};
  if (idle_s) columns.push_back(Column::fitted("IDLE", Align::right));  // how long all its GPUs have been idle
  for (Column column : {Column::fitted("STATUS"), Column::fitted("GPURUN"), Column::shrinkable("COMMAND", 20)})
    columns.push_back(std::move(column));
  Table table(std::move(columns));
  table.fit(terminal_width(STDOUT_FILENO));
  for (const auto& c : containers) {
    std::vector<std::string> cells{c.name, c.user.empty() ? "?" : c.user, gpu_list(c, gpus), c.image, running_for(c)};
    if (idle_s) {
      const auto idle = idle_for(c, gpus, *idle_s);
      cells.push_back(idle ? format_duration(std::chrono::seconds(*idle), DurationStyle::brief) : "-");
    }
    const std::string status = c.exit_code ? fmt::format("{} ({})", c.status, *c.exit_code) : c.status;
    for (std::string cell : {status, std::string(c.started_by_gpurun ? "yes" : "no"),
                             c.command.empty() ? std::string("?") : text::terminal_safe_cut(c.command, 200)})
      cells.push_back(std::move(cell));
    table.add_row(std::move(cells));
  }
  out << table.str();
  return 0;
}

}  // namespace gpurun
