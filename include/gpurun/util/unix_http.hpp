#pragma once
// HTTP/1.1 GETs over a unix socket (the Docker Engine API's, the gpurun service's), with
// Boost.Beast: connections kept alive for a series of requests, all of them done by one deadline.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurun {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string note = {};  // the value of the peer's note_header, "" without one
};

// Who answers on the socket, for the errors: "the Docker engine", and what to add to a refused
// connection's message ("" for nothing).
struct HttpPeer {
  std::string name = "the Docker engine";
  std::string (*access_hint)(std::string_view error) = nullptr;
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
  std::string note_header = {};                              // a header of the answers to keep ("" none)
};

class UnixHttpClient {
 public:
  // Connects on the first request (or send_ahead). Every request must end by `deadline`.
  UnixHttpClient(std::string socket_path, std::chrono::steady_clock::time_point deadline, HttpPeer peer = {});
  ~UnixHttpClient();
  UnixHttpClient(const UnixHttpClient&) = delete;
  UnixHttpClient& operator=(const UnixHttpClient&) = delete;

  // Connects and sends GET `target` now, and returns without its answer: the peer works on it while
  // the caller does something else. The next get(), get_all() or get_each() reads that answer
  // where `target` is its first target; else it closes that connection unread. Does nothing once
  // the client has connections. Never waits (a full backlog is "not sent") and never throws:
  // where it cannot be sent, the next request connects anew and says why it cannot.
  void send_ahead(const std::string& target);

  // GET `target` ("/containers/json"). Throws Error when the socket cannot be reached, the
  // deadline passes or the answer is not HTTP; any status, 404 included, is returned.
  HttpResponse get(const std::string& target);

  // GET every target, up to `connections` at a time (the first one is get()'s connection, kept
  // alive), on one thread; the answers in the order of `targets`. Errors as get()'s: the first
  // failure ends them all.
  std::vector<HttpResponse> get_all(const std::vector<std::string>& targets, std::size_t connections);

  // The same, each answer handed to `answered` (with its index in `targets`) as it comes, once
  // its connection has asked for the next target: the caller reads one answer while the peer
  // works on the next. `answered` must not throw.
  void get_each(const std::vector<std::string>& targets, std::size_t connections,
                const std::function<void(std::size_t, HttpResponse&&)>& answered);

 private:
  struct State;
  std::string socket_path_;
  std::chrono::steady_clock::time_point deadline_;
  HttpPeer peer_;
  std::unique_ptr<State> state_;
};

}  // namespace gpurun
