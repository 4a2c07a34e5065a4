#include "loopback_owner.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "gpurun/util/accounts.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

// An IPv4 address seen through an IPv6 socket (::ffff:a.b.c.d) as the IPv4 socket at the other
// end has it: the kernel files that one under AF_INET.
void unmap(sockaddr_storage& address) {
  if (address.ss_family != AF_INET6) return;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  if (!IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) return;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = v6.sin6_port;
  std::memcpy(&v4.sin_addr, &v6.sin6_addr.s6_addr[12], 4);
  address = {};
  std::memcpy(&address, &v4, sizeof v4);
}

bool is_loopback(const sockaddr_storage& address) {
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (address.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(address).sin_addr.s_addr) >> 24) == 127;
  return address.ss_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(address).sin6_addr);
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in&>(b).sin_addr.s_addr;
  return a.ss_family == AF_INET6 && IN6_ARE_ADDR_EQUAL(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr,
                                                       &reinterpret_cast<const sockaddr_in6&>(b).sin6_addr);
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
}

// The port and address of `address` into a sock_diag id's half.
void fill(const sockaddr_storage& address, __be16& port, std::array<__be32, 4>& where) {
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    port = v4.sin_port;
    where[0] = v4.sin_addr.s_addr;
  } else {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    port = v6.sin6_port;
    std::memcpy(where.data(), &v6.sin6_addr, sizeof v6.sin6_addr);
  }
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
}

// The user of the socket whose source is `remote` and destination `local`, as sock_diag finds it.
std::optional<uid_t> owner_of(const sockaddr_storage& remote, const sockaddr_storage& local) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST;
  ask.request.sdiag_family = static_cast<__u8>(remote.ss_family);
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = ~0U;
  std::array<__be32, 4> source{};
  std::array<__be32, 4> destination{};
  fill(remote, ask.request.id.idiag_sport, source);
  fill(local, ask.request.id.idiag_dport, destination);
  std::memcpy(ask.request.id.idiag_src, source.data(), sizeof ask.request.id.idiag_src);
  std::memcpy(ask.request.id.idiag_dst, destination.data(), sizeof ask.request.id.idiag_dst);
  ask.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  ask.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

  const Fd diag(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!diag.valid()) return std::nullopt;
  const timeval patience{.tv_sec = 1, .tv_usec = 0};  // the kernel answers at once; never hang the accept loop
  ::setsockopt(diag.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  if (::send(diag.get(), &ask, sizeof ask, 0) != static_cast<ssize_t>(sizeof ask)) return std::nullopt;
  alignas(nlmsghdr) std::array<char, 8192> answer{};
  const ssize_t got = ::recv(diag.get(), answer.data(), answer.size(), 0);
  if (got <= 0) return std::nullopt;
  // One message: the socket found (an inet_diag_msg), or an error (ENOENT: none such).
  nlmsghdr header{};
  inet_diag_msg found{};
  if (static_cast<std::size_t>(got) < NLMSG_HDRLEN + sizeof found) return std::nullopt;
  std::memcpy(&header, answer.data(), sizeof header);
  if (header.nlmsg_type != SOCK_DIAG_BY_FAMILY || header.nlmsg_len < NLMSG_LENGTH(sizeof found)) return std::nullopt;
  std::memcpy(&found, answer.data() + NLMSG_HDRLEN, sizeof found);
  if (found.id.idiag_sport == ask.request.id.idiag_sport && found.id.idiag_dport == ask.request.id.idiag_dport)
    return found.idiag_uid;
  return std::nullopt;
}

}  // namespace

std::optional<LocalPeer> local_peer(int connection) {
  sockaddr_storage local{};
  sockaddr_storage remote{};
  socklen_t local_size = sizeof local;
  socklen_t remote_size = sizeof remote;
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  if (::getsockname(connection, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
      ::getpeername(connection, reinterpret_cast<sockaddr*>(&remote), &remote_size) != 0)
    return std::nullopt;
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
  unmap(local);
  unmap(remote);
  if (local.ss_family != remote.ss_family) return std::nullopt;
  // The other end's socket: its source is our peer, its destination us. Asked of every peer, not
  // only of loopback's: a user who binds another of the machine's addresses (eth0's, docker0's) as
  // the source is still on this machine, and was counted as a peer of its own, four connections for
  // each address. A peer elsewhere (or in another network namespace) has no such socket here.
  const std::optional<uid_t> owner = owner_of(remote, local);
  if (owner || is_loopback(remote) || same_address(remote, local)) return LocalPeer{.owner = owner};
  return std::nullopt;
}

uid_t first_user_uid(std::string_view login_defs) {
  constexpr uid_t kDebianDefault = 1000;
  uid_t first = kDebianDefault;
  for (std::string_view line : text::split(login_defs, '\n')) {  // the last UID_MIN counts, as for shadow
    line = text::trim(line);
    if (!line.starts_with("UID_MIN")) continue;
    const std::string_view rest = line.substr(std::string_view("UID_MIN").size());
    if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) continue;  // UID_MINIMUM, not ours
    // A number as shadow reads it (strtol, base 0: 1000, 0x3e8, 01750).
    const std::string value(text::trim(rest));
    char* end = nullptr;
    errno = 0;
    const long number = std::strtol(value.c_str(), &end, 0);
    if (errno == 0 && end != value.c_str() && *end == '\0' && number > 0 && number < 0x7fffffff)
      first = static_cast<uid_t>(number);
  }
  return first;
}

std::optional<uid_t> subordinate_owner(uid_t uid, std::string_view subuid,
                                       const std::function<std::optional<uid_t>(const std::string&)>& uid_of) {
  for (const std::string_view line : text::split(subuid, '\n')) {
    const std::vector<std::string_view> fields = text::split(text::trim(line), ':');
    if (fields.size() != 3 || fields[0].empty() || fields[0].starts_with('#')) continue;
    const auto first = text::parse_integer(fields[1]);
    const auto count = text::parse_integer(fields[2]);
    if (!first || !count || *first < 0 || *count <= 0 || uid < *first || uid - *first >= *count) continue;
    if (const auto number = text::parse_integer(fields[0]); number && *number >= 0 && *number < 0xffffffffLL)
      return static_cast<uid_t>(*number);
    return uid_of(std::string(fields[0]));
  }
  return std::nullopt;
}

uid_t person_of(uid_t uid) {
  // /etc/subuid read again only when it changed (its inode, size or time), and each owner's name
  // looked up once per text: connections are accepted on one thread, and a directory service may be slow.
  static std::mutex guard;
  static std::string text;
  static struct stat seen {};
  static std::map<std::string, std::optional<uid_t>> names;
  const std::lock_guard hold(guard);
  struct stat now {};
  if (::stat("/etc/subuid", &now) != 0) return uid;
  if (now.st_ino != seen.st_ino || now.st_size != seen.st_size || now.st_mtim.tv_sec != seen.st_mtim.tv_sec ||
      now.st_mtim.tv_nsec != seen.st_mtim.tv_nsec) {
    text = read_bounded("/etc/subuid", 1 << 20, FileKinds::regular_only).text.value_or("");
    seen = now;
    names.clear();
  }
  const auto owner = subordinate_owner(uid, text, [](const std::string& name) {
    const auto known = names.find(name);
    return known != names.end() ? known->second : names.emplace(name, user_id(name)).first->second;
  });
  // Never root or a system account (LXD's root:1000000:1000000000): a container's uids are not
  // those that share the whole.
  return owner && *owner >= first_user_uid() ? *owner : uid;
}

uid_t first_user_uid() {
  static const uid_t first =
      first_user_uid(read_bounded("/etc/login.defs", 1 << 20, FileKinds::regular_only).text.value_or(""));
  return first;
}

}  // namespace gpurun
