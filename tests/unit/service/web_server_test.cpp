// Unit tests for gpurund's TCP listener (gpurun/service/web_server.hpp): the --listen address, and
// /metrics answered over a real loopback connection.
#include "gpurun/service/web_server.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "gpurun/util/accounts.hpp"
#include "gpurun/util/ip_network.hpp"
#include "http_loop.hpp"
#include "loopback_owner.hpp"
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

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// `request` sent whole to 127.0.0.1:port; the whole response.
std::string send_whole(int port, const std::string& request) {
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
  EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return response;
}

// GET `path` from 127.0.0.1:port, for `host`; the whole response.
std::string get(int port, const std::string& path, const std::string& host = "127.0.0.1") {
  return send_whole(port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
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
  // An absolute-form target names its host itself, whatever the Host header says (RFC 9112, 3.2.2).
  EXPECT_THAT(send_whole(server.port(),
                         "GET http://attacker.example/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         "Connection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 421"));
  EXPECT_THAT(send_whole(server.port(),
                         "GET http://gpus.lab.example.org/metrics HTTP/1.1\r\nHost: x\r\n"
                         "Connection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 200"));
}

// RFC 9112, 3.2: an HTTP/1.1 request needs one Host, and no request may carry two (the check of
// names would read one of them). HTTP/1.0 may leave it out.
TEST(WebServer, AnHttp11RequestWithoutAHostOrWithTwoIsRefused) {
  ServedRuns runs;
  const WebServer server("127.0.0.1:0", runs, {});
  EXPECT_THAT(send_whole(server.port(), "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 400 Bad Request"));
  const std::string two = send_whole(server.port(),
                                     "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
                                     "Connection: close\r\n\r\n");
  EXPECT_THAT(two, StartsWith("HTTP/1.1 400 Bad Request"));
  EXPECT_THAT(two, HasSubstr("more than one Host header"));
  EXPECT_THAT(send_whole(server.port(), "GET /metrics HTTP/1.0\r\n\r\n"), StartsWith("HTTP/1.0 200 OK"));
}

// Headers over Beast's 8 KB: 431, said (read by a client that sent 200 KB of them).
TEST(WebServer, AnOversizedRequestIsRefusedWith431) {
  ServedRuns runs;
  const WebServer server("127.0.0.1:0", runs, {});
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(200'000, 'a') + "\r\n\r\n";
  EXPECT_THAT(send_whole(server.port(), request), StartsWith("HTTP/1.1 431 Request Header Fields Too Large"));
}

TEST(PeerOfAddress, APeerIsItsAddressAndAnIpv6OnesNetworkItsSlash64) {
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
  EXPECT_EQ(peer(AF_INET6, "2001:db8:1:2:aaaa::1"), "2001:db8:1:2:aaaa::1");
  EXPECT_EQ(network_of(peer(AF_INET6, "2001:db8:1:2:aaaa::1")), "2001:db8:1:2::/64");
  EXPECT_EQ(network_of(peer(AF_INET6, "2001:db8:1:2:bbbb:cccc:dddd:eeee")), "2001:db8:1:2::/64");
  EXPECT_EQ(network_of("::1"), "");
  EXPECT_EQ(network_of("fe80::1:2"), "");
  EXPECT_EQ(network_of("10.0.0.7"), "");
  EXPECT_EQ(network_of("uid 1000 on this host"), "");
  EXPECT_EQ(peer(AF_INET6, "::1"), "::1");
  EXPECT_EQ(peer(AF_INET6, "fe80::1:2"), "fe80::1:2");
  EXPECT_EQ(peer(AF_INET6, "::ffff:10.0.0.7"), "::ffff:10.0.0.7");
  EXPECT_EQ(peer(AF_INET, "10.0.0.7"), "10.0.0.7");
}

// An IPv6 LAN's hosts share one /64: each its own 4 connections (a lab of ten browsers kept alive
// were 4 in all), and the /64 as a whole 16 (one host may hold every address of it).
TEST(ConnectionShares, EachIpv6AddressIsAPeerAndItsSlash64IsCappedApart) {
  ConnectionShares shares;
  for (int host = 1; host <= 4; ++host)
    for (int i = 0; i < ConnectionShares::kPerPeer; ++i)
      EXPECT_TRUE(shares.admit(fmt::format("2001:db8:1:2::{}", host))) << host;
  EXPECT_FALSE(shares.admit("2001:db8:1:2::1"));   // its own 4
  EXPECT_FALSE(shares.admit("2001:db8:1:2::99"));  // the /64's 16
  EXPECT_TRUE(shares.admit("2001:db8:1:3::1"));    // another /64
  shares.release("2001:db8:1:2::1");
  EXPECT_TRUE(shares.admit("2001:db8:1:2::99"));
}

// A Prometheus or the page's proxy on another host, named in trusted_peers, shares the whole
// listener as this host's own services do: six peers' idle connections no longer keep it out.
TEST(ConnectionShares, ATrustedPeerSharesTheWhole) {
  ConnectionShares shares({*parse_ip_network("10.1.0.0/16"), *parse_ip_network("2001:db8::7")});
  for (int peer = 1; peer <= 6; ++peer)
    for (int i = 0; i < ConnectionShares::kPerPeer; ++i) EXPECT_TRUE(shares.admit(fmt::format("10.9.0.{}", peer)));
  EXPECT_FALSE(shares.admit("10.9.0.7"));                                  // the others' 24 are taken
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(shares.admit("10.1.2.3")) << i;  // past a peer's 4
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(shares.admit("2001:db8::7")) << i;
  EXPECT_FALSE(shares.admit("2001:db8::7"));  // all 32 taken
  shares.release("10.1.2.3");
  EXPECT_EQ(shares.open(), 31);
  ConnectionShares alone({*parse_ip_network("2001:db8::7")});
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(alone.admit("2001:db8::7")) << i;  // past its /64's 16 too
  EXPECT_TRUE(alone.admit("2001:db8::8"));                                    // and its neighbours' share untouched
}

TEST(IpNetwork, AddressesAndNetworksAsAnAdminWritesThem) {
  const auto net = [](const char* text) { return parse_ip_network(text); };
  EXPECT_TRUE(in_network(*net("10.1.0.0/16"), "10.1.255.4"));
  EXPECT_FALSE(in_network(*net("10.1.0.0/16"), "10.2.0.1"));
  EXPECT_TRUE(in_network(*net("10.0.0.5"), "10.0.0.5"));
  EXPECT_FALSE(in_network(*net("10.0.0.5"), "10.0.0.6"));
  EXPECT_TRUE(in_network(*net("10.0.0.0/8"), "::ffff:10.3.0.1"));    // an IPv4-mapped peer
  EXPECT_TRUE(in_network(*net("::ffff:10.0.0.0/104"), "10.3.0.1"));  // a mapped network, in IPv6's bits
  EXPECT_FALSE(in_network(*net("::ffff:10.0.0.0/104"), "11.0.0.1"));
  EXPECT_FALSE(net("::ffff:10.0.0.0/8").has_value());
  EXPECT_TRUE(in_network(*net("2001:db8::/32"), "2001:db8:1:2::9"));
  EXPECT_FALSE(in_network(*net("2001:db8::/32"), "10.0.0.1"));
  EXPECT_FALSE(in_network(*net("10.0.0.0/8"), "uid 1000 on this host"));
  EXPECT_TRUE(in_network(*net("0.0.0.0/0"), "192.168.1.1"));
  for (const char* bad : {"", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/x", "host.example", "2001:db8::/129", "10.0.0"})
    EXPECT_FALSE(net(bad).has_value()) << bad;
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
  ServerSettings settings;
  settings.web_names = {"lab.example"};  // the target's host, which is checked instead of Host's
  const WebServer server("127.0.0.1:0", runs, settings);
  EXPECT_THAT(get(server.port(), "http://lab.example/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(get(server.port(), "http://lab.example?refresh=30"), HasSubstr(R"(<body data-refresh="30">)"));
  EXPECT_THAT(get(server.port(), "http://lab.example/?refresh=30"), HasSubstr(R"(<body data-refresh="30">)"));
  EXPECT_THAT(get(server.port(), "http://lab.example"), HasSubstr(R"(<body data-refresh="5">)"));
}

// nginx in front of the page and a Prometheus on the same host are all 127.0.0.1, under system
// accounts (or root, as here): they are not held to one peer's share of four.
TEST(WebServer, LoopbackPeersOfTheSystemShareTheWholeListener) {
  if (::geteuid() >= first_user_uid()) GTEST_SKIP() << "needs root or a system account";
  ServedRuns runs;
  runs.metrics.last_sample_ok = true;
  const WebServer server("127.0.0.1:0", runs, {});
  std::vector<int> silent;
  for (int i = 0; i < 6; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in address = loopback(server.port());
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    silent.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all six accepted, saying nothing
  EXPECT_THAT(get(server.port(), "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  for (const int fd : silent) ::close(fd);
}

// Waits up to 3 s for one byte on `fd` (a child's word that it is ready); whether it came.
bool heard_from(int fd) {
  pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
  char byte = 0;
  return ::poll(&ready, 1, 3000) == 1 && ::read(fd, &byte, 1) == 1;
}

// A person's program over loopback is held to four connections by its user: before, every local
// user shared 127.0.0.1's whole, and one who held 32 idle connections kept the lab's page and the
// scrapes out for everyone.
TEST(WebServer, APersonOnLoopbackHoldsFourConnectionsAndKeepsNobodyElseOut) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  ServedRuns runs;
  runs.metrics.last_sample_ok = true;
  const WebServer server("127.0.0.1:0", runs, {});
  const sockaddr_in address = loopback(server.port());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {  // no allocation here: the parent has other threads
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    static int fds[40];
    for (int& fd : fds) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) ::_exit(3);
    }
    (void)::write(ready[1], "r", 1);
    ::sleep(4);  // held, saying nothing
    ::_exit(0);
  }
  ::close(ready[1]);
  EXPECT_TRUE(heard_from(ready[0])) << "the other user's 40 connections were not made";
  ::close(ready[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all of them accepted or turned away
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_THAT(get(server.port(), "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(1));
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
}

// The same seen from a person's account (a developer's run of the suite): the fifth is turned away.
TEST(WebServer, APersonOnLoopbackIsTurnedAwayPastFourConnections) {
  if (::geteuid() < first_user_uid()) GTEST_SKIP() << "root and the system's accounts share the whole";
  ServedRuns runs;
  runs.metrics.last_sample_ok = true;
  const WebServer server("127.0.0.1:0", runs, {});
  std::vector<int> silent;
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in address = loopback(server.port());
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    silent.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_THAT(get(server.port(), "/metrics"), StartsWith("HTTP/1.1 503"));
  for (const int fd : silent) ::close(fd);
}

// A listener on `family`'s any-address (an IPv6 one taking IPv4 too) or `bind_to`; its port.
int listen_on(int listener, const sockaddr_storage& bind_to, socklen_t size) {
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::bind(listener, reinterpret_cast<const sockaddr*>(&bind_to), size) != 0 || ::listen(listener, 4) != 0) return -1;
  sockaddr_storage bound{};
  socklen_t bound_size = sizeof bound;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &bound_size);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(bound).sin6_port
                                           : reinterpret_cast<const sockaddr_in&>(bound).sin_port);
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
}

// Accepts, on `listener`, the connection a child makes to `target` as `user` (root: as nobody);
// what local_peer says of it. Fails the test where no connection comes within 3 s.
// `source`: the address the child binds first, where given (another of the machine's own).
std::optional<LocalPeer> peer_seen(int listener, sockaddr_storage target, socklen_t size, uid_t user,
                                   const std::optional<sockaddr_in>& source = std::nullopt) {
  int ready[2];
  if (::pipe(ready) != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child == 0) {
    if (user != ::geteuid() && (::setgid(user) != 0 || ::setuid(user) != 0)) ::_exit(2);
    const int fd = ::socket(target.ss_family, SOCK_STREAM, 0);
    // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (source && ::bind(fd, reinterpret_cast<const sockaddr*>(&*source), sizeof *source) != 0) ::_exit(4);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), size) != 0) ::_exit(3);
    // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
    (void)::write(ready[1], "r", 1);
    ::sleep(4);
    ::_exit(0);
  }
  ::close(ready[1]);
  std::optional<LocalPeer> seen;
  if (heard_from(ready[0])) {
    const int connection = ::accept(listener, nullptr, nullptr);
    if (connection >= 0) seen = local_peer(connection);
    ::close(connection);
  } else {
    ADD_FAILURE() << "the child did not connect";
  }
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  return seen;
}

// The user of a connection's other end on this machine, as the kernel tells it: over IPv4, over
// an IPv6 listener that takes IPv4 connections (their peers ::ffff:127.0.0.1), over ::1, and to the
// machine's own non-loopback address.
TEST(LocalPeer, IsTheUserWhoseSocketConnected) {
  const uid_t other = ::geteuid() == 0 ? 65534 : ::geteuid();
  const auto seen_over = [&](int family, const sockaddr_storage& bind_to, socklen_t bind_size, sockaddr_storage target,
                             socklen_t target_size, bool dual_stack,
                             const std::optional<sockaddr_in>& source = std::nullopt) {
    const int listener = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) return std::optional<std::optional<LocalPeer>>();  // no such family here
    int v6only = dual_stack ? 0 : 1;
    if (family == AF_INET6) ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
    const int port = listen_on(listener, bind_to, bind_size);
    std::optional<std::optional<LocalPeer>> seen;
    if (port > 0) {
      // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
      if (target.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in&>(target).sin_port = htons(static_cast<std::uint16_t>(port));
      else
        reinterpret_cast<sockaddr_in6&>(target).sin6_port = htons(static_cast<std::uint16_t>(port));
      // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
      seen = peer_seen(listener, target, target_size, other, source);
    }
    ::close(listener);
    return seen;
  };
  const auto storage = [](const auto& address) {
    sockaddr_storage out{};
    std::memcpy(&out, &address, sizeof address);
    return out;
  };
  const sockaddr_in v4 = loopback(0);
  sockaddr_in6 any6{};
  any6.sin6_family = AF_INET6;
  sockaddr_in6 v6 = any6;
  v6.sin6_addr = in6addr_loopback;

  const auto over_v4 = seen_over(AF_INET, storage(v4), sizeof v4, storage(v4), sizeof v4, false);
  ASSERT_TRUE(over_v4 && *over_v4);
  EXPECT_EQ((*over_v4)->owner, std::optional<uid_t>(other));
  if (const auto mapped = seen_over(AF_INET6, storage(any6), sizeof any6, storage(v4), sizeof v4, true)) {
    ASSERT_TRUE(*mapped) << "an IPv4 peer of an IPv6 listener";
    EXPECT_EQ((*mapped)->owner, std::optional<uid_t>(other));
  }
  if (const auto over_v6 = seen_over(AF_INET6, storage(v6), sizeof v6, storage(v6), sizeof v6, false)) {
    ASSERT_TRUE(*over_v6) << "::1";
    EXPECT_EQ((*over_v6)->owner, std::optional<uid_t>(other));
  }
  // The machine's own address, where it has one besides loopback: a program here using its name.
  ifaddrs* interfaces = nullptr;
  std::optional<sockaddr_in> own;
  if (::getifaddrs(&interfaces) == 0) {
    for (const ifaddrs* i = interfaces; i != nullptr && !own; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      sockaddr_in address{};
      std::memcpy(&address, i->ifa_addr, sizeof address);
      if ((ntohl(address.sin_addr.s_addr) >> 24) != 127) own = address;
    }
    ::freeifaddrs(interfaces);
  }
  if (own) {
    sockaddr_in any4{};
    any4.sin_family = AF_INET;
    const auto over_own = seen_over(AF_INET, storage(any4), sizeof any4, storage(*own), sizeof *own, false);
    ASSERT_TRUE(over_own && *over_own) << "the machine's own address";
    EXPECT_EQ((*over_own)->owner, std::optional<uid_t>(other));
    // To loopback from that address (bound as the source): still this machine's user, not a peer
    // of its own address with four connections more for each address the machine has.
    sockaddr_in from = *own;
    from.sin_port = 0;
    const auto from_own = seen_over(AF_INET, storage(v4), sizeof v4, storage(v4), sizeof v4, false, from);
    ASSERT_TRUE(from_own && *from_own) << "to loopback from the machine's own address";
    EXPECT_EQ((*from_own)->owner, std::optional<uid_t>(other));
  }
}

TEST(LocalPeer, APeerElsewhereHasNone) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_EQ(local_peer(pair[0]), std::nullopt);
  ::close(pair[0]);
  ::close(pair[1]);
}

TEST(FirstUserUid, IsLoginDefsUidMinOrDebiansDefault) {
  EXPECT_EQ(first_user_uid("# UID_MIN 5\nUID_MINIMUM 7\nUID_MIN\t\t 2000\nUID_MAX 60000\n"), 2000U);
  EXPECT_EQ(first_user_uid("UID_MIN 500\nUID_MIN 1500\n"), 1500U);  // the last, as shadow reads it
  EXPECT_EQ(first_user_uid("UID_MIN 0x3e8\n"), 1000U);
  EXPECT_EQ(first_user_uid("UID_MIN 01750\n"), 1000U);
  EXPECT_EQ(first_user_uid(""), 1000U);
  EXPECT_EQ(first_user_uid("UID_MIN lots\n"), 1000U);
  EXPECT_EQ(first_user_uid("UID_MIN 0\n"), 1000U);
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
TEST(SubordinateOwner, ARootlessContainersIdsAreTheirOwnersShare) {
  const std::string subuid = "# comment\nalice:100000:65536\n1002:165536:65536\nbroken line\nbob:231072:0\n";
  const auto uid_of = [](const std::string& name) -> std::optional<uid_t> {
    if (name == "alice") return 1001;
    return std::nullopt;
  };
  EXPECT_EQ(subordinate_owner(100000, subuid, uid_of), 1001U);
  EXPECT_EQ(subordinate_owner(165535, subuid, uid_of), 1001U);
  EXPECT_EQ(subordinate_owner(165536, subuid, uid_of), 1002U);         // a uid written as a number
  EXPECT_EQ(subordinate_owner(231072, subuid, uid_of), std::nullopt);  // an empty range holds none
  EXPECT_EQ(subordinate_owner(1001, subuid, uid_of), std::nullopt);
  EXPECT_EQ(subordinate_owner(100000, "ghost:100000:10\n", uid_of), std::nullopt);  // no such user
}

}  // namespace gpurun
