#pragma once
// Whose a container is, from the labels gpurun put on it (gpurun/engine/docker_command.hpp), so that
// `gpurun logs|attach|stop|rm NAME` act for a caller under sudo only on their own containers.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

class ContainerEngine;

struct ContainerOwner {
  std::string id;                  // the full id: later commands name it, not the name, which may move
  bool started_by_gpurun = false;  // has gpurun's labels
  std::string user;                // gpurun.user
  std::optional<unsigned> uid;     // gpurun.uid (every launch's since it was written)
  std::string image;               // its image's id
  std::string name;                // the container's name, where its gpurun.name label names it
  std::string container_name;      // its name, whatever its labels (inspect also finds an id's prefix)
  std::string created_at;          // Created: when the engine made it (RFC 3339)
  bool running = false;            // State.Running (paused and restarting ones too): not to be removed
  std::string status;              // State.Status: "created" (never started), "running", "exited", ...
  std::optional<int> exit_code;    // State.ExitCode, once it has ended
};

// Parses `docker inspect --type container` JSON of one container; nullopt when it lists none.
// Throws Error on text that is not such JSON.
std::optional<ContainerOwner> parse_container_owner(std::string_view inspect_json);

// Runs `inspect_argv` (ContainerEngine::inspect_argv of the container); nullopt when no container
// has this name or id.
std::optional<ContainerOwner> container_owner(const std::vector<std::string>& inspect_argv,
                                              std::chrono::milliseconds timeout);

// The same through `engine`'s inspect, its client looked for first: a missing one is 127 (126: not
// executable), as for a launch, not a failed question about the container (Error either way).
std::optional<ContainerOwner> container_owner(const ContainerEngine& engine, const std::string& container,
                                              std::chrono::milliseconds timeout);

// Whether `owner` may come from its image: the label that says whose the container is (gpurun.uid,
// or gpurun.user without one) has the value the image's inspect JSON (`--type image`) sets. A
// container shows its image's labels as its own, so such an image could make anyone's container
// look like someone else's; a launch's own --label, which differs, is the launch's word, and so
// are all of them where the container's gpurun.name (its own name) is not the image's, since a
// launch writes them together. Throws Error on text that is not such JSON.
bool owner_from_image(const ContainerOwner& owner, std::string_view image_inspect_json);

// Runs `image_inspect_argv` (ContainerEngine::image_inspect_argv) and answers as above; throws
// Error where the engine cannot tell (then nobody can tell whose the container is).
bool owner_from_image(const ContainerOwner& owner, const std::vector<std::string>& image_inspect_argv,
                      std::chrono::milliseconds timeout);

}  // namespace gpurun
