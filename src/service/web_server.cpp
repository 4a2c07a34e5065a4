#include "gpurun/service/web_server.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "gpurun/service/metrics.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "http_loop.hpp"
#include "web_routes.hpp"

namespace gpurun {
namespace {

// `name`'s canonical name ("dgx1" -> "dgx1.lab.example.org"); "" where there is none.
std::string canonical_name(const std::string& name) {
  if (name.empty()) return "";
  addrinfo hints{};
  hints.ai_flags = AI_CANONNAME;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return "";
  std::string canonical = found != nullptr && found->ai_canonname != nullptr ? found->ai_canonname : "";
  ::freeaddrinfo(found);
  return canonical;
}

}  // namespace

WebServer::WebServer(const std::string& listen, ServedRuns& runs, ServerSettings settings)
    : runs_(runs), settings_(std::move(settings)) {
  const ListenAddress address = parse_listen_address(listen);
  // The names it answers to (answer_web): the site's, this machine's (as gethostname says it, and
  // its canonical name where the resolver knows one: /etc/hosts, mostly), and the one it listens on.
  for (const std::string& name : {host_name(), canonical_name(host_name()), address.host})
    if (!name.empty()) settings_.web_names.push_back(name);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int status = ::getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found); status != 0)
    throw Error(fmt::format("--listen {}: {}", text::printable(listen), ::gai_strerror(status)));
  std::string why = "no address";
  for (const addrinfo* a = found; a != nullptr && listener_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      listener_ = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listener_ < 0) throw Error(fmt::format("cannot listen on {}: {}", text::printable(listen), why));
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &size);
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
  {
    const std::lock_guard lock(runs_.mutex);
    if (runs_.metrics.hostname.empty()) runs_.metrics.hostname = host_name();
  }
  thread_ = std::thread([this] {
    // One request a connection: a scraper holding its connection open between scrapes would keep
    // a second one (an HA pair of Prometheus servers) out.
    serve_http(
        listener_, stopping_, [this](int, const HttpRequest& request) { return answer_web(request, runs_, settings_); },
        /*keep_alive=*/false, settings_.trusted_peers);
  });
}

WebServer::~WebServer() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(listener_);
}

}  // namespace gpurun
