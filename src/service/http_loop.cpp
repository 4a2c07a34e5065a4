#include "http_loop.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <cstdint>
#include <exception>

namespace gpurun {
namespace {

namespace http = boost::beast::http;
using Socket = boost::asio::generic::stream_protocol::socket;

// A client that stalls (or keeps an idle connection open) costs the others at most this long.
constexpr std::chrono::seconds kClientLimit{5};

// Runs `io` until the operation started on `socket` completes (`done`), `limit` passes or
// `stopping` is set (seen within 0.1 s); a late operation is cancelled. Blocking reads with
// SO_RCVTIMEO would not do: Asio waits again when the timeout fires.
void finish(boost::asio::io_context& io, Socket& socket, const bool& done, const std::atomic<bool>& stopping) {
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + kClientLimit;
  while (!done && !stopping && std::chrono::steady_clock::now() < deadline) io.run_for(std::chrono::milliseconds(100));
  if (!done) {
    boost::system::error_code ignored;
    socket.cancel(ignored);
    io.restart();
    io.run();  // the cancelled operation's handler: operation_aborted
  }
}

HttpReply answer(const HttpHandler& handler, int fd, const http::request<http::string_body>& request) {
  try {
    return handler(fd, {.method = std::string(request.method_string()),
                        .target = std::string(request.target()),
                        .caller = std::string(request["X-Gpurun-Caller"])});
  } catch (const std::exception& e) {  // never out of the listener's thread: that would end gpurund
    spdlog::error("answering {}: {}", std::string(request.target()).substr(0, 200), e.what());
    return {
        .status = 500, .body = "{\"message\": \"the service failed to answer\"}", .content_type = "application/json"};
  }
}

}  // namespace

void serve_http(int listener, const std::atomic<bool>& stopping, const HttpHandler& handler, bool keep_alive) {
  boost::asio::io_context io;
  while (!stopping) {
    pollfd ready{.fd = listener, .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, 100) <= 0) continue;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    Socket socket(io);
    boost::system::error_code error;
    socket.assign(boost::asio::generic::stream_protocol(address.ss_family, SOCK_STREAM), fd, error);
    if (error) {
      ::close(fd);
      continue;
    }
    boost::beast::flat_buffer buffer;
    while (!stopping) {  // the requests of one keep-alive connection
      http::request_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{64} * 1024);
      bool done = false;
      http::async_read(socket, buffer, parser, [&](boost::system::error_code e, std::size_t) {
        error = e;
        done = true;
      });
      finish(io, socket, done, stopping);
      if (error || !done) break;
      const auto& request = parser.get();
      const HttpReply reply = answer(handler, fd, request);
      http::response<http::string_body> response{static_cast<http::status>(reply.status), request.version()};
      response.set(http::field::content_type, reply.content_type);
      response.set(http::field::server, "gpurund");
      response.set("X-Content-Type-Options", "nosniff");
      for (const auto& [name, value] : reply.headers) response.set(name, value);
      response.keep_alive(keep_alive && request.keep_alive());
      response.body() = request.method() == http::verb::head ? std::string() : reply.body;
      response.prepare_payload();
      if (request.method() == http::verb::head) response.content_length(reply.body.size());
      done = false;
      http::async_write(socket, response, [&](boost::system::error_code e, std::size_t) {
        error = e;
        done = true;
      });
      finish(io, socket, done, stopping);
      if (error || !done || !response.keep_alive()) break;
    }
    socket.close(error);
  }
}

}  // namespace gpurun
