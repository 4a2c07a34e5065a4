#pragma once
// Whose a container is, from the labels gpurun put on it (gpurun/engine/docker_command.hpp), so that
// `gpurun logs|attach|stop NAME` act for a caller under sudo only on their own containers.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

struct ContainerOwner {
  std::string id;                  // the full id: later commands name it, not the name, which may move
  bool started_by_gpurun = false;  // has gpurun's labels
  std::string user;                // gpurun.user
  std::optional<unsigned> uid;     // gpurun.uid (launches under sudo)
};

// Parses `docker inspect --type container` JSON of one container; nullopt when it lists none.
// Throws Error on text that is not such JSON.
std::optional<ContainerOwner> parse_container_owner(std::string_view inspect_json);

// Runs `inspect_argv` (ContainerEngine::inspect_argv of the container); nullopt when no container
// has this name or id.
std::optional<ContainerOwner> container_owner(const std::vector<std::string>& inspect_argv,
                                              std::chrono::milliseconds timeout);

}  // namespace gpurun
