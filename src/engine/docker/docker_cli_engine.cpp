#include "docker/docker_cli_engine.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "access_hint.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

std::string short_error(const ProcessResult& result) {
  const auto lines = text::non_blank_lines(result.err.empty() ? result.out : result.err);
  if (lines.empty()) return {};
  const std::string_view first = text::trim(lines.front().text);
  return ": " + text::printable_words(first, 240) + engine_access_hint(first);
}

}  // namespace

std::vector<std::string> docker_stop_argv(const std::string& client, const std::string& container,
                                          std::optional<int> timeout_s) {
  std::vector<std::string> argv{client, "stop"};
  if (timeout_s) argv.insert(argv.end(), {"--time", std::to_string(*timeout_s)});
  argv.insert(argv.end(), {"--", container});
  return argv;
}

std::vector<std::string> docker_logs_argv(const std::string& client, const std::string& container,
                                          const LogsRequest& request) {
  std::vector<std::string> argv{client, "logs"};
  if (request.follow) argv.emplace_back("--follow");
  if (!request.tail.empty()) argv.insert(argv.end(), {"--tail", request.tail});
  argv.insert(argv.end(), {"--", container});
  return argv;
}

std::vector<GpuContainer> DockerCliEngine::gpu_holders(std::chrono::milliseconds timeout, Listing listing) {
  // A container that exits between `ps` and `inspect` makes inspect exit 1 while it still
  // describes the others: its JSON is kept then.
  const auto ask = [&](std::vector<std::string> argv, bool output_counts_on_failure) {
    argv.insert(argv.begin(), client_);
    const ProcessResult result = run_process({argv, {}}, timeout);
    const bool usable = result.succeeded() || (output_counts_on_failure && result.end == ProcessResult::End::exited &&
                                               text::trim(result.out).starts_with("["));
    if (!usable)  // a client that cannot be run: 127 or 126, as docker's exec at a launch would be
      throw Error(fmt::format("`{} {}` {}{}", client_, argv[1], describe_end(result, timeout), short_error(result)),
                  result.end != ProcessResult::End::not_started ? exit_code::failure
                  : result.spawn_errno == ENOENT                ? exit_code::not_found
                  : result.spawn_errno == EACCES || result.spawn_errno == ENOEXEC || result.spawn_errno == EPERM
                      ? exit_code::cannot_execute
                      : exit_code::failure);  // a fork limit is no client that cannot be run
    return result.out;
  };
  std::vector<std::string> inspect{"inspect", "--type", "container"};
  std::vector<std::string> ps{"ps", "--quiet", "--no-trunc"};
  if (listing == Listing::all) ps.emplace_back("--all");
  const std::string ids = ask(ps, false);  // the lines below point into it
  for (const auto& line : text::non_blank_lines(ids)) inspect.emplace_back(text::trim(line.text));
  if (inspect.size() == 3) return {};
  return parse_gpu_containers(ask(inspect, true));
}

std::optional<bool> DockerCliEngine::rootless() const {
  if (name_ == "podman") return ::getuid() != 0;  // the CLI runs with the real ids: root's under sudo
  // Rootless docker's socket is in its user's runtime directory; a context may name any engine.
  const char* host = std::getenv("DOCKER_HOST");
  if (host != nullptr && std::string_view(host).starts_with("unix:///run/user/")) return true;
  return std::nullopt;
}

CdiSupport DockerCliEngine::cdi_support(std::chrono::milliseconds timeout) {
  if (name_ == "podman") return {true, "podman always resolves CDI devices"};
  try {
    const ProcessResult result = run_process({{client_, "info", "--format", "{{json .CDISpecDirs}}"}, {}}, timeout);
    // A docker before 25 knows no such field: its template fails, and it has no CDI.
    if (!result.succeeded()) return {false, fmt::format("`{} info` names no CDI spec directory", client_)};
    return cdi_from_spec_dirs(text::trim(result.out), fmt::format("`{} info`", client_));
  } catch (const Error& e) {
    return {false, fmt::format("`{} info` could not be run ({})", client_, e.what())};
  }
}

std::vector<std::string> DockerCliEngine::run_argv(const DockerRunRequest& request) const {
  DockerRunRequest r = request;
  r.init = name_ == "docker" && !runs_podman_;  // docker ships its init (docker-init)
  std::vector<std::string> argv = build_docker_argv(r);
  argv.front() = client_;
  return argv;
}

std::vector<std::string> DockerCliEngine::stop_argv(const std::string& container, std::optional<int> timeout_s) const {
  return docker_stop_argv(client_, container, timeout_s);
}

std::vector<std::string> DockerCliEngine::logs_argv(const std::string& container, const LogsRequest& request) const {
  return docker_logs_argv(client_, container, request);
}

std::vector<std::string> docker_attach_argv(const std::string& client, const std::string& container) {
  return {client, "attach", "--sig-proxy=false", "--detach-keys=ctrl-p,ctrl-q", "--", container};
}

std::vector<std::string> DockerCliEngine::attach_argv(const std::string& container) const {
  return docker_attach_argv(client_, container);
}

std::vector<std::string> docker_remove_argv(const std::string& client, const std::string& container) {
  return {client, "rm", "--volumes", "--", container};  // its anonymous volumes too, as --rm did
}

std::vector<std::string> DockerCliEngine::remove_argv(const std::string& container) const {
  return docker_remove_argv(client_, container);
}

std::vector<std::string> DockerCliEngine::inspect_argv(const std::string& container) const {
  return {client_, "inspect", "--type", "container", "--", container};
}

std::vector<std::string> DockerCliEngine::image_inspect_argv(const std::string& image) const {
  return {client_, "inspect", "--type", "image", "--", image};
}

}  // namespace gpurun
