#pragma once
// The accept-and-answer loop the service's two listeners share: the unix socket gpurun asks
// (service_server.cpp) and the TCP listener of /metrics (web_server.cpp). HTTP/1.1 with keep-alive
// through Boost.Beast; each connection on a thread of its own (32 at most, 4 from one peer: a uid
// but root's on the unix socket; on TCP an address, or from this machine a person's uid; 8 kept
// for root and the machine's own services: ConnectionShares), each read within 5 s and each
// answer's write within 5 s and a second per 64 KiB of it (a connection left idle longer is
// closed), so that a client that stalls, or a user who opens many, costs the others nothing.
#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/util/ip_network.hpp"

namespace gpurun {

struct HttpRequest {
  std::string method;     // "GET"
  std::string target;     // "/v1/runs?since=1700000000000"
  std::string caller;     // the X-Gpurun-Caller header; "" without one
  std::string host = {};  // the Host header, as sent; "" without one
};

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers = {};  // more of them (Content-Security-Policy)
};

// `connection`: the accepted socket (the unix listener asks it for its peer's credentials).
using HttpHandler = std::function<HttpReply(int connection, const HttpRequest& request)>;

// Accepts on `listener` and answers each request with `handler` until `stopping` is set (seen
// within 0.1 s, mid-connection too). An exception from `handler` is a 500 answer. Without
// `keep_alive` each connection takes one request (Connection: close). `trusted`: TCP peers that
// share the connections whole (ConnectionShares).
void serve_http(int listener, const std::atomic<bool>& stopping, const HttpHandler& handler, bool keep_alive,
                const std::vector<IpNetwork>& trusted = {});

// The listener's connections by peer: 32 at most, 4 from one peer, and 8 of the 32 kept for the
// peers that share the whole (root, and this machine's system accounts: a proxy in front of the
// page, a Prometheus on the same host). Without them, eight peers (eight addresses, eight
// containers on the bridge) took every connection, and the scrapes and the proxy got none.
class ConnectionShares {
 public:
  // `trusted`: peers that share the whole besides root and this host (shares_the_whole).
  explicit ConnectionShares(std::vector<IpNetwork> trusted = {}) : trusted_(std::move(trusted)) {}
  static constexpr int kMost = 32;
  static constexpr int kPerPeer = 4;
  static constexpr int kKeptForTheWhole = 8;
  // Root's own on the unix socket, at most: every sudo caller's gpurun asks as root, and one
  // caller's stalled sudo launches (Ctrl-Z) would otherwise hold every connection.
  static constexpr int kMostForRoot = 16;
  // The most for one IPv6 /64: an IPv6 LAN's hosts share one (so each has kPerPeer of its own),
  // and one host may hold the whole /64, one address a connection.
  static constexpr int kPerNetwork = 16;
  // Counts a connection of `peer` in, where its share allows it.
  bool admit(const std::string& peer);
  void release(const std::string& peer);
  int open() const { return open_; }

 private:
  bool whole(const std::string& peer) const;
  std::vector<IpNetwork> trusted_;
  int open_ = 0;
  int open_by_others_ = 0;                 // of peers that do not share the whole
  std::map<std::string, int> by_peer_;     // open connections per peer (none: no entry)
  std::map<std::string, int> by_network_;  // per IPv6 /64 of the peers in one (network_of)
};

// The /64 of a global IPv6 peer ("2001:db8:1:2::/64"); "" for any other peer.
std::string network_of(const std::string& peer);

// Whether `peer` (as serve_http names it: "uid 0", "this host", "uid 1000 on this host", an
// address) shares the whole listener rather than a peer's part.
bool shares_the_whole(const std::string& peer);

// A TCP peer as the per-peer share counts it: its address (an IPv6 one's /64 is capped too:
// ConnectionShares::kPerNetwork).
std::string peer_of_address(const sockaddr_storage& address);

}  // namespace gpurun
