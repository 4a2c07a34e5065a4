#include "engine/unix_http.hpp"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>

#include "util/error.hpp"
#include "util/privileges.hpp"

namespace gpurun {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
using Socket = asio::local::stream_protocol::socket;

struct UnixHttpClient::State {
  asio::io_context io;
  Socket socket{io};
  boost::beast::flat_buffer buffer;
  bool connected = false;
};

namespace {

// The engine's list of every container on a busy host can be large; its inspect answers are not.
constexpr std::uint64_t kBodyLimit = 64ULL << 20;

}  // namespace

UnixHttpClient::UnixHttpClient(std::string socket_path, std::chrono::steady_clock::time_point deadline)
    : socket_path_(std::move(socket_path)), deadline_(deadline), state_(std::make_unique<State>()) {}

UnixHttpClient::~UnixHttpClient() = default;

HttpResponse UnixHttpClient::get(const std::string& target) {
  State& s = *state_;
  const auto fail = [&](const std::string& what) -> Error {
    error_code ignored;
    s.socket.close(ignored);
    s.connected = false;
    return Error(fmt::format("the Docker engine at {} {}", socket_path_, what));
  };

  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "docker");  // the engine wants a Host; docker's CLI sends a made-up one too
  request.set(http::field::user_agent, "gpurun");
  request.keep_alive(true);

  std::optional<http::response_parser<http::string_body>> parser;
  parser.emplace();
  parser->body_limit(kBodyLimit);
  std::optional<error_code> result;

  // Connect (once), write, read: asynchronously, so that the io_context's deadline can stop it.
  const auto read = [&] {
    http::async_read(s.socket, s.buffer, *parser, [&](error_code ec, std::size_t) { result = ec; });
  };
  const auto write = [&] {
    http::async_write(s.socket, request, [&](error_code ec, std::size_t) {
      if (ec) result = ec;
      else read();
    });
  };
  if (s.connected) {
    write();
  } else {
    // Under sudo the engine's socket is root's (docker group at most): connect as root, and only
    // that. asio calls connect(2) right here, so the raised rights end with this scope.
    const AsRoot as_root;
    s.socket.async_connect(asio::local::stream_protocol::endpoint(socket_path_), [&](error_code ec) {
      if (ec) result = ec;
      else {
        s.connected = true;
        write();
      }
    });
  }
  s.io.restart();
  s.io.run_until(deadline_);
  if (!result) {
    error_code ignored;
    s.socket.close(ignored);  // cancels what is pending; let it finish before the parser goes
    s.io.restart();
    s.io.run();
    throw fail("did not answer in time");
  }
  if (*result) {
    const std::string message = result->message();
    throw fail(s.connected ? fmt::format("broke off its answer to {}: {}", target, message)
                           : fmt::format("cannot be reached: {}", message));
  }
  http::response<http::string_body> response = parser->release();
  HttpResponse answer;
  answer.status = static_cast<int>(response.result_int());
  answer.api_version = std::string(response["API-Version"]);
  answer.body = std::move(response.body());
  if (!response.keep_alive()) {
    error_code ignored;
    s.socket.close(ignored);
    s.connected = false;  // the next get() connects again
  }
  return answer;
}

}  // namespace gpurun
