#include "gpurun/util/syslog.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <sys/time.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "gpurun/util/fd.hpp"

namespace gpurun {
namespace {

constexpr std::size_t kMaxMessage = 2048;  // rsyslog's default line; journald takes more

std::string socket_path() {
  const char* hook = std::getenv("GPURUN_SYSLOG_SOCKET");
  return hook != nullptr && *hook != '\0' ? hook : "/dev/log";
}

}  // namespace

std::string syslog_datagram(LogFacility facility, LogSeverity severity, std::string_view message) {
  const int priority = static_cast<int>(facility) * 8 + static_cast<int>(severity);
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  if (std::strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &local) == 0) stamp[0] = '\0';
  if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage);
  return fmt::format("<{}>{} gpurun[{}]: {}", priority, stamp, ::getpid(), message);
}

SyslogSent send_to_syslog(LogFacility facility, LogSeverity severity, std::string_view message,
                          std::chrono::milliseconds patience) {
  const std::string path = socket_path();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return SyslogSent::no_log;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  // A datagram socket, as journald's and rsyslog's; a stream one where the log listens so (some
  // syslog-ng setups), as syslog(3) falls back, each message ended by a NUL.
  int type = SOCK_DGRAM;
  Fd socket(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return SyslogSent::failed;  // no descriptor left: a log may well listen
  int connected = ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  if (connected != 0 && errno == EPROTOTYPE) {
    type = SOCK_STREAM;
    socket.reset(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
    if (!socket.valid()) return SyslogSent::failed;
    connected = ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  }
  if (connected != 0)
    return errno == ENOENT || errno == ECONNREFUSED || errno == ENOTSOCK ? SyslogSent::no_log : SyslogSent::failed;
  int flags = MSG_NOSIGNAL | MSG_DONTWAIT;
  if (patience.count() > 0) {
    const timeval wait{.tv_sec = static_cast<time_t>(patience.count() / 1000),
                       .tv_usec = static_cast<suseconds_t>((patience.count() % 1000) * 1000)};
    if (::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait) == 0) flags = MSG_NOSIGNAL;
  }
  std::string datagram = syslog_datagram(facility, severity, message);
  if (type == SOCK_STREAM) datagram.push_back('\0');
  return ::send(socket.get(), datagram.data(), datagram.size(), flags) == static_cast<ssize_t>(datagram.size())
             ? SyslogSent::sent
             : SyslogSent::failed;
}

}  // namespace gpurun
