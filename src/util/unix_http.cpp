#include "gpurun/util/unix_http.hpp"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "gpurun/util/error.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/stop_request.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// The engine's list of every container on a busy host can be large; its inspect answers are not.
constexpr std::uint64_t kBodyLimit = 64ULL << 20;

struct Connection {
  // Room for a whole inspect answer at once: an empty buffer makes Beast read 512 bytes a call (a
  // launch made a hundred reads, and as many epoll_waits, for seven inspects).
  explicit Connection(asio::io_context& io) : socket(io) { buffer.reserve(std::size_t{64} * 1024); }
  void close() {
    error_code ignored;
    socket.close(ignored);  // cancels what is pending on it
    buffer.clear();
    connected = false;
  }
  asio::local::stream_protocol::socket socket;
  boost::beast::flat_buffer buffer;
  bool connected = false;
};

// One GET and the parser of its answer, alive until the answer is read.
struct Exchange {
  Exchange(const std::string& target, const HttpPeer& peer) : request{http::verb::get, target, 11} {
    request.set(http::field::host, "localhost");  // the engine wants a Host; docker's CLI sends a made-up one too
    request.set(http::field::user_agent, "gpurun");
    for (const auto& [name, value] : peer.headers) request.set(name, value);
    request.keep_alive(true);
    parser.body_limit(kBodyLimit);
  }
  http::request<http::empty_body> request;
  http::response_parser<http::string_body> parser;
};

// The connection's own socket, close-on-exec (asio's open() leaves the flag off): no program gpurun
// starts (nvidia-smi, docker) holds a connection to the engine, which under sudo is root's.
void open_socket(Connection& c, error_code& error) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = error_code(errno, boost::system::system_category());
    return;
  }
  c.socket.assign(asio::local::stream_protocol(), fd, error);
  if (error) ::close(fd);
}

}  // namespace

struct UnixHttpClient::State {
  asio::io_context io;
  std::vector<std::unique_ptr<Connection>> connections;  // [0] is get()'s
  std::optional<std::string> sent_ahead;                 // on connections[0], its answer not read yet
};

UnixHttpClient::UnixHttpClient(std::string socket_path, std::chrono::steady_clock::time_point deadline, HttpPeer peer)
    : socket_path_(std::move(socket_path)),
      deadline_(deadline),
      peer_(std::move(peer)),
      state_(std::make_unique<State>()) {}

UnixHttpClient::~UnixHttpClient() = default;

void UnixHttpClient::send_ahead(const std::string& target) {
  State& s = *state_;
  if (!s.connections.empty()) return;
  try {
    auto c = std::make_unique<Connection>(s.io);
    error_code error;
    open_socket(*c, error);
    if (!error) c->socket.non_blocking(true, error);  // the write below says would_block, never waits
    if (error) return;
    // connect(2) itself: where the engine's backlog is full it fails with EAGAIN, and asio's
    // connect would then wait for the socket with no deadline. Not sent, then.
    const asio::local::stream_protocol::endpoint endpoint(socket_path_);
    int connected = -1;
    {
      const AsRoot as_root;  // as get_each connects: the socket may be root's
      connected = ::connect(c->socket.native_handle(), endpoint.data(), static_cast<socklen_t>(endpoint.size()));
    }
    if (connected != 0) return;
    Exchange x(target, peer_);
    http::write(c->socket, x.request, error);  // a few dozen bytes into an empty socket: at once
    if (error) return;
    c->connected = true;
    s.connections.push_back(std::move(c));
    s.sent_ahead = target;
  } catch (const std::exception&) {
    // Not sent (no memory, or the rights could not be raised): get_each connects and says why.
  }
}

HttpResponse UnixHttpClient::get(const std::string& target) { return std::move(get_all({target}, 1).front()); }

std::vector<HttpResponse> UnixHttpClient::get_all(const std::vector<std::string>& targets, std::size_t connections) {
  std::vector<HttpResponse> answers(targets.size());
  get_each(targets, connections, [&](std::size_t i, HttpResponse&& answer) { answers[i] = std::move(answer); });
  return answers;
}

void UnixHttpClient::get_each(const std::vector<std::string>& targets, std::size_t connections,
                              const std::function<void(std::size_t, HttpResponse&&)>& answered) {
  // The kernel's limit (sun_path, 108 bytes with its NUL): Asio's words for a longer one name
  // neither the path nor what to do.
  constexpr std::size_t kLongestSocketPath = sizeof(sockaddr_un::sun_path) - 1;
  if (socket_path_.size() > kLongestSocketPath)
    throw Error(
        fmt::format("{}'s socket path {} is {} bytes, longer than the {} a unix socket's path may be; "
                    "name it by a shorter path (a symlink to its directory will do)",
                    peer_.name, text::printable(socket_path_, 200), socket_path_.size(), kLongestSocketPath));
  State& s = *state_;
  if (s.sent_ahead && (targets.empty() || targets.front() != *s.sent_ahead)) {
    s.connections.front()->close();  // its answer is to another request: never read as this one's
    s.sent_ahead.reset();
  }
  const std::size_t lanes = std::clamp<std::size_t>(targets.size(), 1, std::max<std::size_t>(connections, 1));
  while (s.connections.size() < lanes) s.connections.push_back(std::make_unique<Connection>(s.io));

  std::vector<std::optional<Exchange>> exchanges(lanes);
  std::size_t next = 0;
  std::size_t done = 0;
  struct Failure {  // (read through the optional below, which cppcheck does not follow)
    // cppcheck-suppress unusedStructMember
    std::string target;
    error_code error;
    // cppcheck-suppress unusedStructMember
    bool connected;
  };
  std::optional<Failure> failure;
  // Past the deadline (or a stop): what the drain below runs of answers already read is dropped,
  // and starts no next exchange, which would run with no deadline at all.
  bool ending = false;

  // Each lane connects (once), writes, reads, then takes the next target, until none is left or
  // one failed. Asynchronous, so that the io_context's deadline can stop them all.
  // (The handlers hold the lane's connection and exchange by pointer: both outlive them.)
  std::function<void(std::size_t)> start = [&](std::size_t lane) {
    if (ending || failure || next == targets.size()) return;
    const std::size_t i = next++;
    Connection* c = s.connections[lane].get();
    Exchange* x = &exchanges[lane].emplace(targets[i], peer_);
    const auto finish = [&, c, x, lane, i](error_code ec) {
      if (ending) return;
      if (ec) {
        if (!failure) failure = Failure{targets[i], ec, c->connected};
        for (const auto& other : s.connections) other->close();  // the others end at once
        return;
      }
      http::response<http::string_body> response = x->parser.release();
      ++done;
      if (!response.keep_alive()) c->close();  // the lane's next request connects again
      start(lane);                             // (which replaces *x)
      std::string note = peer_.note_header.empty() ? "" : std::string(response[peer_.note_header]);
      answered(i, {static_cast<int>(response.result_int()), std::move(response.body()), std::move(note)});
    };
    const auto write = [c, x, finish] {
      http::async_write(c->socket, x->request, [c, x, finish](error_code ec, std::size_t) {
        // Not connected after all: a peer whose backlog was full, which asio's connect took for done.
        if (ec == asio::error::not_connected) c->connected = false;
        if (ec) return finish(ec);
        http::async_read(c->socket, c->buffer, x->parser,
                         [finish](error_code read_ec, std::size_t) { finish(read_ec); });
      });
    };
    if (lane == 0 && s.sent_ahead == targets[i]) {  // asked already: its answer only
      s.sent_ahead.reset();
      return http::async_read(c->socket, c->buffer, x->parser,
                              [finish](error_code read_ec, std::size_t) { finish(read_ec); });
    }
    if (c->connected) return write();
    // Under sudo the engine's socket is root's (docker group at most): connect as root, and only
    // that. asio calls connect(2) right here, so the raised rights end with this scope.
    const AsRoot as_root;
    if (!c->socket.is_open()) {
      error_code error;
      open_socket(*c, error);
      if (error) return finish(error);
    }
    c->socket.async_connect(asio::local::stream_protocol::endpoint(socket_path_), [c, write, finish](error_code ec) {
      if (ec) return finish(ec);
      c->connected = true;
      write();
    });
  };
  for (std::size_t lane = 0; lane < lanes; ++lane) start(lane);
  s.io.restart();
  if (watched_stop_fd() < 0) {
    s.io.run_until(deadline_);
  } else {  // gpurund: a stop request ends the exchanges as the deadline does, within 0.1 s
    using Clock = std::chrono::steady_clock;
    while (!s.io.stopped() && Clock::now() < deadline_ && !stop_seen())
      s.io.run_until(std::min(deadline_, Clock::now() + std::chrono::milliseconds(100)));
  }
  if (done == targets.size()) return;

  const bool timed_out = !failure;  // (closing below fails what is pending: not the cause)
  ending = true;
  for (const auto& c : s.connections) c->close();  // let what is pending end before the exchanges go
  s.io.restart();
  s.io.run();
  if (timed_out && stop_seen()) throw Error(fmt::format("{} at {}: asked to stop", peer_.name, socket_path_));
  if (timed_out) throw Error(fmt::format("{} at {} did not answer in time", peer_.name, socket_path_));
  const std::string message = failure->error.message();
  const std::string hint = peer_.access_hint != nullptr ? peer_.access_hint(message) : "";
  throw Error(fmt::format("{} at {} {}", peer_.name, socket_path_,
                          failure->connected ? fmt::format("broke off its answer to {}: {}", failure->target, message)
                                             : fmt::format("cannot be reached: {}{}", message, hint)));
}

}  // namespace gpurun
