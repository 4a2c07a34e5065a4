#include "gpurun/engine/container_engine.hpp"

#include <spdlog/spdlog.h>

#include "docker/docker_api.hpp"
#include "docker/docker_cli_engine.hpp"
#include "gpurun/util/exec.hpp"
#include "podman/podman_engine.hpp"

namespace gpurun {

// The Engine API over the socket where it applies (a millisecond, against ~65 ms for two docker
// CLI processes: docs/performance.md); the CLI elsewhere (tcp/ssh hosts, contexts, podman).
std::unique_ptr<ContainerEngine> make_container_engine(const std::string& client) {
  std::string why_not;
  std::string script_head;  // the client's, where it is a script (read once, as root under sudo)
  if (auto api = make_docker_api_engine(client, why_not, &script_head)) return api;
  return std::make_unique<DockerCliEngine>(client, "docker", script_head.find("podman") != std::string::npos);
}

std::unique_ptr<ContainerEngine> make_container_engine(const EngineSpec& spec) {
  // A docker setting that names podman (the old way to use it) means the podman engine.
  const std::string_view docker_base = std::string_view(spec.docker).substr(spec.docker.rfind('/') + 1);
  if (spec.engine == EngineSetting::podman) return make_podman_engine(spec.podman);
  if (spec.engine == EngineSetting::docker || docker_base.starts_with("podman"))
    return docker_base.starts_with("podman") ? make_podman_engine(spec.docker) : make_container_engine(spec.docker);
  // auto: docker where its client is found or was named (the docker setting changed), else
  // podman where its is; else docker, whose absence the launch then reports.
  int error = 0;
  if (spec.docker != "docker" || !find_program(spec.docker, error).empty() || find_program(spec.podman, error).empty())
    return make_container_engine(spec.docker);
  spdlog::debug("{} not found, {} is: using podman", spec.docker, spec.podman);
  return make_podman_engine(spec.podman);
}

}  // namespace gpurun
