#include "web_routes.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "gpurun/history/run_json.hpp"
#include "gpurun/history/time_text.hpp"
#include "gpurun/service/lab_page.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/text.hpp"
#include "request_target.hpp"

namespace gpurun {
namespace {

// The answer while the web's two readers of the store are taken (ServedRuns::web_queries).
constexpr std::string_view kBusy = "busy: other page and API requests are reading the history; try again in a minute";

using json = nlohmann::ordered_json;

constexpr std::chrono::hours kMonth{24 * 30};
constexpr long long kMostHours = 24LL * 14;  // the raw samples' default keep; the minutes go back further
constexpr const char* kHidden =
    "This site shows each user only their own runs (history_visibility: own), and a web page cannot tell who "
    "you are: ask `gpurun history` and `gpurun usage` on the server.";

HttpReply json_reply(int status, std::string body) {
  return {.status = status,
          .body = std::move(body),
          .content_type = "application/json",
          .headers = {{"Cache-Control", "no-store"}}};
}

HttpReply error_reply(int status, const std::string& message) {
  return json_reply(status, json_line(json{{"message", message}}));
}

std::string milliseconds(WallTime when) { return std::to_string(unix_ms(when)); }

// Asks what the socket answers for `path` with `query` (the last 30 days unless `since` is given),
// as a viewer who sees everything: only called under history_visibility "all".
ServiceAnswer from_service(const std::string& path, std::map<std::string, std::string> query, ServedRuns& runs,
                           const ServerSettings& settings, WallTime now) {
  query.try_emplace("since", milliseconds(now - kMonth));
  std::string target = path;
  char separator = '?';
  for (const auto& [key, value] : query) {
    target += separator + text::percent_encode(key) + "=" + text::percent_encode(value);
    separator = '&';
  }
  return answer_request({.target = target, .peer_uid = 0, .claimed_caller = "", .programs_only = true}, runs, settings);
}

json minutes_json(ServedRuns& runs, int hours, WallTime now) {
  const std::vector<GpuMinute> minutes =
      runs.read_store([&](const RunStore& store) { return store.gpu_minutes(now - std::chrono::hours(hours)); });
  std::map<int, json> per_gpu;
  for (const GpuMinute& m : minutes) {
    const auto mean = m.utilization_mean();
    const auto entry = per_gpu.try_emplace(m.gpu, json::array()).first;  // each GPU, with points or none
    if (mean) entry->second.push_back({m.minute * 60'000, std::round(*mean * 10) / 10});
  }
  json gpus = json::array();
  for (auto& [gpu, points] : per_gpu) gpus.push_back({{"index", gpu}, {"minutes", std::move(points)}});
  return {{"time", rfc3339(now)}, {"hours", hours}, {"gpus", std::move(gpus)}};
}

HttpReply page_reply(const Target& target, ServedRuns& runs, const ServerSettings& settings, WallTime now,
                     bool may_read_store) {
  LabPage page;
  page.now = now;
  {
    const std::lock_guard lock(runs.mutex);
    page.board = board_json(runs.inventory, runs.metrics, now);
  }
  if (const auto refresh = target.query.find("refresh"); refresh != target.query.end())
    if (const auto seconds = text::parse_integer(refresh->second); seconds && *seconds >= 1 && *seconds <= 3600)
      page.refresh_s = static_cast<int>(*seconds);
  if (settings.visibility == HistoryVisibility::all) {
    // Said in the page where the table would be (a store busy past its wait: 503), never left out
    // without a word.
    const auto not_read = [](const ServiceAnswer& answer) {
      const json body = json::parse(answer.body, nullptr, false);
      const std::string why = body.is_object() ? body.value("message", "") : "";
      return fmt::format("The history could not be read just now (HTTP {}{}{}): reload the page in a moment.",
                         answer.status, why.empty() ? "" : ": ", why);
    };
    const ServiceAnswer busy{.status = 503, .body = json_line(json{{"message", kBusy}})};
    const ServiceAnswer by_user =
        may_read_store ? from_service("/v1/usage", {{"by", "user"}}, runs, settings, now) : busy;
    if (by_user.status == 200)
      page.usage = usage_from_json(json::parse(by_user.body));
    else
      page.usage_why = not_read(by_user);
    if (const auto user = target.query.find("user"); user != target.query.end()) {
      page.user = user->second;
      const ServiceAnswer answer =
          may_read_store ? from_service("/v1/runs", {{"user", page.user}}, runs, settings, now) : busy;
      if (answer.status == 200) {
        page.runs = runs_from_json(json::parse(answer.body));
        page.runs_cut = !answer.note.empty() || page.runs->size() >= kMostRunsAnAnswer;
      } else
        page.runs_why = not_read(answer);
    }
  } else {
    page.hidden_why = kHidden;
  }
  return {.status = 200,
          .body = lab_page_html(page),
          .content_type = "text/html; charset=utf-8",
          .headers = {{"Content-Security-Policy", std::string(kLabPagePolicy)},
                      {"Cache-Control", "no-store"},
                      {"Referrer-Policy", "no-referrer"},
                      {"X-Frame-Options", "DENY"}}};
}

// The host a Host header names, without its port or brackets.
std::string_view host_of(std::string_view header) {
  if (header.starts_with('[')) {
    const std::size_t close = header.find(']');
    return close == std::string_view::npos ? header : header.substr(1, close - 1);
  }
  return header.substr(0, header.find(':'));
}

// The first few Hosts refused, each once, in the log: a scraper configured with a name the admin
// has not given (web_names) fails there, not silently; an attacker cannot flood the log.
void note_refused_host(const std::string& host) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  constexpr std::size_t kMostLogged = 20;
  const std::lock_guard lock(mutex);
  if (logged.size() >= kMostLogged || !logged.insert(host).second) return;
  spdlog::warn(
      "the page and /metrics refused a request for host {}: add the name to \"web_names\" in the service "
      "section of /etc/gpurun/config.json (gpurund --web-name) if it is this machine's",
      text::printable(host, 80));
}

}  // namespace

bool answers_for(std::string_view host_header, const std::vector<std::string>& names) {
  if (host_header.empty()) return true;  // HTTP/1.0 without one: no browser, so no rebinding
  const auto without_root_dot = [](std::string_view name) {
    return name.ends_with('.') ? name.substr(0, name.size() - 1) : name;
  };
  const std::string host = text::to_lower(without_root_dot(host_of(host_header)));
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return true;
  if (host == "localhost" || host.ends_with(".localhost")) return true;
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return text::equals_ignoring_case(without_root_dot(name), host); });
}

HttpReply answer_web(const HttpRequest& request, ServedRuns& runs, const ServerSettings& settings) {
  if (!answers_for(request.host, settings.web_names)) {
    note_refused_host(request.host);
    return {.status = 421,
            .body = fmt::format("gpurund does not answer for {}: a page reached through another name may be "
                                "another site's (DNS rebinding). Reach it by this machine's name or address, or "
                                "add the name to \"web_names\" in the service section of "
                                "/etc/gpurun/config.json (gpurund --web-name)\n",
                                text::printable(request.host, 80)),
            .content_type = "text/plain; charset=utf-8"};
  }
  if (request.method != "GET" && request.method != "HEAD")
    return {.status = 405,
            .body = "only GET (and HEAD) is answered\n",
            .content_type = "text/plain; charset=utf-8",
            .headers = {{"Allow", "GET, HEAD"}}};
  const auto target = parse_target(request.target);
  if (!target) return error_reply(400, "the request's target is not valid URL text");
  const WallTime now = std::chrono::system_clock::now();
  const std::string& path = target->path;
  if (path == "/metrics") {
    const std::lock_guard lock(runs.mutex);
    return {.status = 200,
            .body = prometheus_text(runs.metrics, now, settings.visibility),
            .content_type = "text/plain; version=0.0.4; charset=utf-8"};
  }
  // What reads the store takes one of the web's two readers (ServedRuns::web_queries).
  // The page without one is made all the same, its board and no history (page_reply says why).
  const bool page = path == "/" || path == "/index.html";
  const bool reads_store = page || path == "/api/minutes" || path == "/api/runs" || path == "/api/usage";
  const bool reader = reads_store && runs.web_queries.try_acquire_for(std::chrono::seconds(5));
  if (reads_store && !reader && !page) return error_reply(503, std::string(kBusy));
  struct Release {
    std::counting_semaphore<2>* queries;
    ~Release() {
      if (queries != nullptr) queries->release();
    }
  } const release{reader ? &runs.web_queries : nullptr};
  if (page) return page_reply(*target, runs, settings, now, reader);
  const std::vector<std::pair<std::string, std::string>> asset_headers{
      {"Content-Security-Policy", std::string(kLabPagePolicy)}, {"Cache-Control", "no-cache"}};
  if (path == "/page.css")
    return {.status = 200,
            .body = std::string(lab_page_css()),
            .content_type = "text/css; charset=utf-8",
            .headers = asset_headers};
  if (path == "/page.js")
    return {.status = 200,
            .body = std::string(lab_page_js()),
            .content_type = "text/javascript; charset=utf-8",
            .headers = asset_headers};
  if (path == "/api/gpus") {
    const std::lock_guard lock(runs.mutex);
    return json_reply(200, json_line(board_json(runs.inventory, runs.metrics, now)));
  }
  if (path == "/api/minutes") {
    int hours = 24;
    if (const auto given = target->query.find("hours"); given != target->query.end()) {
      const auto value = text::parse_integer(given->second);
      if (!value || *value < 1 || *value > kMostHours)
        return error_reply(400, fmt::format("hours: expected a whole number from 1 to {}", kMostHours));
      hours = static_cast<int>(*value);
    }
    try {
      return json_reply(200, json_line(minutes_json(runs, hours, now)));
    } catch (const StoreBusy& e) {
      return error_reply(503, fmt::format("busy: {}", e.what()));
    }
  }
  if (path == "/api/runs" || path == "/api/usage") {
    if (settings.visibility != HistoryVisibility::all) return error_reply(403, kHidden);
    const ServiceAnswer answer =
        from_service(path == "/api/runs" ? "/v1/runs" : "/v1/usage", target->query, runs, settings, now);
    HttpReply reply = json_reply(answer.status, answer.body);
    if (!answer.note.empty()) reply.headers.emplace_back("X-Gpurun-Note", answer.note);  // the runs cut to fit
    return reply;
  }
  return {.status = 404,
          .body =
              "not found: gpurund serves / (the lab's page), /api/gpus, /api/runs, /api/usage, /api/minutes and "
              "/metrics here\n",
          .content_type = "text/plain; charset=utf-8"};
}

}  // namespace gpurun
