#include "http_loop.hpp"

#include "gpurun/util/text.hpp"
#include "loopback_owner.hpp"
#include "turn_away.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

namespace gpurun {
namespace {

namespace http = boost::beast::http;
using Socket = boost::asio::generic::stream_protocol::socket;

// A connection left idle (or stalled mid-request) this long is closed.
constexpr std::chrono::seconds kClientLimit{5};

// How long an answer of `bytes` may take to write: kClientLimit, and a second more for each 64 KiB,
// so that a large one (a year of history) reaches a client on a slow link instead of being cut
// at 5 s, while a client that reads a byte now and then still ends its share.
std::chrono::milliseconds write_limit(std::size_t bytes) {
  constexpr std::size_t kSlowestBytesPerSecond = std::size_t{64} * 1024;
  return kClientLimit + std::chrono::seconds(bytes / kSlowestBytesPerSecond);
}

// Runs `io` until the operation started on `socket` completes (`done`), `limit` passes or
// `stopping` is set (seen within 0.1 s); a late operation is cancelled. Blocking reads with
// SO_RCVTIMEO would not do: Asio waits again when the timeout fires.
void finish(boost::asio::io_context& io, Socket& socket, const bool& done, const std::atomic<bool>& stopping,
            std::chrono::milliseconds limit = kClientLimit) {
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done && !stopping && std::chrono::steady_clock::now() < deadline) io.run_for(std::chrono::milliseconds(100));
  if (!done) {
    boost::system::error_code ignored;
    socket.cancel(ignored);
    io.restart();
    io.run();  // the cancelled operation's handler: operation_aborted
  }
}

// Writes `response` a piece at a time (as much as the socket takes): each piece must go within
// kClientLimit, the whole within write_limit. A client that stops reading ends its share within
// 5 s, however large the answer, instead of holding it (and its thread) for write_limit.
bool write_answer(boost::asio::io_context& io, Socket& socket, http::response<http::string_body>& response,
                  const std::atomic<bool>& stopping, boost::system::error_code& error) {
  http::response_serializer<http::string_body> serializer(response);
  const auto deadline = std::chrono::steady_clock::now() + write_limit(response.body().size());
  while (!serializer.is_done()) {
    bool done = false;
    http::async_write_some(socket, serializer, [&](boost::system::error_code e, std::size_t) {
      error = e;
      done = true;
    });
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    finish(io, socket, done, stopping, std::min<std::chrono::milliseconds>(kClientLimit, left));
    if (error || !done) return false;
  }
  return true;
}

// A request that cannot be answered, said in `status` and `why`; then the connection closes.
void refuse(boost::asio::io_context& io, Socket& socket, http::status status, std::string_view why,
            const std::atomic<bool>& stopping) {
  http::response<http::string_body> response{status, 11};
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.set(http::field::server, "gpurund");
  response.keep_alive(false);
  response.body() = fmt::format("gpurund: the request cannot be read: {}\n", why);
  response.prepare_payload();
  bool done = false;
  http::async_write(socket, response, [&](boost::system::error_code, std::size_t) { done = true; });
  finish(io, socket, done, stopping);
}

// A request Beast could not parse: 431 for headers (a query string) over its 8 KB, 413 for a body
// over 64 KB, else 400.
void refuse(boost::asio::io_context& io, Socket& socket, boost::system::error_code why,
            const std::atomic<bool>& stopping) {
  const http::status status = why == http::error::header_limit ? http::status::request_header_fields_too_large
                              : why == http::error::body_limit ? http::status::payload_too_large
                                                               : http::status::bad_request;
  refuse(io, socket, status, why.message(), stopping);
}

// What is wrong with the Host of a parsed request (RFC 9112, 3.2): an HTTP/1.1 one must have one,
// and none may have two (which would the page's check of names read?). "" where nothing is.
std::string host_problem(const http::request<http::string_body>& request) {
  const std::size_t hosts = request.count(http::field::host);
  if (hosts > 1) return "more than one Host header";
  if (hosts == 0 && request.version() >= 11) return "an HTTP/1.1 request without a Host header";
  return "";
}

// The request's target as a path, and the host it names: an absolute-form one
// (http://host/metrics, as a proxy may send) is its path, which every server must accept, and its
// authority is the host, whatever the Host header says (RFC 9112, 3.2.2 and 7.2).
struct Target {
  std::string path;
  std::optional<std::string> authority;  // absolute-form only
};
Target split_target(std::string_view target) {
  if (!target.starts_with("http://") && !target.starts_with("https://")) return {std::string(target), std::nullopt};
  const std::size_t authority = target.find("//") + 2;
  const std::size_t path = target.find_first_of("/?", authority);
  Target out{.path = "/", .authority = std::string(target.substr(authority, path - authority))};
  if (out.authority->empty()) out.authority.reset();  // "http:///x": the Host header's name, then
  if (path == std::string_view::npos) return out;
  if (target[path] != '?') out.path.clear();
  out.path += target.substr(path);
  return out;
}

HttpReply answer(const HttpHandler& handler, int fd, const http::request<http::string_body>& request) {
  try {
    Target target = split_target(request.target());
    return handler(fd, {.method = std::string(request.method_string()),
                        .target = std::move(target.path),
                        .caller = std::string(request["X-Gpurun-Caller"]),
                        .host = target.authority.value_or(std::string(request[http::field::host]))});
  } catch (const std::exception& e) {  // never out of the listener's thread: that would end gpurund
    spdlog::error("answering {}: {}", text::printable(std::string_view(request.target()), 200), e.what());
    return {
        .status = 500, .body = "{\"message\": \"the service failed to answer\"}", .content_type = "application/json"};
  }
}

// The bytes of the large answers all connections are writing, and the most they may be; a large
// answer that would pass it is not admitted, unless it is the only one (a year of history, alone,
// is always sent). A small one (the page, /metrics, a week's history) is always admitted and not
// counted: one user's four slow reads of large answers turn away no one's scrape.
class WritingBytes {
 public:
  explicit WritingBytes(std::size_t bytes) : bytes_(bytes < kSmall ? 0 : bytes) {
    if (bytes_ == 0) return;
    std::size_t now = in_flight_.load();
    do {
      if (now > 0 && now + bytes > kMost) {
        bytes_ = 0;
        admitted_ = false;
        return;
      }
    } while (!in_flight_.compare_exchange_weak(now, now + bytes));
  }
  ~WritingBytes() { in_flight_ -= bytes_; }
  WritingBytes(const WritingBytes&) = delete;
  WritingBytes& operator=(const WritingBytes&) = delete;
  bool admitted() const { return admitted_; }

 private:
  static constexpr std::size_t kMost = std::size_t{64} * 1024 * 1024;
  static constexpr std::size_t kSmall = std::size_t{1} * 1024 * 1024;
  static inline std::atomic<std::size_t> in_flight_{0};
  std::size_t bytes_;
  bool admitted_ = true;
};

// Answers the requests of one accepted connection, on its own io_context (its own thread).
void serve_connection(int fd, int family, const std::atomic<bool>& stopping, const HttpHandler& handler,
                      bool keep_alive) {
  boost::asio::io_context io;
  Socket socket(io);
  boost::system::error_code error;
  socket.assign(boost::asio::generic::stream_protocol(family, SOCK_STREAM), fd, error);
  if (error) {
    ::close(fd);
    return;
  }
  // Bounded: a chunked body's chunk extensions and trailer have no limit of the parser's own, and a
  // client sending them without end grew the root service's memory by gigabytes in its 5 s.
  constexpr std::size_t kMostHeaderBytes = std::size_t{8} * 1024;  // the parser's own header limit
  constexpr std::size_t kMostBodyBytes = std::size_t{64} * 1024;
  boost::beast::flat_buffer buffer(kMostHeaderBytes + kMostBodyBytes + std::size_t{8} * 1024);
  while (!stopping) {  // the requests of one keep-alive connection
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMostBodyBytes);
    bool done = false;
    http::async_read(socket, buffer, parser, [&](boost::system::error_code e, std::size_t) {
      error = e;
      done = true;
    });
    finish(io, socket, done, stopping);
    if (done && error && error.category() == http::make_error_code(http::error::bad_target).category() &&
        error != http::error::end_of_stream && error != http::error::partial_message)
      refuse(io, socket, error, stopping);  // told what was wrong, not just closed on
    if (error || !done) break;
    const auto& request = parser.get();
    if (const std::string problem = host_problem(request); !problem.empty()) {
      refuse(io, socket, http::status::bad_request, problem, stopping);
      break;
    }
    HttpReply reply = answer(handler, fd, request);
    // Answers being written hold the root service's memory while their clients read, as slowly as
    // the write limit lets them: past a bound in all, a large one is refused rather than kept.
    const WritingBytes writing(request.method() == http::verb::head ? 0 : reply.body.size());
    if (!writing.admitted())
      reply = {.status = 503,
               .body =
                   "{\"message\": \"the service is sending many large answers already: try again in a "
                   "minute, or ask for less (limit, since)\"}",
               .content_type = "application/json"};
    http::response<http::string_body> response{static_cast<http::status>(reply.status), request.version()};
    response.set(http::field::content_type, reply.content_type);
    response.set(http::field::server, "gpurund");
    response.set("X-Content-Type-Options", "nosniff");
    for (const auto& [name, value] : reply.headers) response.set(name, value);
    response.keep_alive(keep_alive && request.keep_alive());
    const std::size_t length = reply.body.size();
    response.body() = request.method() == http::verb::head ? std::string() : std::move(reply.body);  // not copied
    response.prepare_payload();
    if (request.method() == http::verb::head) response.content_length(length);
    if (!write_answer(io, socket, response, stopping, error) || !response.keep_alive()) break;
  }
  socket.close(error);
}

// Who is at the other end, for the per-peer share: the uid on the unix socket; from this machine a
// person's uid, else "this host" (a system account's, or one the kernel would not tell); else the
// address.
std::string peer_of(int fd, int family) {
  if (family == AF_UNIX) {
    ucred peer{};
    socklen_t size = sizeof peer;
    return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 ? fmt::format("uid {}", person_of(peer.uid))
                                                                        : "?";
  }
  if (const auto local = local_peer(fd)) {
    if (local->owner && *local->owner >= first_user_uid())
      return fmt::format("uid {} on this host", person_of(*local->owner));
    static std::atomic<bool> told{false};
    if (!local->owner && !told.exchange(true))
      spdlog::warn(
          "cannot tell which user opened a connection from this machine (the kernel's sock_diag did not "
          "answer): such connections share the listener's 32 instead of 4 for each user");
    return "this host";
  }
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return "?";
  return peer_of_address(address);
}

}  // namespace

// Peers that share the whole: root (under sudo every caller's gpurun asks as root, naming the
// caller) and, from this machine (loopback or its own address), root and the system's accounts: a
// proxy in front of the page (nginx), a Prometheus on the same host, everyone's browsers through
// them. A person's own program here is held to a share by its user, as on the unix socket:
// otherwise one user's idle connections to 127.0.0.1 would keep the page and the scrapes out.
bool shares_the_whole(const std::string& peer) { return peer == "uid 0" || peer == "this host"; }

bool ConnectionShares::whole(const std::string& peer) const {
  return shares_the_whole(peer) || std::any_of(trusted_.begin(), trusted_.end(),
                                               [&peer](const IpNetwork& network) { return in_network(network, peer); });
}

bool ConnectionShares::admit(const std::string& peer) {
  if (open_ >= kMost) return false;
  if (peer == "uid 0")
    if (const auto root = by_peer_.find(peer); root != by_peer_.end() && root->second >= kMostForRoot) return false;
  const bool shares_whole = whole(peer);
  const std::string network = shares_whole ? std::string() : network_of(peer);  // a trusted peer: none of its /64's
  if (!shares_whole) {
    const auto it = by_peer_.find(peer);  // found, not made: a peer turned away leaves no entry
    const auto in = by_network_.find(network);
    if (open_by_others_ >= kMost - kKeptForTheWhole || (it != by_peer_.end() && it->second >= kPerPeer) ||
        (!network.empty() && in != by_network_.end() && in->second >= kPerNetwork))
      return false;
    ++open_by_others_;
  }
  ++open_;
  ++by_peer_[peer];
  if (!network.empty()) ++by_network_[network];
  return true;
}

void ConnectionShares::release(const std::string& peer) {
  --open_;
  const bool is_whole = whole(peer);
  if (!is_whole) --open_by_others_;
  if (--by_peer_[peer] == 0) by_peer_.erase(peer);
  if (const std::string network = is_whole ? std::string() : network_of(peer);
      !network.empty() && --by_network_[network] == 0)
    by_network_.erase(network);
}

std::string network_of(const std::string& peer) {
  in6_addr ip{};
  if (peer.find(':') == std::string::npos || ::inet_pton(AF_INET6, peer.c_str(), &ip) != 1) return "";
  if (IN6_IS_ADDR_V4MAPPED(&ip) || IN6_IS_ADDR_LOOPBACK(&ip) || IN6_IS_ADDR_LINKLOCAL(&ip)) return "";
  std::memset(&ip.s6_addr[8], 0, 8);
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(AF_INET6, &ip, text, sizeof text) == nullptr) return "";
  return std::string(text) + "/64";
}

std::string peer_of_address(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text) != nullptr ? text : "?";
  }
  if (address.ss_family != AF_INET6) return "?";
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  const in6_addr& ip = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
  // Each address is a peer: an IPv6 LAN's hosts share one /64 (ConnectionShares caps it apart).
  return ::inet_ntop(AF_INET6, &ip, text, sizeof text) != nullptr ? std::string(text) : "?";
}

void serve_http(int listener, const std::atomic<bool>& stopping, const HttpHandler& handler, bool keep_alive,
                const std::vector<IpNetwork>& trusted) {
  // Connections are served side by side, each on its thread: one that stalls (or many a user
  // opens) costs the others nothing, as far as ConnectionShares lets them in.
  std::mutex mutex;
  std::condition_variable ended;
  ConnectionShares shares(trusted);
  TurnAway turned_away;
  sockaddr_storage local{};
  socklen_t size = sizeof local;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&local), &size);
  const int family = local.ss_family;
  while (!stopping) {
    pollfd ready{.fd = listener, .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, 100) <= 0) continue;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string peer = peer_of(fd, family);
    bool served = false;
    {
      const std::lock_guard hold(mutex);
      served = shares.admit(peer);
    }
    if (!served) {
      turned_away.hand_over(fd);
      continue;
    }
    const auto release = [&mutex, &ended, &shares](const std::string& who) {
      const std::lock_guard hold(mutex);
      shares.release(who);
      ended.notify_all();
    };
    try {
      std::thread([&, fd, peer, release] {
        serve_connection(fd, family, stopping, handler, keep_alive);
        release(peer);
      }).detach();
    } catch (const std::system_error& e) {  // no thread to be had: this client is turned away
      spdlog::warn("cannot serve a connection: {}", e.what());
      ::close(fd);
      release(peer);
    }
  }
  // Every connection sees `stopping` within 0.1 s; none outlives this frame, which they use.
  std::unique_lock hold(mutex);
  ended.wait(hold, [&] { return shares.open() == 0; });
}

}  // namespace gpurun
