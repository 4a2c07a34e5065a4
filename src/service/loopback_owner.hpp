#pragma once
// Who opened a connection that came over loopback: the user of its other end, asked of the kernel
// (sock_diag, as `ss -e` does). A TCP peer on this machine is otherwise only "127.0.0.1", which
// every local user shares; with its user, the listener holds each of them to one share, as the
// unix socket does by its credentials.
#include <sys/types.h>

#include <optional>
#include <string_view>

namespace gpurun {

// The uid owning the other end of `connection`, an accepted TCP socket whose peer is a loopback
// address; nullopt where the kernel does not tell (another peer, a socket already gone).
std::optional<uid_t> loopback_owner(int connection);

// The first uid of a person's account (login.defs' UID_MIN; 1000 without one): below it are
// root and the system's accounts (a web proxy, Prometheus), which serve everyone. `login_defs`:
// that file's text.
uid_t first_user_uid(std::string_view login_defs);
uid_t first_user_uid();  // of /etc/login.defs, read once

}  // namespace gpurun
