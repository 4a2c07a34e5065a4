#include "podman/podman_engine.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "docker/docker_api.hpp"
#include "docker/docker_cli_engine.hpp"
#include "gpurun/util/privileges.hpp"

namespace gpurun {
namespace {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::optional<std::string>(value) : std::nullopt;
}

}  // namespace

PodmanEnvironment PodmanEnvironment::from_process() {
  // The real uid: under sudo the CLI and the socket are root's (the effective uid is the caller's).
  return {static_cast<unsigned>(::getuid()), env_value("CONTAINER_HOST"), env_value("XDG_RUNTIME_DIR")};
}

std::optional<std::string> podman_socket_path(const PodmanEnvironment& env) {
  constexpr std::string_view unix_scheme = "unix://";
  if (env.container_host) {
    if (env.container_host->starts_with(unix_scheme) && env.container_host->size() > unix_scheme.size())
      return env.container_host->substr(unix_scheme.size());
    return std::nullopt;
  }
  if (env.euid == 0) return std::string("/run/podman/podman.sock");
  if (!env.xdg_runtime_dir) return std::nullopt;
  return *env.xdg_runtime_dir + "/podman/podman.sock";
}

std::unique_ptr<ContainerEngine> make_podman_engine(const std::string& podman_cli) {
  if (const auto socket = podman_socket_path(PodmanEnvironment::from_process())) {
    struct stat st {};
    const bool usable = [&] {
      const AsRoot root;  // under sudo: root's /run/podman, as the client will reach it
      return ::stat(socket->c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && ::access(socket->c_str(), R_OK | W_OK) == 0;
    }();
    if (usable) {
      spdlog::debug("asking podman's API at {}", *socket);
      return make_docker_api_engine_at(podman_cli, *socket, "podman");
    }
    spdlog::debug("asking {} (the CLI), not podman's API: no socket of ours at {} (systemctl{} start podman.socket)",
                  podman_cli, *socket, ::getuid() == 0 ? "" : " --user");
  }
  return std::make_unique<DockerCliEngine>(podman_cli, "podman");
}

}  // namespace gpurun
