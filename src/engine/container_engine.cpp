#include "engine/container_engine.hpp"

#include "engine/docker_api.hpp"
#include "engine/docker_cli_engine.hpp"

namespace gpurun {

// The Engine API over the socket where it applies (a millisecond, against ~65 ms for two docker
// CLI processes: docs/performance.md); the CLI elsewhere (tcp/ssh hosts, contexts, podman).
std::unique_ptr<ContainerEngine> make_container_engine(const std::string& client) {
  std::string why_not;
  if (auto api = make_docker_api_engine(client, why_not)) return api;
  return std::make_unique<DockerCliEngine>(client);
}

}  // namespace gpurun
