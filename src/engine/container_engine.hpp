#pragma once
// The container-engine seam: what gpurun asks of an engine (which containers hold GPUs) and how
// it runs a job there (the argv of `run`, `stop`, `logs`, `attach`). The docker CLI is the
// implementation here; the Engine API, podman and Slurm are others. Tests can pass a fake.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/containers.hpp"
#include "engine/docker_command.hpp"

namespace gpurun {

class ContainerEngine {
 public:
  virtual ~ContainerEngine() = default;
  ContainerEngine() = default;
  ContainerEngine(const ContainerEngine&) = delete;
  ContainerEngine& operator=(const ContainerEngine&) = delete;

  // "docker", "podman", ...: for messages and --verbose.
  virtual std::string name() const = 0;
  // The running containers that hold GPUs, whoever started them. Throws Error when the engine
  // cannot be asked.
  virtual std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds timeout) = 0;
  // The argv that runs the job (argv[0] is the client program).
  virtual std::vector<std::string> run_argv(const DockerRunRequest& request) const = 0;
  // The argv that stops, follows the logs of, or attaches to a container.
  virtual std::vector<std::string> stop_argv(const std::string& container) const = 0;
  virtual std::vector<std::string> logs_argv(const std::string& container) const = 0;
  virtual std::vector<std::string> attach_argv(const std::string& container) const = 0;
};

// The engine that `client` (--docker) talks to: today always the docker CLI.
std::unique_ptr<ContainerEngine> make_container_engine(const std::string& client);

}  // namespace gpurun
