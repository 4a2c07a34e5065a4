#include "engine/container_engine.hpp"

#include "engine/docker_cli_engine.hpp"

namespace gpurun {

std::unique_ptr<ContainerEngine> make_container_engine(const std::string& client) {
  return std::make_unique<DockerCliEngine>(client);
}

}  // namespace gpurun
