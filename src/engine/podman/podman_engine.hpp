#pragma once
// Podman as the container engine: asked through its Docker-compatible API socket where there is
// one (rootful /run/podman/podman.sock, rootless $XDG_RUNTIME_DIR/podman/podman.sock), else through
// its CLI (`podman ps`, `podman inspect`, the same JSON). Jobs run by `podman run` with CDI devices.
#include <memory>
#include <optional>
#include <string>

#include "gpurun/engine/container_engine.hpp"

namespace gpurun {

// Where podman's API socket is for a process of `euid` (CONTAINER_HOST=unix://... first, as
// podman's own client reads it; then the rootful or rootless default). from_process gives the real
// uid: under sudo, root's podman (the client runs with the real ids).
struct PodmanEnvironment {
  unsigned euid = 0;
  std::optional<std::string> container_host;   // CONTAINER_HOST
  std::optional<std::string> xdg_runtime_dir;  // XDG_RUNTIME_DIR
  static PodmanEnvironment from_process();
};
// nullopt where podman is reached some other way (ssh CONTAINER_HOST) or no runtime dir is known.
std::optional<std::string> podman_socket_path(const PodmanEnvironment& env);

// The podman engine run through `podman_cli`: the API at its socket when it is there and ours to
// open, else the CLI (said at --verbose).
std::unique_ptr<ContainerEngine> make_podman_engine(const std::string& podman_cli);

}  // namespace gpurun
