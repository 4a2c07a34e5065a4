#pragma once
// The docker command-line client as the container engine: holders from `docker ps` and
// `docker inspect`, jobs run by `docker run` (docker_command.hpp). Podman's CLI speaks the same.
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/engine/container_engine.hpp"

namespace gpurun {

// `CLIENT stop [-t N] -- NAME` and `CLIENT logs [-f] [--tail N] -- NAME`: docker's and podman's
// clients take the same words, whichever way the engine is asked.
std::vector<std::string> docker_stop_argv(const std::string& client, const std::string& container,
                                          std::optional<int> timeout_s);
std::vector<std::string> docker_logs_argv(const std::string& client, const std::string& container,
                                          const LogsRequest& request);
// Ctrl-P Ctrl-Q detaches whatever the client's config file says (root's, under sudo: the hint
// gpurun printed must hold), and Ctrl-C in a job without a terminal ends the attach, not the job
// (with --rm its container and logs would go too).
std::vector<std::string> docker_attach_argv(const std::string& client, const std::string& container);
std::vector<std::string> docker_remove_argv(const std::string& client, const std::string& container);

class DockerCliEngine final : public ContainerEngine {
 public:
  // `client`: the program (--docker, or --podman with `name` "podman"), looked up on PATH when
  // it has no '/'.
  // `runs_podman`: a client named docker that runs podman (podman-docker's script), whose --init
  // needs catatonit, which a host may lack: its launches go without.
  explicit DockerCliEngine(std::string client, std::string name = "docker", bool runs_podman = false)
      : client_(std::move(client)), name_(std::move(name)), runs_podman_(runs_podman) {}

  std::string name() const override { return name_; }
  // Podman's CLI run by a user (no socket of root's reached): its own, rootless; docker's: its
  // context may name any engine.
  std::optional<bool> rootless() const override;
  // Podman: always. Docker: `docker info --format '{{json .CDISpecDirs}}'`.
  CdiSupport cdi_support(std::chrono::milliseconds timeout) override;
  // `docker ps`, then `docker inspect` of what it lists, each killed after `timeout`.
  std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds timeout, Listing listing) override;
  std::vector<std::string> run_argv(const DockerRunRequest& request) const override;
  std::vector<std::string> stop_argv(const std::string& container, std::optional<int> timeout_s) const override;
  std::vector<std::string> remove_argv(const std::string& container) const override;
  std::vector<std::string> logs_argv(const std::string& container, const LogsRequest& request) const override;
  std::vector<std::string> attach_argv(const std::string& container) const override;
  std::vector<std::string> inspect_argv(const std::string& container) const override;
  std::vector<std::string> image_inspect_argv(const std::string& image) const override;

 private:
  std::string client_;
  std::string name_;
  bool runs_podman_;
};

}  // namespace gpurun
