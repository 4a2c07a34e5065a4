// Unit tests for the service's accept-and-answer loop (src/service/http_loop.hpp) over a real
// unix socket: a large answer reaches a client that reads it slowly.
#include "http_loop.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "gpurun/util/fd.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;

sockaddr_un address_of(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  return address;
}

// A year of history on a slow link: 2 MiB read at 256 KiB a second takes 8 s, more than the 5 s a
// stalled client is given; it is not stalled, and gets the whole answer.
TEST(ServeHttp, ALargeAnswerReachesAClientThatReadsItSlowly) {
  const test::TempDir dir;
  const std::string path = dir / "s.sock";
  const Fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address = address_of(path);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  const std::string body(std::size_t{2} << 20, 'x');
  std::atomic<bool> stopping{false};
  std::thread server([&] {
    serve_http(
        listener.get(), stopping, [&](int, const HttpRequest&) { return HttpReply{.status = 200, .body = body}; },
        false);
  });
  const Fd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  const std::string request = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(client.get(), request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string answer;
  char chunk[65536];
  while (true) {
    std::this_thread::sleep_for(250ms);
    const ssize_t n = ::read(client.get(), chunk, sizeof chunk);
    if (n <= 0) break;
    answer.append(chunk, static_cast<std::size_t>(n));
  }
  stopping = true;
  server.join();
  ASSERT_NE(answer.find("\r\n\r\n"), std::string::npos);
  EXPECT_EQ(answer.substr(answer.find("\r\n\r\n") + 4).size(), body.size()) << "the answer was cut";
}

}  // namespace
}  // namespace gpurun
