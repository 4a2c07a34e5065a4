#include "docker/docker_api.hpp"

#include "docker/cdi_cache.hpp"
#include "docker/docker_cli_engine.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <optional>

#include "access_hint.hpp"
#include "gpurun/engine/docker_command.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/json_kept.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/unix_http.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

using nlohmann::json;

// Inspects asked at once, each on a connection of its own, so that the engine's answers overlap;
// each connection costs a connect, and a GPU server runs few containers.
constexpr std::size_t kInspectConnections = 4;

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::optional<std::string>(value) : std::nullopt;
}

// config.json's currentContext: "" when there is none, or no file; nullopt where the file may not
// be read (under sudo, root's as the caller): its context is then unknown, not the default.
std::optional<std::string> current_context(const DockerClientEnvironment& env) {
  std::string dir;
  if (env.docker_config)
    dir = *env.docker_config;
  else if (env.home)
    dir = *env.home + "/.docker";
  else
    return std::string{};
  // Regular files only: a FIFO there would hang every launch. Docker's own file is a few KB.
  const BoundedRead file = read_bounded(dir + "/config.json", std::size_t{16} << 20, FileKinds::regular_only);
  if (!file.text) return file.error == EACCES || file.error == EPERM ? std::nullopt : std::optional<std::string>("");
  const json config = json::parse(*file.text, nullptr, false);
  if (!config.is_object()) return std::string{};
  const auto it = config.find("currentContext");
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

// The engine's own words for a refusal: {"message": "..."}.
std::string engine_message(const HttpResponse& response) {
  const json body = json::parse(response.body, nullptr, false);
  if (body.is_object() && body.contains("message") && body["message"].is_string())
    return text::printable(body["message"].get<std::string>(), 200);
  return text::printable(text::trim(response.body), 200);
}

// Container IDs are hex; anything else is not put into a request path.
bool plain_id(std::string_view id) {
  return !id.empty() && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

class DockerApiEngine final : public ContainerEngine {
 public:
  DockerApiEngine(std::string docker_cli, std::string socket_path, std::string name)
      : docker_(std::move(docker_cli)), socket_(std::move(socket_path)), name_(std::move(name)) {}

  std::string name() const override { return name_; }
  // A socket of a user's own is a rootless engine's (its $XDG_RUNTIME_DIR); root's, or root's
  // shared with the docker group, a rootful one's.
  std::optional<bool> rootless() const override {
    struct stat socket {};
    if (::stat(socket_.c_str(), &socket) != 0) return std::nullopt;
    return socket.st_uid != 0;
  }
  std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds timeout, Listing listing) override {
    if (!ahead_) return docker_api_gpu_holders(socket_, timeout, listing);
    const std::unique_ptr<UnixHttpClient> client = std::move(ahead_);
    return docker_api_gpu_holders(*client, socket_, listing);
  }
  void ask_gpu_holders_ahead(std::chrono::milliseconds timeout, Listing listing) override {
    try {
      ahead_ = std::make_unique<UnixHttpClient>(socket_, std::chrono::steady_clock::now() + timeout, docker_api_peer());
      ahead_->send_ahead(docker_api_list_target(listing));
    } catch (const std::exception&) {  // no memory: gpu_holders asks as it would have
      ahead_.reset();
    }
  }
  CdiSupport cdi_support(std::chrono::milliseconds timeout) override {
    if (name_ == "podman") return {true, "podman always resolves CDI devices"};
    return docker_api_cdi_support(socket_, timeout, default_cdi_cache_file());
  }
  std::vector<std::string> run_argv(const DockerRunRequest& request) const override {
    DockerRunRequest r = request;
    r.docker = docker_;
    r.init = name_ == "docker";  // docker ships its init (docker-init)
    return build_docker_argv(r);
  }
  std::vector<std::string> stop_argv(const std::string& container, std::optional<int> timeout_s) const override {
    return docker_stop_argv(docker_, container, timeout_s);
  }
  std::vector<std::string> logs_argv(const std::string& container, const LogsRequest& request) const override {
    return docker_logs_argv(docker_, container, request);
  }
  std::vector<std::string> attach_argv(const std::string& container) const override {
    return docker_attach_argv(docker_, container);
  }
  std::vector<std::string> remove_argv(const std::string& container) const override {
    return docker_remove_argv(docker_, container);
  }
  std::vector<std::string> inspect_argv(const std::string& container) const override {
    return {docker_, "inspect", "--type", "container", "--", container};
  }
  std::vector<std::string> image_inspect_argv(const std::string& image) const override {
    return {docker_, "inspect", "--type", "image", "--", image};
  }

 private:
  std::string docker_;
  std::string socket_;
  std::string name_;
  std::unique_ptr<UnixHttpClient> ahead_;  // its list request sent ahead, for the next gpu_holders
};

}  // namespace

DockerClientEnvironment DockerClientEnvironment::from_process() {
  return {env_value("DOCKER_HOST"), env_value("DOCKER_CONTEXT"), env_value("DOCKER_CONFIG"), env_value("HOME")};
}

std::optional<std::string> docker_socket_path(const DockerClientEnvironment& env, std::string& why_not) {
  // The docker CLI's order (cli/command/cli.go, resolveContextName): DOCKER_HOST means the
  // default context with that host, then DOCKER_CONTEXT, then config.json's currentContext.
  if (env.docker_host) {
    constexpr std::string_view unix_scheme = "unix://";
    if (env.docker_host->starts_with(unix_scheme) && env.docker_host->size() > unix_scheme.size())
      return env.docker_host->substr(unix_scheme.size());
    why_not = fmt::format("DOCKER_HOST is {}, not a unix socket", text::printable(*env.docker_host, 100));
    return std::nullopt;
  }
  const std::optional<std::string> read = env.docker_context ? env.docker_context : current_context(env);
  if (!read) {
    why_not = "docker's config.json cannot be read here, so its current context is not known";
    return std::nullopt;
  }
  const std::string& context = *read;
  if (!context.empty() && context != "default") {
    why_not = fmt::format("the docker context \"{}\" is in use", text::printable(context, 100));
    return std::nullopt;
  }
  return std::string(kDefaultDockerSocket);
}

HttpPeer docker_api_peer() { return {.name = "the Docker engine", .access_hint = engine_access_hint, .headers = {}}; }

// Running ones, as `docker ps`; with all=1 the others too, as `docker ps -a`. Unversioned, which
// the engine answers in its own newest version: no /_ping first to learn it (a round trip per
// launch), and nothing for an engine to refuse as too old, as Docker 29 refuses every version
// before 1.44. The fields read (ids, names, labels, environment, device requests, devices) have
// kept their shape since API 1.40.
std::string docker_api_list_target(Listing listing) {
  return listing == Listing::all ? "/containers/json?all=1" : "/containers/json";
}

std::vector<GpuContainer> docker_api_gpu_holders(const std::string& socket_path, std::chrono::milliseconds timeout,
                                                 Listing listing) {
  UnixHttpClient client(socket_path, std::chrono::steady_clock::now() + timeout, docker_api_peer());
  return docker_api_gpu_holders(client, socket_path, listing);
}

std::vector<GpuContainer> docker_api_gpu_holders(UnixHttpClient& client, const std::string& socket_path,
                                                 Listing listing) {
  const auto refused = [&](const std::string& what, const HttpResponse& r) {
    return Error(fmt::format("the Docker engine at {} refused {} (HTTP {}): {}", socket_path, what, r.status,
                             engine_message(r)));
  };
  const HttpResponse list = client.get(docker_api_list_target(listing));
  if (list.status != 200) throw refused("the container list", list);
  constexpr std::array<std::string_view, 1> kIdOnly{"/Id"};
  const json listed = parse_json_keeping(list.body, kIdOnly);
  if (!listed.is_array())
    throw Error(fmt::format("the Docker engine at {} answered the container list with no JSON array", socket_path));
  std::vector<std::string> targets;
  for (const json& c : listed) {
    const json* id = c.is_object() && c.contains("Id") ? &c["Id"] : nullptr;
    if (id == nullptr || !id->is_string() || !plain_id(id->get_ref<const std::string&>())) continue;
    targets.push_back(fmt::format("/containers/{}/json", id->get_ref<const std::string&>()));
  }

  // Each container's inspect answer, up to kInspectConnections asked at once, each read as it
  // comes while the engine answers the others.
  std::vector<std::vector<GpuContainer>> found(targets.size());
  std::optional<Error> failed;
  client.get_each(targets, kInspectConnections, [&](std::size_t i, HttpResponse&& one) {
    if (failed || one.status == 404) return;  // 404: gone since the list
    try {
      if (one.status != 200) throw refused("to inspect a container", one);
      if (text::trim(one.body).empty()) throw Error("docker inspect did not answer with a JSON array");
      found[i] = parse_gpu_containers("[" + one.body + "]");  // as `docker inspect` prints it
    } catch (const Error& e) {
      failed = e;
    } catch (const std::exception& e) {  // (get_each's handlers must not throw)
      failed = Error(e.what());
    }
  });
  if (failed) throw Error(*failed);  // (a copy, with its exit code)
  std::vector<GpuContainer> containers;
  for (std::vector<GpuContainer>& some : found)
    containers.insert(containers.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
  return containers;
}

CdiSupport docker_api_cdi_support(const std::string& socket_path, std::chrono::milliseconds timeout,
                                  const std::string& cache_file) {
  const std::optional<std::string> mark = socket_mark(socket_path);
  if (mark && !cache_file.empty())
    if (std::optional<CdiSupport> known = [&] {
          const AsRoot root;  // under sudo: root's file (default_cdi_cache_file)
          return cached_cdi(cache_file, socket_path, *mark);
        }()) {
      known->why += " (remembered while the engine runs)";
      return *known;
    }
  try {
    UnixHttpClient client(socket_path, std::chrono::steady_clock::now() + timeout, docker_api_peer());
    const HttpResponse info = client.get("/info");
    if (info.status != 200) return {false, fmt::format("the engine's /info answered HTTP {}", info.status)};
    const json answer = json::parse(info.body, nullptr, false);
    const json dirs = answer.is_object() && answer.contains("CDISpecDirs") ? answer["CDISpecDirs"] : json();
    CdiSupport cdi = cdi_from_spec_dirs(dirs.dump(), "the engine's /info");
    if (mark && answer.is_object()) {
      const AsRoot root;
      remember_cdi(cache_file, socket_path, *mark, cdi);
    }
    return cdi;
  } catch (const std::exception& e) {
    return {false, fmt::format("the engine's /info could not be asked ({})", e.what())};
  }
}

std::string script_start(const std::string& program, std::size_t size) {
  int error = 0;
  const std::string path = find_program(program, error);
  if (path.empty()) return "";
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  std::string start(std::max<std::size_t>(size, 2), '\0');
  const ssize_t got = fd.valid() ? ::read(fd.get(), start.data(), start.size()) : -1;
  if (got < 2 || start[0] != '#' || start[1] != '!') return "";
  start.resize(static_cast<std::size_t>(got));
  return start;
}

std::unique_ptr<ContainerEngine> make_docker_api_engine_at(const std::string& docker_cli,
                                                           const std::string& socket_path, const std::string& name) {
  return std::make_unique<DockerApiEngine>(docker_cli, socket_path, name);
}

std::unique_ptr<ContainerEngine> make_docker_api_engine(const std::string& docker_cli, std::string& why_not,
                                                        std::string* script_head) {
  const auto decline = [&](std::string reason) -> std::unique_ptr<ContainerEngine> {
    why_not = std::move(reason);
    spdlog::debug("asking {} (the CLI), not the Engine API: {}", docker_cli, why_not);
    return nullptr;
  };
  // podman's CLI talks to podman, not to docker's socket (podman has an engine of its own).
  const std::string_view base = std::string_view(docker_cli).substr(docker_cli.rfind('/') + 1);
  if (base.starts_with("podman")) return decline(fmt::format("{} is not docker's client", docker_cli));
  // Under sudo the client and its config.json are root's (admin's files), read as root sees them.
  const AsRoot root;
  // An admin's wrapper script may name another engine (DOCKER_HOST set inside it): its engine is
  // the one it runs the job on, so it is asked through it.
  const std::string head = script_start(docker_cli, 4096);
  if (script_head != nullptr) *script_head = head;
  if (!head.empty()) return decline(fmt::format("{} is a script, which chooses its own engine", docker_cli));
  std::string reason;
  const auto socket = docker_socket_path(DockerClientEnvironment::from_process(), reason);
  if (!socket) return decline(reason);
  struct stat st {};
  if (::stat(socket->c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
    return decline(fmt::format("no socket at {}", *socket));
  if (::access(socket->c_str(), R_OK | W_OK) != 0)
    return decline(fmt::format("{} may not be opened by this user", *socket));
  return make_docker_api_engine_at(docker_cli, *socket);
}

}  // namespace gpurun
