#pragma once
// The container-engine seam: what gpurun asks of an engine (which containers hold GPUs) and how
// it runs a job there (the argv of `run`, `stop`, `logs`, `attach`, `rm`). The docker CLI is the
// implementation here; the Engine API, podman and Slurm are others. Tests can pass a fake.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/engine/containers.hpp"
#include "gpurun/engine/docker_command.hpp"
#include "gpurun/engine/gpu_request.hpp"
#include "gpurun/util/choices.hpp"

namespace gpurun {

// Which containers a listing covers: the running ones (`docker ps`), or all (`docker ps -a`).
enum class Listing { running, all };

// What `gpurun logs` asks for, in docker's words: -f, --tail N.
struct LogsRequest {
  bool follow = false;
  std::string tail;  // "" (everything), a number of lines, or "all"
};

class ContainerEngine {
 public:
  virtual ~ContainerEngine() = default;
  ContainerEngine() = default;
  ContainerEngine(const ContainerEngine&) = delete;
  ContainerEngine& operator=(const ContainerEngine&) = delete;

  // "docker", "podman", ...: for messages and --verbose.
  virtual std::string name() const = 0;
  // The containers that hold GPUs (running ones, or all), whoever started them. Throws Error when
  // the engine cannot be asked.
  virtual std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds timeout, Listing listing) = 0;
  // Starts what gpu_holders(timeout, listing), called next, will ask, where the engine can work
  // on it meanwhile (its socket's list request); nothing elsewhere. Never throws.
  virtual void ask_gpu_holders_ahead(std::chrono::milliseconds /*timeout*/, Listing /*listing*/) {}
  // Whether its containers are a user's own (a rootless engine: root's engines, and so the gpurun
  // service, do not list them); nullopt where it cannot be told.
  virtual std::optional<bool> rootless() const { return std::nullopt; }
  // Whether the engine resolves CDI devices (--device nvidia.com/gpu=UUID), and why we think so.
  // Never throws: an engine that cannot be asked has no CDI we know of.
  virtual CdiSupport cdi_support(std::chrono::milliseconds timeout) = 0;
  // The argv that runs the job (argv[0] is the client program).
  virtual std::vector<std::string> run_argv(const DockerRunRequest& request) const = 0;
  // The argv that stops (waiting `timeout_s` before it kills; the engine's default when unset),
  // prints the logs of, or attaches to a container.
  virtual std::vector<std::string> stop_argv(const std::string& container, std::optional<int> timeout_s) const = 0;
  virtual std::vector<std::string> logs_argv(const std::string& container, const LogsRequest& request) const = 0;
  virtual std::vector<std::string> attach_argv(const std::string& container) const = 0;
  // The argv that removes a container that has ended, its output and anonymous volumes with it, as
  // --rm would have (never a running one: no --force).
  virtual std::vector<std::string> remove_argv(const std::string& container) const = 0;
  // The argv that prints a container's inspect JSON (`docker|podman inspect --type container`).
  virtual std::vector<std::string> inspect_argv(const std::string& container) const = 0;
  // The same of an image (`--type image`): its own labels, which every container of it shows too.
  virtual std::vector<std::string> image_inspect_argv(const std::string& image) const = 0;
};

// The docker engine that `client` (--docker) talks to: the Engine API over its socket where it
// applies, else the CLI.
std::unique_ptr<ContainerEngine> make_container_engine(const std::string& client);

// Which engine, and its clients: the engine, docker and podman settings.
struct EngineSpec {
  // automatic: docker when its client is found or the docker setting names one, else podman
  EngineSetting engine = EngineSetting::automatic;
  std::string docker = "docker";
  std::string podman = "podman";
};
std::unique_ptr<ContainerEngine> make_container_engine(const EngineSpec& spec);

}  // namespace gpurun
