#include "http_loop.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdint>

namespace gpurun {

namespace http = boost::beast::http;

void serve_http(int listener, const std::atomic<bool>& stopping, const HttpHandler& handler) {
  boost::asio::io_context io;
  while (!stopping) {
    pollfd ready{.fd = listener, .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, 100) <= 0) continue;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const timeval limit{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    boost::asio::generic::stream_protocol::socket socket(io);
    boost::system::error_code error;
    socket.assign(boost::asio::generic::stream_protocol(address.ss_family, SOCK_STREAM), fd, error);
    if (error) {
      ::close(fd);
      continue;
    }
    boost::beast::flat_buffer buffer;
    for (;;) {  // the requests of one keep-alive connection
      http::request_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{64} * 1024);
      http::read(socket, buffer, parser, error);
      if (error) break;
      const auto& request = parser.get();
      const HttpReply reply = handler(fd, {.method = std::string(request.method_string()),
                                           .target = std::string(request.target()),
                                           .caller = std::string(request["X-Gpurun-Caller"])});
      http::response<http::string_body> response{static_cast<http::status>(reply.status), request.version()};
      response.set(http::field::content_type, reply.content_type);
      response.set(http::field::server, "gpurund");
      response.set("X-Content-Type-Options", "nosniff");
      response.keep_alive(request.keep_alive());
      response.body() = request.method() == http::verb::head ? std::string() : reply.body;
      response.prepare_payload();
      if (request.method() == http::verb::head) response.content_length(reply.body.size());
      http::write(socket, response, error);
      if (error || !response.keep_alive()) break;
    }
    socket.close(error);
  }
}

}  // namespace gpurun
