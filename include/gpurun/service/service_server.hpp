#pragma once
// The gpurun service's socket: HTTP over a unix socket (the peer of gpurun/util/unix_http.hpp),
// answering `gpurun history`, `usage` and `report` from the store and the runs open now.
//   GET /v1/runs[?since=MS&user=NAME]     the runs going at or after `since` (Unix ms), newest first
//   GET /v1/usage[?since=MS&by=KEY&user=NAME]  usage sums per user, image or gpu
//   GET /v1/runs/NAME                      one run, by id, name or container id
//   GET /v1/gpus                           each held GPU idle now, and since when (status, ps)
// Anyone may connect (the socket is 0666); who they are comes from the socket's peer credentials.
// Under history_visibility "own" a caller sees only their runs; root and the admin group see all.
// root may name the user it asks for (sudo gpurun: header X-Gpurun-Caller), nobody else may.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpurun/history/run_tracker.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/service/metrics.hpp"
#include "gpurun/service/run_store.hpp"
#include "gpurun/util/choices.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/ip_network.hpp"

namespace gpurun {

// Every reader of the store busy for as long as a query may wait: the answer is 503, not a wait
// without end behind a client that keeps them all.
class StoreBusy : public Error {
 public:
  using Error::Error;
};

// The store's queries each user has going at once, at most two: with four readers for everyone,
// one user's loop of year-long queries on four connections would keep everyone else's waiting.
class QueriesByUser {
 public:
  static constexpr int kMostAUser = 2;
  // Takes one of `user`'s; false where they have kMostAUser going already.
  bool take(const std::string& user);
  void give_back(const std::string& user);

 private:
  std::mutex mutex_;
  std::map<std::string, int> going_;
};

// What the socket answers from, shared with the recorder under one lock.
struct ServedRuns {
  std::mutex mutex;  // held while the store is written, and while the fields below change or are read
  // The database the recorder writes. Each query reads it through a connection of its own
  // (RunStore::reader), without `mutex`: one user's long query holds up neither the sampling,
  // nor /metrics, nor anyone else's query.
  std::string store_path;
  // Queries reading the store at once, at most: each holds a connection, and while any reads,
  // the write-ahead log cannot be reset.
  std::counting_semaphore<4> readers{4};
  // Of the readers, the web's page and API take two at most: the socket's users (gpurun history,
  // usage, report) always find the other two, whatever anyone on the network asks.
  std::counting_semaphore<2> web_queries{2};
  // Of the readers, each user on the socket takes two at most (root asking for itself, any).
  QueriesByUser by_user;

  // `query` run on a read-only connection of its own, once one of the `readers` is free; throws
  // StoreBusy where none is within 5 s (gpurun's client waits 10 s for the whole answer).
  template <typename Query>
  auto read_store(Query&& query) {
    if (!readers.try_acquire_for(std::chrono::seconds(5)))
      throw StoreBusy("every reader of the store is busy with other queries; try again in a minute");
    struct Release {
      std::counting_semaphore<4>& readers;
      ~Release() { readers.release(); }
    } release{readers};
    return std::forward<Query>(query)(static_cast<const RunStore&>(*RunStore::reader(store_path)));
  }
  // Fresher than the store: the open runs as of the last sample, and ended ones not yet written.
  std::vector<RunRecord> fresh;
  // The last sample, as /metrics (gpurun/service/web_server.hpp) and /v1/gpus show it.
  MetricsState metrics;
  // The last sample's GPUs assessed as `gpurun status` assesses them, for the lab's page.
  Inventory inventory;
};

struct ServerSettings {
  std::string socket_path = "/run/gpurun/gpurund.sock";
  HistoryVisibility visibility = HistoryVisibility::all;
  std::string admin_group;  // "": none
  // The names the web listener answers to besides IP addresses, localhost, this machine's name and
  // the --listen host (a DNS alias of the machine, say): a request for any other Host is refused,
  // as a page on another site reaching it through DNS rebinding would send.
  std::vector<std::string> web_names;
  // Peers of the web listener that share its connections whole (a Prometheus or proxy elsewhere).
  std::vector<IpNetwork> trusted_peers;
};

struct ServiceRequest {
  std::string target;          // "/v1/runs?since=1700000000000"
  uid_t peer_uid = 0;          // from SO_PEERCRED
  std::string claimed_caller;  // X-Gpurun-Caller: believed only from root
  // For the web (its page and API), shown to whoever reaches it: each run's command, and a bare
  // process's name (its command line), by its program alone, as the board names processes.
  bool programs_only = false;
};

struct ServiceAnswer {
  int status = 200;
  std::string body;  // JSON; {"message": "..."} for an error
  // What the client should tell its user besides (header X-Gpurun-Note): an answer cut to fit.
  std::string note = {};
};

// The most bytes of JSON one answer of `/v1/runs` holds: its newest runs that fit, and a note
// saying so. Ten thousand runs of 4 KiB commands of control bytes, each written \u0001, would be
// half a gigabyte in the root service, and more than gpurun reads (64 MiB).
inline constexpr std::size_t kMostAnswerBytes = std::size_t{16} << 20;

// One request's answer (the socket's loop calls this; the unit tests too).
ServiceAnswer answer_request(const ServiceRequest& request, ServedRuns& runs, const ServerSettings& settings);

// Listens on settings.socket_path (replacing a stale socket there, never one a service answers
// on) in a thread of its own until destroyed, then removes the socket if it is still its own.
// Throws Error when it cannot listen.
class ServiceServer {
 public:
  ServiceServer(ServerSettings settings, ServedRuns& runs);
  ~ServiceServer();
  ServiceServer(const ServiceServer&) = delete;
  ServiceServer& operator=(const ServiceServer&) = delete;

 private:
  void serve();
  ServerSettings settings_;
  ServedRuns& runs_;
  int listener_ = -1;
  std::pair<dev_t, ino_t> bound_{};  // the socket file it made
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace gpurun
