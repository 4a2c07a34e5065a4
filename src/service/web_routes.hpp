#pragma once
// What gpurund's TCP listener answers (gpurun/service/web_server.hpp):
//   GET /                       the lab's page (?user=NAME adds that user's runs, ?refresh=SECONDS)
//   GET /page.css, /page.js     its style sheet and script
//   GET /api/gpus               the board: `gpurun status --json` with the holders and idle times
//   GET /api/runs[?since=MS&user=NAME]          `gpurun history --json` (default: the last 30 days)
//   GET /api/usage[?since=MS&by=KEY&user=NAME]  `gpurun usage --json` (default: the last 30 days)
//   GET /api/minutes[?hours=H]  each GPU's one-minute mean utilization (default: 24 hours)
//   GET /metrics                Prometheus's text format (gpurun/service/metrics.hpp)
// It only reads: the last sample, and the store. Nobody on a TCP connection can be told from
// anybody else, so under history_visibility "own" runs and usage are not shown here at all.
#include "gpurun/service/service_server.hpp"
#include "http_loop.hpp"

namespace gpurun {

// A request whose Host names neither an IP address, localhost, nor one of `settings.web_names` (the
// web server adds this machine's name and the --listen host) is refused with 421: a page of
// another site that rebinds its name to this machine's address reaches it with its own name.
HttpReply answer_web(const HttpRequest& request, ServedRuns& runs, const ServerSettings& settings);

// Whether a request with this Host header ("dgx1:9400", "[::1]:9400"; "" without one) is for us.
bool answers_for(std::string_view host_header, const std::vector<std::string>& names);

}  // namespace gpurun
