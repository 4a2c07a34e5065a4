#include "gpurun/config/caller.hpp"

#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <map>
#include <string_view>
#include <vector>

#include "gpurun/config/inputs.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

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

// What root's children see under sudo. sudo's env_reset usually drops the rest, but a site's
// env_keep or SETENV must not let a caller choose what root runs: PATH finds the programs
// (a fixed system path, as sudo's secure_path), DOCKER_* and HOME decide which engine, which
// client config.json (credential helpers, CLI plugins: programs) and which TLS files docker
// uses, XDG_RUNTIME_DIR a rootless engine's socket, GPURUN_SYSFS_ROOT the topology read,
// GPURUN_SYSTEM_CONFIG the system file (ignored under sudo already), GPURUN_SYSLOG_SOCKET the log.
void scrub_environment_for_root() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (name.starts_with("DOCKER_") || name.starts_with("LD_") || name == "XDG_RUNTIME_DIR" ||
        name == "XDG_CONFIG_HOME" || name == "CONTAINERS_CONF" || name == "CONTAINER_HOST" ||
        name == "GPURUN_SYSFS_ROOT" || name == "GPURUN_SYSTEM_CONFIG" || name == "GPURUN_SYSLOG_SOCKET" ||
        name == "BUILDKIT_HOST")
      names.emplace_back(name);
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
  ::setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  const passwd* root = ::getpwuid(0);
  ::setenv("HOME", root != nullptr && root->pw_dir != nullptr ? root->pw_dir : "/root", 1);
}

}  // namespace

std::optional<Caller> sudo_caller(uid_t euid, const char* const* envp) {
  if (euid != 0) return std::nullopt;
  const auto vars = environment_with_prefix(envp, "SUDO_");
  if (!vars.contains("SUDO_UID")) return std::nullopt;
  const uid_t uid = id_of(vars, "SUDO_UID");
  if (uid == 0) return std::nullopt;  // root using sudo is root
  Caller caller;
  caller.ids.uid = uid;
  caller.ids.gid = id_of(vars, "SUDO_GID");
  const passwd* entry = ::getpwuid(uid);
  if (entry == nullptr || entry->pw_name == nullptr)
    throw Error(fmt::format("running under sudo for uid {}, which the password database does not know", uid));
  caller.login = entry->pw_name;
  caller.home = entry->pw_dir != nullptr ? entry->pw_dir : "";
  caller.ids.groups = group_list(caller.login, caller.ids.gid);
  return caller;
}

void act_for(const Caller& caller) {
  scrub_environment_for_root();
  act_as(caller.ids);
}

std::string caller_config_path(const Caller& caller) { return caller.home + "/.config/gpurun/config.json"; }

}  // namespace gpurun
