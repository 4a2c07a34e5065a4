#include "gpurun/config/caller.hpp"

#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "gpurun/config/inputs.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

unsigned id_of(const std::map<std::string, std::string>& vars, const std::string& name) {
  const auto it = vars.find(name);
  const auto value = it == vars.end() ? std::nullopt : text::parse_integer(it->second);
  if (!value || *value < 0 || *value > 0x7fffffff)
    throw Error(fmt::format("running as root under sudo, but {} is {}: cannot tell who the caller is", name,
                            it == vars.end() ? "unset" : "\"" + text::printable(it->second) + "\""));
  return static_cast<unsigned>(*value);
}

// What root's children see under sudo: a list of what is kept, not of what goes. sudo's env_reset
// usually drops the rest, but a site's env_keep or SETENV must not let a caller choose what root
// runs or how: DOCKER_* and HOME decide which engine, which client config.json (credential
// helpers, CLI plugins: programs) and which TLS files docker uses; proxies where its API traffic
// goes; BASH_ENV and SHELLOPTS run code in an admin's wrapper script; LD_*, GCONV_PATH and the
// like load it; XDG_RUNTIME_DIR names a rootless engine's socket; GPURUN_SYSFS_ROOT the topology
// read, GPURUN_SYSTEM_CONFIG the system file (ignored under sudo already), GPURUN_SYSLOG_SOCKET
// the log. Kept: the terminal, the language (no path in it), the time zone (a zone's name, no path
// of the caller's), sudo's own, gpurun's settings.
bool kept_for_root(std::string_view name, std::string_view value) {
  if (name == "TERM" || name == "COLORTERM" || name == "NO_COLOR" || name.starts_with("SUDO_")) return true;
  if (name == "LANG" || name == "LANGUAGE" || name.starts_with("LC_"))
    return value.find_first_of("/%") == std::string_view::npos;
  // A zone's name (Europe/Berlin) or a POSIX rule (CET-1CEST,M3.5.0,M10.5.0/3), read under
  // /usr/share/zoneinfo: never a path of the caller's choosing (absolute, ':', or '..').
  if (name == "TZ")
    return !value.starts_with('/') && !value.starts_with(':') && value.find("..") == std::string_view::npos &&
           value.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/,.<>:") ==
               std::string_view::npos;  // (':' but the first: IST-5:30, M10.5.0/2:00:00)
  return name.starts_with("GPURUN_") && name != "GPURUN_SYSFS_ROOT" && name != "GPURUN_SYSTEM_CONFIG" &&
         name != "GPURUN_SYSLOG_SOCKET";
}

void scrub_environment_for_root() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t equals = text.find('=');
    const std::string_view name = text.substr(0, equals);
    if (!kept_for_root(name, equals == std::string_view::npos ? "" : text.substr(equals + 1))) names.emplace_back(name);
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
  ::setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  const passwd* root = ::getpwuid(0);
  ::setenv("HOME", root != nullptr && root->pw_dir != nullptr ? root->pw_dir : "/root", 1);
}

// The first number of a /proc/PID/status line ("Uid:\t1000\t0\t0\t0": the real one).
std::optional<long long> status_number(std::string_view status, std::string_view key) {
  for (const auto& line : text::non_blank_lines(status))
    if (line.text.starts_with(key)) {
      const std::string_view rest = text::trim(line.text.substr(key.size()));
      return text::parse_integer(rest.substr(0, rest.find_first_of(" \t")));
    }
  return std::nullopt;
}

// The Name: line of a /proc/PID/status ("sudo"); "" without one.
std::string_view status_name(std::string_view status) {
  for (const auto& line : text::non_blank_lines(status))
    if (line.text.starts_with("Name:")) return text::trim(line.text.substr(5));
  return {};
}

// The session's login uid (pam_loginuid), which sudo does not change; nullopt where unset.
std::optional<uid_t> login_uid(const std::string& proc_root) {
  const auto text = read_bounded(proc_root + "/self/loginuid", 64, FileKinds::regular_only).text;
  const auto uid = text ? text::parse_integer(text::trim(*text)) : std::nullopt;
  if (!uid || *uid < 0 || *uid >= 0xFFFFFFFFLL) return std::nullopt;  // 4294967295: none
  return static_cast<uid_t>(*uid);
}

}  // namespace

std::optional<uid_t> sudo_invoker(long pid, const std::string& proc_root) {
  // `pid` alone: never a sudo further up (an admin's earlier `sudo -iu alice` is not who started
  // this one). Under use_pty it is sudo's monitor, which keeps the user's real uid as sudo does.
  const auto status =
      read_bounded(fmt::format("{}/{}/status", proc_root, pid), std::size_t{1} << 16, FileKinds::regular_only).text;
  if (!status || status_name(*status) != "sudo") return std::nullopt;
  const auto uid = status_number(*status, "Uid:");
  if (!uid || *uid < 0) return std::nullopt;
  return static_cast<uid_t>(*uid);
}

std::optional<Caller> sudo_caller(uid_t euid, const char* const* envp, const std::string& proc_root, long parent) {
  if (euid != 0) return std::nullopt;
  const auto vars = environment_with_prefix(envp, "SUDO_");
  if (!vars.contains("SUDO_UID")) return std::nullopt;
  const uid_t uid = id_of(vars, "SUDO_UID");
  // SUDO_UID is believed only as the sudo that started gpurun knows its user (sudo keeps it as
  // its real uid): a sudoers rule with SETENV lets a caller set it on the command line (sudo
  // SUDO_UID=0 gpurun: root's launch, --privileged and all). Without a sudo above (a root shell of
  // `sudo -i`, or `sudo -b`), the session's login uid must not name another user.
  if (const auto invoker = sudo_invoker(parent, proc_root)) {
    if (*invoker != uid)
      throw SudoIdRefusal(
          fmt::format("SUDO_UID {} is not who ran sudo (uid {}): most likely it was set on sudo's command line, "
                      "which a sudoers rule with SETENV allows; run `sudo gpurun ...` without setting SUDO_*, and "
                      "ask your admin to drop SETENV from gpurun's rule",
                      uid, *invoker),
          uid);
  } else if (const auto login = login_uid(proc_root); login && *login != uid && *login != 0) {
    throw SudoIdRefusal(
        fmt::format(
            "SUDO_UID {} is not this session's user (uid {}, who logged in): gpurun will not act for another user; "
            "run `sudo gpurun ...` itself (not from a root shell of another user's sudo, nor with sudo -b)",
            uid, *login),
        uid);
  }
  if (uid == 0) return std::nullopt;  // root using sudo is root
  Caller caller;
  caller.ids.uid = uid;
  caller.ids.gid = id_of(vars, "SUDO_GID");
  const passwd* entry = ::getpwuid(uid);
  if (entry == nullptr || entry->pw_name == nullptr)
    throw Error(fmt::format("running under sudo for uid {}, which the password database does not know", uid));
  caller.login = entry->pw_name;
  caller.home = entry->pw_dir != nullptr ? entry->pw_dir : "";
  // A group of the caller's (their primary one, or another after newgrp): SETENV would let them
  // set SUDO_GID=0 too, and the container would run with root's group.
  const std::vector<gid_t> theirs = group_list(caller.login, entry->pw_gid);
  if (caller.ids.gid != entry->pw_gid && std::find(theirs.begin(), theirs.end(), caller.ids.gid) == theirs.end())
    throw SudoIdRefusal(
        fmt::format("SUDO_GID {} is not a group of {}: most likely it was set on sudo's command line, which a "
                    "sudoers rule with SETENV allows (after newgrp into a group you are not a member of, run gpurun "
                    "from your own group)",
                    caller.ids.gid, caller.login),
        uid);
  caller.ids.groups = group_list(caller.login, caller.ids.gid);
  return caller;
}

void act_for(const Caller& caller) {
  scrub_environment_for_root();
  act_as(caller.ids);
}

std::string caller_config_path(const Caller& caller) { return caller.home + "/.config/gpurun/config.json"; }

}  // namespace gpurun
