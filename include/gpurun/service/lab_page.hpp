#pragma once
// The lab's page (issue 24), served by gpurund at / on its --listen address: who holds which GPU
// and who is idle (the board), each GPU's last 24 hours, and who used what in the last 30 days.
// The HTML is rendered here, whole, so that it reads without JavaScript; page.js (built into the
// binary with page.css) refreshes the board and draws the charts from the JSON API beside it.
// Everything a user chose (names, commands) is escaped; the page loads nothing from elsewhere.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/history/run_tracker.hpp"
#include "gpurun/history/usage.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/service/metrics.hpp"

namespace gpurun {

// /api/gpus: `gpurun status --json`'s object, with the host, the time, and per GPU `idle_s` (held
// at or below the idle threshold this long; null when not) and `held_by`, the service's holders:
// [{"user", "name", "container", "command", "run"}].
nlohmann::ordered_json board_json(const Inventory& inventory, const MetricsState& metrics, WallTime now);

struct LabPage {
  nlohmann::ordered_json board;                // board_json
  std::optional<std::vector<UsageRow>> usage;  // the last 30 days by user; nullopt: not shown to all
  std::string user;                            // ?user=NAME: that user's runs below
  std::optional<std::vector<RunRecord>> runs;  // those runs (nullopt: none asked, or not shown)
  std::string hidden_why;                      // why usage and runs are not shown ("" when they are)
  std::string usage_why;                       // why the usage could not be read ("" when it was)
  std::string runs_why;                        // why the user's runs could not be read ("" when they were)
  bool runs_cut = false;                       // `runs` are the newest of more than one answer holds
  int refresh_s = 5;
  WallTime now{};  // a running run's duration runs up to it
};

std::string lab_page_html(const LabPage& page);

// The page's style sheet and script (src/service/page/), built into the binary.
std::string_view lab_page_css();
std::string_view lab_page_js();

// The Content-Security-Policy every answer of the page carries: its own script and style only.
inline constexpr std::string_view kLabPagePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// &, <, >, " and ' as entities, control characters as U+FFFD: text safe in an element or an
// attribute value.
std::string html_escape(std::string_view text);

}  // namespace gpurun
