// Unit tests for gpurund's TCP listener (gpurun/service/web_server.hpp): the --listen address, and
// /metrics answered over a real loopback connection.
#include "gpurun/service/web_server.hpp"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "gpurun/util/accounts.hpp"
#include "http_loop.hpp"
#include "support/test_support.hpp"
#include "web_routes.hpp"

namespace gpurun {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseListenAddress, TakesHostAndPortAndBracketedIpv6) {
  const ListenAddress v4 = parse_listen_address("127.0.0.1:9400");
  EXPECT_EQ(v4.host, "127.0.0.1");
  EXPECT_EQ(v4.port, "9400");
  const ListenAddress v6 = parse_listen_address("[::1]:0");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, "0");
  EXPECT_EQ(parse_listen_address("localhost:9400").host, "localhost");
}

TEST(ParseListenAddress, RefusesWhatIsNotHostColonPortSayingWhatToType) {
  for (const char* bad :
       {"9400", ":9400", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536", "::1:9400", "[::1:9400", "127.0.0.1:-1"}) {
    const test::CaughtError error = test::caught_error([&] { parse_listen_address(bad); });
    EXPECT_THAT(error.message, HasSubstr("127.0.0.1:9400")) << bad;
  }
}

// GET `path` from 127.0.0.1:port, for `host`; the whole response.
std::string get(int port, const std::string& path, const std::string& host = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return response;
}

TEST(WebServer, AnswersMetricsFromTheLastSampleAndNothingElse) {
  ServedRuns runs;
  runs.metrics.last_sample_ok = true;
  const WebServer server("127.0.0.1:0", runs, {});
  ASSERT_GT(server.port(), 0);
  const std::string metrics = get(server.port(), "/metrics");
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  EXPECT_THAT(metrics, HasSubstr("\ngpurun_up{Hostname=\""));
  EXPECT_THAT(get(server.port(), "/other"), StartsWith("HTTP/1.1 404 Not Found\r\n"));
}

// A page of another site whose name it rebinds to this address sends that name: refused.
TEST(WebServer, AnswersOnlyForItsOwnNamesAndAddresses) {
  ServedRuns runs;
  ServerSettings settings;
  settings.web_names = {"gpus.lab.example.org"};
  const WebServer server("127.0.0.1:0", runs, settings);
  const std::string port = std::to_string(server.port());
  const std::vector<std::string> ours{"127.0.0.1:" + port, "localhost:" + port, "GPUS.lab.example.org", "[::1]:" + port,
                                      host_name() + ":" + port};
  for (const std::string& host : ours)
    EXPECT_THAT(get(server.port(), "/metrics", host), StartsWith("HTTP/1.1 200 OK\r\n")) << host;
  const std::string refused = get(server.port(), "/api/runs", "attacker.example:" + port);
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 421 Misdirected Request\r\n"));
  EXPECT_THAT(refused, HasSubstr("\"web_names\""));
  EXPECT_THAT(get(server.port(), "/", "gpus.lab.example.org.evil.example"), StartsWith("HTTP/1.1 421"));
}

TEST(PeerOfAddress, AnIpv6PeerIsItsSlash64AndAnIpv4OneItsAddress) {
  const auto peer = [](int family, const char* text) {
    sockaddr_storage address{};
    address.ss_family = static_cast<sa_family_t>(family);
    // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    void* ip = family == AF_INET6 ? static_cast<void*>(&reinterpret_cast<sockaddr_in6&>(address).sin6_addr)
                                  : static_cast<void*>(&reinterpret_cast<sockaddr_in&>(address).sin_addr);
    // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
    EXPECT_EQ(::inet_pton(family, text, ip), 1) << text;
    return peer_of_address(address);
  };
  EXPECT_EQ(peer(AF_INET6, "2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(peer(AF_INET6, "2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
  EXPECT_EQ(peer(AF_INET6, "::1"), "::1");
  EXPECT_EQ(peer(AF_INET6, "fe80::1:2"), "fe80::1:2");
  EXPECT_EQ(peer(AF_INET6, "::ffff:10.0.0.7"), "::ffff:10.0.0.7");
  EXPECT_EQ(peer(AF_INET, "10.0.0.7"), "10.0.0.7");
}

TEST(AnswersFor, IpAddressesLocalhostAndTheGivenNames) {
  const std::vector<std::string> names{"dgx1", "gpus.lab.example.org."};
  for (const char* host : {"", "10.0.0.7", "10.0.0.7:9400", "[fe80::1]:9400", "localhost", "a.localhost:80", "DGX1",
                           "dgx1.", "gpus.lab.example.org:9400", "gpus.lab.example.org.:9400"})
    EXPECT_TRUE(answers_for(host, names)) << host;
  for (const char* host : {"dgx2", "dgx1.evil.example", "10.0.0.7.evil.example", "evil.example"})
    EXPECT_FALSE(answers_for(host, names)) << host;
}

// A proxy may send the absolute form (RFC 9112, 3.2.2): its path is what is asked, query kept.
TEST(WebServer, AnAbsoluteFormTargetIsItsPathAndQuery) {
  ServedRuns runs;
  const WebServer server("127.0.0.1:0", runs, {});
  EXPECT_THAT(get(server.port(), "http://lab.example/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(get(server.port(), "http://lab.example?refresh=30"), HasSubstr(R"(<body data-refresh="30">)"));
  EXPECT_THAT(get(server.port(), "http://lab.example/?refresh=30"), HasSubstr(R"(<body data-refresh="30">)"));
  EXPECT_THAT(get(server.port(), "http://lab.example"), HasSubstr(R"(<body data-refresh="5">)"));
}

// nginx in front of the page and a Prometheus on the same host are all 127.0.0.1: loopback is
// not held to one peer's share of four.
TEST(WebServer, LoopbackPeersShareTheWholeListener) {
  ServedRuns runs;
  runs.metrics.last_sample_ok = true;
  const WebServer server("127.0.0.1:0", runs, {});
  std::vector<int> silent;
  for (int i = 0; i < 6; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(server.port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    silent.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all six accepted, saying nothing
  EXPECT_THAT(get(server.port(), "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  for (const int fd : silent) ::close(fd);
}

TEST(WebServer, AnAddressInUseIsRefusedWithTheReason) {
  ServedRuns runs;
  const WebServer first("127.0.0.1:0", runs, {});
  const test::CaughtError error =
      test::caught_error([&] { const WebServer second("127.0.0.1:" + std::to_string(first.port()), runs, {}); });
  EXPECT_THAT(error.message, HasSubstr("cannot listen on 127.0.0.1:"));
  EXPECT_THAT(error.message, HasSubstr("in use"));
}

}  // namespace
}  // namespace gpurun
