#pragma once
// Who opened a connection that came from this machine (over loopback, or to the machine's own
// address): the user of its other end, asked of the kernel (sock_diag, as `ss -e` does). A TCP
// peer here is otherwise only "127.0.0.1", which every local user shares; with its user, the
// listener holds each person to one share, as the unix socket does by its credentials.
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

struct LocalPeer {
  std::optional<uid_t> owner;  // nullopt where the kernel did not tell (no sock_diag, a socket gone)
};

// For an accepted TCP socket whose other end is on this machine (the kernel has its socket, or it
// is a loopback address or the very address it connected to), that end's user; nullopt for a peer
// elsewhere.
std::optional<LocalPeer> local_peer(int connection);

// The first uid of a person's account (login.defs' UID_MIN, its last line as shadow reads it;
// 1000 without one): below it are root and the system's accounts (a web proxy, Prometheus), which
// serve everyone. `login_defs`: that file's text.
uid_t first_user_uid(std::string_view login_defs);
uid_t first_user_uid();  // of /etc/login.defs, read once

// The person whose subordinate uids hold `uid` (`subuid`: /etc/subuid's text, lines of
// NAME_OR_UID:FIRST:COUNT, as newuidmap reads them): a rootless container's processes reach the
// kernel as such ids, one for each uid inside it, and would each get a share of their own.
// nullopt where no range holds `uid`. `uid_of`: a login name's uid.
std::optional<uid_t> subordinate_owner(uid_t uid, std::string_view subuid,
                                       const std::function<std::optional<uid_t>(const std::string&)>& uid_of);
// `uid`'s person: its owner by /etc/subuid (read again whenever it changed: ranges are added while
// gpurund runs) where that is a person (not root nor a system account), else `uid` itself.
uid_t person_of(uid_t uid);

}  // namespace gpurun
