#pragma once
// The Docker Engine API over its unix socket: which containers hold GPUs, asked in about a
// millisecond instead of two docker CLI runs (`docker ps`, `docker inspect`, ~60 ms). Where the
// CLI would reach the engine some other way (tcp, ssh, a docker context), the CLI stays in charge.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/engine/container_engine.hpp"
#include "gpurun/engine/containers.hpp"
#include "gpurun/util/unix_http.hpp"

namespace gpurun {

inline constexpr std::string_view kDefaultDockerSocket = "/var/run/docker.sock";

// What decides where the docker CLI connects (its environment and its config directory).
struct DockerClientEnvironment {
  std::optional<std::string> docker_host;     // DOCKER_HOST
  std::optional<std::string> docker_context;  // DOCKER_CONTEXT
  std::optional<std::string> docker_config;   // DOCKER_CONFIG: the CLI's config directory
  std::optional<std::string> home;            // HOME: ~/.docker otherwise
  static DockerClientEnvironment from_process();
};

// The unix socket the docker CLI would talk to, following its own order (DOCKER_HOST, then
// DOCKER_CONTEXT, then config.json's currentContext); nullopt, with `why_not` said, where it
// would reach the engine some other way. Does not look at the socket itself.
std::optional<std::string> docker_socket_path(const DockerClientEnvironment& env, std::string& why_not);

// Every running container that holds a GPU, through the API at `socket_path`: the container
// list, then each container's inspect answer (a few asked at once; read by
// parse_gpu_containers). All of it done within `timeout`; a container gone between list and inspect is left out. Throws
// Error when the engine cannot be asked.
std::vector<GpuContainer> docker_api_gpu_holders(const std::string& socket_path, std::chrono::milliseconds timeout,
                                                 Listing listing = Listing::running);

// The same through `client`, which may have sent the list request ahead (docker_api_list_target).
std::vector<GpuContainer> docker_api_gpu_holders(UnixHttpClient& client, const std::string& socket_path,
                                                 Listing listing);

// The container list's request: running containers, or all of them.
std::string docker_api_list_target(Listing listing);

// The peer of the Docker engine's socket, for UnixHttpClient.
HttpPeer docker_api_peer();

// Whether the engine at `socket_path` has CDI: its /info's CDISpecDirs (docker 25+), remembered in
// `cache_file` while the engine runs (docker/cdi_cache.hpp; "": asked every time). Never throws.
CdiSupport docker_api_cdi_support(const std::string& socket_path, std::chrono::milliseconds timeout,
                                  const std::string& cache_file);

// The docker engine asked through its socket, run through `docker_cli` (argv[0] of the argvs).
// Null, with `why_not` said (and logged at --verbose), where the socket does not apply: a
// tcp/ssh DOCKER_HOST, a docker context, a client that is not docker's (podman), no socket
// there or none this user may open. The caller then uses the docker CLI. `script_head`, where
// given, gets the client's first 4 KiB where it is a script (read here once: the CLI engine tells
// podman-docker's from it), "" otherwise.
std::unique_ptr<ContainerEngine> make_docker_api_engine(const std::string& docker_cli, std::string& why_not,
                                                        std::string* script_head = nullptr);
// The same at a known socket (podman's Docker-compatible one, with `name` "podman"; a test's
// private dockerd).
std::unique_ptr<ContainerEngine> make_docker_api_engine_at(const std::string& docker_cli,
                                                           const std::string& socket_path,
                                                           const std::string& name = "docker");

// The first `size` bytes of `program` (found as exec finds it) where it starts with "#!": a wrapper
// (an admin's, or podman-docker's `docker`), not docker's client itself; "" otherwise.
std::string script_start(const std::string& program, std::size_t size);

}  // namespace gpurun
