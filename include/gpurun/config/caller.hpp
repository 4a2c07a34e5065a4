#pragma once
// Who gpurun acts for. Run through sudo by another user (`sudo gpurun ...`, euid 0 with
// SUDO_UID/SUDO_GID/SUDO_USER set and SUDO_UID not 0), the caller is that user, not root: the
// container runs with their uid, gid and groups, is named and labelled with their login, their
// own config file and their project's file apply, and every file gpurun touches for them is
// touched with their rights (gpurun/util/privileges.hpp). The rules that hold for such a caller are in
// gpurun/config/sudo_rules.hpp.
#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "gpurun/util/error.hpp"
#include "gpurun/util/privileges.hpp"

namespace gpurun {

struct Caller {
  UserIds ids;
  std::string login;  // from the password database, not from SUDO_USER
  std::string home;   // the caller's home directory, from the password database
};

// SUDO_UID or SUDO_GID not who ran sudo (set on sudo's command line): refused, and on record
// naming the SUDO_UID claimed (log_sudo_id_refusal).
class SudoIdRefusal : public Refusal {
 public:
  SudoIdRefusal(const std::string& what, uid_t claimed) : Refusal(what), claimed_uid(claimed) {}
  uid_t claimed_uid;
};

// The caller gpurun runs for under sudo, or nullopt when it runs for whoever started it (not
// root, or root with no SUDO_UID, or sudo from root). `envp` is the process environment.
// Throws Error (125) when SUDO_UID/SUDO_GID are not numbers or name no user, and SudoIdRefusal when
// they are not who ran the sudo that started gpurun (`proc_root`'s process tree from `parent` up,
// else the session's login uid): a sudoers rule with SETENV lets a caller set SUDO_UID=0 on the
// command line.
std::optional<Caller> sudo_caller(uid_t euid, const char* const* envp, const std::string& proc_root = "/proc",
                                  long parent = ::getppid());

// Who ran the sudo that process `pid` is (sudo keeps the invoking user as its real uid, its
// monitor under use_pty too); nullopt where `pid` is not sudo.
std::optional<uid_t> sudo_invoker(long pid, const std::string& proc_root);

// act_as(caller.ids): from here on files are touched with the caller's rights. First the
// environment root's children will see is made the admin's (PATH, HOME; no DOCKER_* and kin).
void act_for(const Caller& caller);

// The caller's own config file: ~caller/.config/gpurun/config.json (never root's, whatever
// HOME or XDG_CONFIG_HOME say under sudo).
std::string caller_config_path(const Caller& caller);

}  // namespace gpurun
