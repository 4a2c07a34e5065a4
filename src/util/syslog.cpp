#include "gpurun/util/syslog.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

bool send_to_syslog(LogFacility facility, LogSeverity severity, std::string_view message) {
  const std::string path = socket_path();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const Fd socket(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return false;
  if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) return false;
  const std::string datagram = syslog_datagram(facility, severity, message);
  return ::send(socket.get(), datagram.data(), datagram.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
         static_cast<ssize_t>(datagram.size());
}

}  // namespace gpurun
