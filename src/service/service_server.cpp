#include "gpurun/service/service_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "gpurun/history/run_json.hpp"
#include "gpurun/history/time_text.hpp"
#include "gpurun/history/usage.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/text.hpp"
#include "http_loop.hpp"
#include "owned_path.hpp"
#include "request_target.hpp"

namespace gpurun {
namespace {

using json = nlohmann::ordered_json;

ServiceAnswer failure(int status, const std::string& message) {
  return {status, json_line(json{{"message", message}})};
}

// Whether the user `name` belongs to `group` (primary or supplementary).
bool member_of(const std::string& name, const std::string& group) {
  if (group.empty() || name.empty()) return false;
  const auto gid = group_id(group);
  if (!gid) return false;
  const std::vector<gid_t> groups = group_ids_of(name);
  return std::find(groups.begin(), groups.end(), *gid) != groups.end();
}

std::vector<RunRecord> fresh_runs(ServedRuns& served) {
  const std::lock_guard lock(served.mutex);
  return served.fresh;
}

// The store's runs with the open ones as the tracker holds them now (fresher than the last flush).
std::vector<RunRecord> current_runs(ServedRuns& served, const RunQuery& query) {
  // The fresh runs first, the store after: a run written between the two is then in the store's
  // answer, where the other order could miss it in both.
  const std::vector<RunRecord> fresh = fresh_runs(served);
  std::vector<RunRecord> runs = served.read_store([&](const RunStore& store) { return store.runs(query); });
  for (const RunRecord& live : fresh) {
    if (!query.user.empty() && live.user != query.user) continue;
    const auto stored = std::find_if(runs.begin(), runs.end(), [&](const RunRecord& r) { return r.id == live.id; });
    // The store's window, on the fresher record: a run ended before `since` (and not yet written,
    // or written while still open) is not in it.
    const bool in_window = !query.since || !live.end || *live.end >= *query.since;
    if (stored != runs.end() && in_window)
      *stored = live;
    else if (stored != runs.end())
      runs.erase(stored);
    else if (in_window)
      runs.push_back(live);
  }
  std::stable_sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.start != b.start ? a.start > b.start : a.id > b.id;
  });
  // The store gave its newest `limit`: with the fresh ones merged, the newest `limit` are among them.
  if (query.limit && runs.size() > *query.limit) runs.resize(*query.limit);
  return runs;
}

// The usage of the runs current_runs would give, summed as the store hands them over: a year of
// runs is never held at once (a root service's memory is not the size of anyone's question).
std::vector<UsageRow> current_usage(ServedRuns& served, const RunQuery& query, UsageKey by) {
  const std::vector<RunRecord> fresh = fresh_runs(served);  // first, as current_runs says
  UsageTally tally(by, query.since);
  std::set<std::int64_t> fresher;  // stored runs the fresh ones stand for (or drop, when out of the window)
  for (const RunRecord& live : fresh) {
    if (!query.user.empty() && live.user != query.user) continue;
    fresher.insert(live.id);
    if (!query.since || !live.end || *live.end >= *query.since) tally.add(live);
  }
  served.read_store([&](const RunStore& store) {
    store.each_run(query, [&](const RunRecord& run) {
      if (!fresher.contains(run.id)) tally.add(run);
    });
  });
  return tally.rows();
}

// The run `name` names, of `user` only unless it is "": the run of that id, else the newest of that
// name or container ID (from run 1000 on, an id is also a prefix of some containers' IDs).
std::optional<RunRecord> find_run(ServedRuns& served, const std::string& name, const std::string& user) {
  const std::vector<RunRecord> fresh = fresh_runs(served);  // first, as current_runs says
  const auto id = text::parse_integer(name);
  const auto by_id = [&](const RunRecord& run) { return id && run.id == *id; };
  const auto before = [&](const RunRecord& a, const RunRecord& b) {  // b is the better answer
    return std::pair(by_id(a), a.start) < std::pair(by_id(b), b.start);
  };
  std::optional<RunRecord> found;
  for (const RunRecord& live : fresh) {
    const bool named =
        by_id(live) || live.name == name || (names_container_id_prefix(name) && live.container_id.starts_with(name));
    if (named && (user.empty() || live.user == user) && (!found || before(*found, live))) found = live;
  }
  if (const auto stored = served.read_store([&](const RunStore& store) { return store.find(name, user); })) {
    if (!found || before(*found, *stored)) {
      // A stored run still open is fresher in `running`.
      const auto live =
          std::find_if(fresh.begin(), fresh.end(), [&](const RunRecord& r) { return r.id == stored->id; });
      found = live != fresh.end() ? *live : *stored;
    }
  }
  return found;
}

// The runs as a JSON array (or the history's table: {"columns": [...], "rows": [...]}), newest
// first, as many as fit in kMostAnswerBytes; a note says how many where some are left out.
ServiceAnswer runs_answer(const std::vector<RunRecord>& found, bool as_table) {
  std::string body =
      as_table ? R"({"columns":)" + json_line(nlohmann::json(runs_table_columns())) + R"(,"rows":[)" : "[";
  const std::size_t room = kMostAnswerBytes - 2;  // the closing "]" or "]}"
  std::size_t shown = 0;
  for (const RunRecord& run : found) {
    const std::string item = as_table ? json_line(runs_table_row(run)) : json_line(run_json(run));
    if (body.size() + item.size() + 1 > room) break;
    if (shown++ > 0) body += ',';
    body += item;
  }
  body += as_table ? "]}" : "]";
  ServiceAnswer answer{.status = 200, .body = std::move(body)};
  if (shown < found.size())
    answer.note = fmt::format(
        "these are the newest {} of the runs asked for, as many as one answer holds ({} MiB): narrow them with "
        "--since or --user",
        shown, kMostAnswerBytes >> 20);
  return answer;
}

}  // namespace

ServiceAnswer answer_request(const ServiceRequest& request, ServedRuns& runs, const ServerSettings& settings) {
  const auto target = parse_target(request.target);
  if (!target) return failure(400, "the request's target is not valid URL text");
  // Who asks: root may name the user it asks for (sudo gpurun); anyone else is who the socket says.
  const bool on_behalf = request.peer_uid == 0 && !request.claimed_caller.empty();
  const std::string viewer = on_behalf ? request.claimed_caller : user_name(request.peer_uid);
  const bool admin = (request.peer_uid == 0 && !on_behalf) || member_of(viewer, settings.admin_group);
  const bool sees_all = settings.visibility == HistoryVisibility::all || admin;
  // A run as this viewer may read it: another user's command by its program alone (its arguments
  // may carry tokens, and the history keeps them long after `ps` would have shown them), whole to
  // its user, root and the admin group; by its program alone to everyone where the web asks.
  const auto as_seen = [&](RunRecord run) {
    return request.programs_only || (!admin && run.user != viewer) ? with_programs_only(std::move(run)) : run;
  };

  RunQuery query;
  const auto param = [&](const char* key) -> std::optional<std::string> {
    const auto it = target->query.find(key);
    return it == target->query.end() ? std::nullopt : std::optional(it->second);
  };
  if (const auto since = param("since")) {
    const auto ms = text::parse_integer(*since);
    query.since = ms ? from_unix_ms(*ms) : std::nullopt;
    if (!query.since) return failure(400, "since: expected Unix time in milliseconds, between -9e12 and 9e12");
  }
  query.user = param("user").value_or("");
  if (!sees_all) {
    if (!query.user.empty() && query.user != viewer)
      return failure(403, fmt::format("this site shows each user only their own runs (history_visibility: own); "
                                      "ask for yours ({}) or ask an admin",
                                      viewer));
    query.user = viewer;
  }

  // A user's query of the store holds one of their shares until answered; root asking for
  // itself and the web (which has its own two) hold none.
  const bool reads_store =
      target->path == "/v1/runs" || target->path == "/v1/usage" || target->path.starts_with("/v1/runs/");
  const bool shared = reads_store && (request.peer_uid != 0 || on_behalf);
  if (shared && !runs.by_user.take(viewer))
    return failure(503, fmt::format("you have {} queries of the history going already (on other connections): try "
                                    "again once they are answered",
                                    QueriesByUser::kMostAUser));
  struct GiveBack {
    QueriesByUser* queries;
    const std::string& user;
    ~GiveBack() {
      if (queries != nullptr) queries->give_back(user);
    }
  } give_back{shared ? &runs.by_user : nullptr, viewer};

  try {
    if (target->path == "/v1/runs") {
      query.limit = kMostRunsAnAnswer;
      if (const auto limit = param("limit")) {
        const auto value = text::parse_integer(*limit);
        if (!value || *value < 1 || static_cast<std::size_t>(*value) > kMostRunsAnAnswer)
          return failure(400, fmt::format("limit: expected a whole number from 1 to {}", kMostRunsAnAnswer));
        query.limit = static_cast<std::size_t>(*value);
      }
      std::vector<RunRecord> found = current_runs(runs, query);
      std::transform(found.begin(), found.end(), found.begin(), as_seen);
      return runs_answer(found, param("fields").value_or("") == "table");
    }
    if (target->path == "/v1/usage") {
      const std::string by_word = param("by").value_or("user");
      const auto by = choice_from<UsageKey>(by_word);
      if (!by) return failure(400, "by: expected user, image or gpu");
      return {200, json_line(usage_json(current_usage(runs, query, *by)))};
    }
    if (target->path == "/v1/gpus") {  // what status shows anyone anyway: no visibility filter
      const std::lock_guard lock(runs.mutex);
      const WallTime now = std::chrono::system_clock::now();
      json gpus = json::array();
      // Idle times counted to now from readings nobody renewed would grow on their own: none then.
      for (const auto& entry : runs.metrics.idle_since) {
        if (!runs.metrics.fresh(now)) break;
        const std::optional<WallTime> since = runs.metrics.held_idle_since(entry.first);
        if (!since) continue;  // held by exempt containers alone
        gpus.push_back({{"index", entry.first},
                        {"idle_since", rfc3339(*since)},
                        {"idle_s", std::max<long long>(
                                       0, std::chrono::duration_cast<std::chrono::seconds>(now - *since).count())}});
      }
      return {200, json_line(json{{"gpus", gpus}})};
    }
    if (target->path.starts_with("/v1/runs/")) {
      const std::string name = target->path.substr(std::string_view("/v1/runs/").size());
      // A run's id names that run, whoever's (from run 1000 on an id also begins some container
      // IDs, one of the caller's among them); else the caller's own run of that name first
      // (another's may be newer); another's only where they may see it, else it is "not found":
      // its existence is not told.
      std::optional<RunRecord> run;
      if (const auto id = text::parse_integer(name); id && sees_all) {
        run = find_run(runs, name, "");
        if (run && run->id != *id) run.reset();
      }
      if (!run && !viewer.empty()) run = find_run(runs, name, viewer);
      if (!run && sees_all) {
        run = find_run(runs, name, "");
        // Another user's bare process is named by its command line: found by that name, the answer
        // would confirm a guess of the arguments as_seen leaves out. By its id it is found.
        if (run && !admin && run->user != viewer && run->container_id.empty() && std::to_string(run->id) != name &&
            text::program_of(run->name) != run->name)
          run.reset();
      }
      if (!run) return failure(404, fmt::format("no run named {} in the service's history", text::printable(name)));
      return {200, json_line(run_json(as_seen(std::move(*run))))};
    }
  } catch (const StoreBusy& e) {
    return failure(503, fmt::format("the service is busy: {}", e.what()));
  } catch (const std::exception& e) {  // the store failing: a message, and the service goes on
    spdlog::error("answering {}: {}", text::printable(request.target), e.what());
    return failure(500, fmt::format("the service could not read its history: {}", e.what()));
  }
  return failure(404, fmt::format("no such path: {}", text::printable(target->path)));
}

bool QueriesByUser::take(const std::string& user) {
  const std::lock_guard lock(mutex_);
  int& going = going_[user];
  if (going >= kMostAUser) return false;
  ++going;
  return true;
}

void QueriesByUser::give_back(const std::string& user) {
  const std::lock_guard lock(mutex_);
  if (const auto it = going_.find(user); it != going_.end() && --it->second <= 0) going_.erase(it);
}

ServiceServer::ServiceServer(ServerSettings settings, ServedRuns& runs) : settings_(std::move(settings)), runs_(runs) {
  const std::string& path = settings_.socket_path;
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path)
    throw Error(fmt::format("--socket {}: a socket path must be 1 to {} bytes long", text::printable(path),
                            sizeof address.sun_path - 1));
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  address.sun_family = AF_UNIX;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && ::mkdir(parent.c_str(), 0755) == 0)
    ::chmod(parent.c_str(), 0755);  // whatever gpurund's umask (077): every user reaches the socket
  else if (!parent.empty() && errno != EEXIST)
    throw Error(fmt::format("cannot create {} for the socket: {}", parent.string(), std::strerror(errno)));
  // A directory someone else may write (and rename in: not sticky), or one such above it, could
  // have the socket swapped for a link between its bind and its chmod, and root make any file 0666.
  check_owned_ancestry(parent, fmt::format("put the socket in {}", parent.empty() ? "." : parent.string()),
                       "give a --socket in a directory of root's alone, such as /run/gpurun");
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode))
      throw Error(fmt::format("{} exists and is not a socket: remove it or give another --socket", path));
    // A stale one, unless a gpurund of another --state-dir answers there (a test's, say): one of
    // root's or this user's own. Another user's socket (in a sticky directory) is no service's:
    // it is replaced, so that nobody keeps gpurund from starting by listening first.
    if (existing.st_uid == 0 || existing.st_uid == ::geteuid()) {
      const Fd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
      const bool answers = probe.valid() && (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address),
                                                       sizeof address) == 0 ||
                                             errno == EAGAIN);  // listening, its backlog full
      if (answers)
        throw Error(
            fmt::format("another gpurund answers on {}: stop it first, or give this one another --socket", path));
    }
    ::unlink(path.c_str());
  }
  listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw Error(fmt::format("cannot create a socket: {}", std::strerror(errno)));
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::chmod(path.c_str(), 0666) != 0 || ::listen(listener_, 64) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listener_);
    throw Error(fmt::format("cannot listen on {}: {}", path, why));
  }
  struct stat bound {};
  if (::stat(path.c_str(), &bound) == 0) bound_ = {bound.st_dev, bound.st_ino};
  thread_ = std::thread([this] { serve(); });
}

ServiceServer::~ServiceServer() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(listener_);
  struct stat now {};  // its own socket only: one a later gpurund put there stays
  if (::lstat(settings_.socket_path.c_str(), &now) == 0 && std::pair(now.st_dev, now.st_ino) == bound_)
    ::unlink(settings_.socket_path.c_str());
}

void ServiceServer::serve() {
  serve_http(
      listener_, stopping_,
      [this](int connection, const HttpRequest& request) {
        ucred peer{};
        socklen_t size = sizeof peer;
        const bool known = ::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0;
        // HEAD is GET without the body (the loop leaves it out); a 405 says what is allowed (RFC 9110).
        const bool readable = request.method == "GET" || request.method == "HEAD";
        const ServiceAnswer answer =
            !known ? failure(403, "the service cannot tell who is asking")
            : !readable
                ? failure(405, "only GET and HEAD are answered")
                : answer_request({.target = request.target, .peer_uid = peer.uid, .claimed_caller = request.caller},
                                 runs_, settings_);
        HttpReply reply{.status = answer.status, .body = answer.body, .content_type = "application/json"};
        if (answer.status == 405) reply.headers.emplace_back("Allow", "GET, HEAD");
        if (!answer.note.empty()) reply.headers.emplace_back("X-Gpurun-Note", answer.note);
        return reply;
      },
      /*keep_alive=*/true);
}

}  // namespace gpurun
