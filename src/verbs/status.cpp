#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <ostream>
#include <set>
#include <thread>

#include "gpurun/render/status_table.hpp"
#include "gpurun/render/topology.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/rounding.hpp"
#include "gpurun/util/terminal.hpp"
#include "gpurun/verbs/verbs.hpp"
#include "service_client.hpp"

namespace gpurun {
namespace {

// `status --watch`: one frame per interval, redrawn in place on a terminal; elsewhere frames
// follow each other, separated by a blank line, without escape codes.
int watch(const Options& options, std::ostream& out) {
  const double interval = *options.watch_s;  // 0.1 to 86400: settle_options
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  const std::string lock_dir = lock_dir_for_reading(options);
  const Machine machine = open_machine(options);
  std::set<std::string> told;
  for (int frame = 1;; ++frame) {
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(round_to_integer(interval * 1000));
    Inventory inventory = take_inventory(options, lock_dir, *machine.source, machine.engine.get());
    name_process_users(options, inventory);
    warn_once(inventory.warnings, told);
    const std::time_t now = std::time(nullptr);
    std::string text = fmt::format("gpurun status, every {:g}s: {:%Y-%m-%d %H:%M:%S}{}\n", interval,
                                   fmt::localtime(now), terminal ? "  (Ctrl-C to stop)" : "");
    text += format_watch_table(inventory.assessed, inventory.containers, terminal_width(STDOUT_FILENO)) +
            format_lost_gpus(inventory.lost);
    out << (terminal ? "\033[H\033[2J" : (frame > 1 ? "\n" : "")) << text << std::flush;
    if (options.watch_count > 0 && frame >= options.watch_count) return 0;
    std::this_thread::sleep_until(next);
  }
}

}  // namespace

int run_status(const Options& options, std::ostream& out) {
  if (options.watch_s) {
    if (options.json) throw Error("status --watch draws a live view; for JSON, call `gpurun status --json` repeatedly");
    return watch(options, out);
  }
  if (options.topology && options.json)
    throw Error("status --topology prints a matrix; for JSON, `status --json` has each GPU's NUMA node");
  if (options.watch_count > 0)
    throw Error(
        fmt::format("--count {0} counts the frames of status --watch: write `gpurun status --watch --count {0}`",
                    options.watch_count));
  const Machine machine = open_machine(options);
  const std::string lock_dir = lock_dir_for_reading(options);
  Inventory inventory = take_inventory(options, lock_dir, *machine.source, machine.engine.get());
  name_process_users(options, inventory);
  std::set<std::string> told;
  warn_once(inventory.warnings, told);
  if (options.json) {
    auto json = status_json(inventory.assessed, inventory.lost, inventory.source, inventory.mig_units);
    json["lock_dir"] = lock_dir.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(lock_dir);
    // Whether holders are the engine's word or the GPU processes' alone (the warning is on stderr).
    json["containers"] = inventory.engine
                             ? nlohmann::ordered_json{{"engine", inventory.engine->engine},
                                                      {"checked", inventory.engine->error.empty()},
                                                      {"error", string_or_null(inventory.engine->error)}}
                             : nlohmann::ordered_json{{"engine", nullptr}, {"checked", false}, {"error", nullptr}};
    // With the service: how long each GPU has been idle while held (null: busy, free or unknown).
    if (const auto idle = service_idle_gpus(options))
      for (auto& gpu : json["gpus"]) {
        const auto found = idle->find(gpu["index"].get<int>());
        gpu["idle_s"] = found == idle->end() ? nlohmann::ordered_json() : nlohmann::ordered_json(found->second);
      }
    out << json_text(json);
  } else {
    spdlog::info("GPU source: {}", inventory.source);  // on stderr: the table stays the same whichever answered
    spdlog::info("reservations: {}", lock_dir.empty() ? "not shown (no usable lock directory)" : lock_dir);
    const StatusLayout layout{.width = terminal_width(STDOUT_FILENO),
                              .verbose = spdlog::should_log(spdlog::level::debug),
                              .colour = colour_wanted(STDOUT_FILENO),
                              .idle_s = service_idle_gpus(options)};
    out << format_status_table(inventory.assessed, inventory.mig_units, layout) << format_lost_gpus(inventory.lost);
  }
  if (options.topology) {
    out << '\n' << format_topology(inventory.assessed, gpu_links(options, inventory));
  }
  return 0;
}

}  // namespace gpurun
