#include "gpurun/engine/docker_command.hpp"

#include "gpurun/util/docker_args.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "gpurun/engine/gpu_request.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

// A field of docker's --mount value, which docker reads as CSV.
std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char c : field) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void add_bind_mount(std::vector<std::string>& argv, const std::string& path) {
  // --volume splits on ':', so a path holding one needs the --mount syntax.
  if (path.find(':') == std::string::npos) {
    argv.insert(argv.end(), {"--volume", path + ":" + path});
  } else {
    argv.insert(argv.end(),
                {"--mount", "type=bind," + csv_field("source=" + path) + "," + csv_field("target=" + path)});
  }
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

}  // namespace

std::string container_name(std::string_view login, const std::vector<int>& gpu_indices, std::string_view suffix) {
  std::string name;
  for (char c : login) name += is_name_char(c) ? c : '_';
  // Docker names must start with a letter or digit.
  if (name.empty() || !(std::isalnum(static_cast<unsigned char>(name.front())) != 0)) name.insert(0, "user");
  name += fmt::format("_gpu{}", fmt::join(gpu_indices, "-"));
  if (!suffix.empty()) name += fmt::format("_{}", suffix);
  return name;
}

// getrandom(2), not std::random_device: that one asks the CPU (cpuid) what it can do first, which a
// virtual machine answers slowly.
std::string random_suffix() {
  std::uint32_t value = 0;
  if (::getrandom(&value, sizeof value, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof value))
    value = static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format("{:08x}", value);
}

void check_workdir_mount(const std::string& workdir) {
  static constexpr auto kSystem = std::to_array<std::string_view>(
      {"/",        "/bin",       "/boot",     "/dev",       "/etc",       "/lib",         "/lib32",   "/lib64",
       "/libx32",  "/proc",      "/run",      "/sbin",      "/sys",       "/usr",         "/var",     "/usr/bin",
       "/usr/lib", "/usr/lib64", "/usr/sbin", "/usr/local", "/usr/share", "/usr/include", "/var/lib", "/opt"});
  const std::string normal = std::filesystem::path(workdir).lexically_normal().string();
  const std::string_view bare = normal.size() > 1 && normal.ends_with('/')
                                    ? std::string_view(normal).substr(0, normal.size() - 1)
                                    : std::string_view(normal);
  if (std::find(kSystem.begin(), kSystem.end(), bare) != kSystem.end())
    throw Error(
        fmt::format("the job gets the working directory mounted at the same path, and {} would {}: cd to "
                    "your project's directory first",
                    bare, bare == "/" ? "be all of the host (docker refuses it)" : "hide the image's own"));
}

std::string current_workdir() {
  std::string buffer(4096, '\0');
  while (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    if (errno != ERANGE)
      throw Error(
          fmt::format("cannot read the current directory ({}); cd to a directory that exists", std::strerror(errno)));
    buffer.resize(buffer.size() * 2);
  }
  buffer.resize(std::strlen(buffer.c_str()));  // up to getcwd's NUL
  return buffer;
}

LaunchIdentity current_identity() {
  LaunchIdentity identity;
  identity.uid = ::getuid();
  identity.gid = ::getgid();
  if (const auto& login = own_login_name()) {
    identity.login = *login;
  } else if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    identity.login = user;
  } else {
    identity.login = fmt::format("uid{}", identity.uid);
  }
  identity.workdir = current_workdir();
  return identity;
}

std::vector<std::string> build_docker_argv(const DockerRunRequest& request) {
  const std::string indices = fmt::format("{}", fmt::join(request.gpu_indices, ","));
  // An attached job's output went to its terminal; a detached job's is in its container, which
  // stays when the job ends (however it ends) until `gpurun rm` removes it.
  std::vector<std::string> argv{request.docker, "run"};
  if (!request.detach) argv.emplace_back("--rm");
  if (request.init) argv.emplace_back("--init");
  if (request.detach) {
    // docker's -dit: an open stdin and a terminal of its own, so that `gpurun attach` gets a job
    // to type to, and Ctrl-P Ctrl-Q detaches again instead of Ctrl-C ending it.
    argv.insert(argv.end(), {"--detach", "--interactive", "--tty"});
  } else {
    argv.emplace_back("--interactive");
    if (request.tty) argv.emplace_back("--tty");
  }
  const std::string name = request.name.empty()
                               ? container_name(request.identity.login, request.gpu_indices, request.name_suffix)
                               : request.name;
  argv.insert(argv.end(), {"--name", name});
  const auto gpus = gpu_request_args(request.gpu_request, request.gpu_indices, request.gpu_uuids);
  argv.insert(argv.end(), gpus.begin(), gpus.end());
  argv.insert(argv.end(), {"--cpus", std::to_string(request.cpus)});
  // The GPUs' own NUMA nodes: --cpus stays the quota, within these CPUs.
  if (!request.cpuset_cpus.empty()) argv.insert(argv.end(), {"--cpuset-cpus", request.cpuset_cpus});
  if (!request.cpuset_mems.empty()) argv.insert(argv.end(), {"--cpuset-mems", request.cpuset_mems});
  argv.insert(argv.end(), {"--user", fmt::format("{}:{}", request.identity.uid, request.identity.gid)});
  const std::string& workdir_source =
      request.identity.workdir_source.empty() ? request.identity.workdir : request.identity.workdir_source;
  if (workdir_source == request.identity.workdir)
    add_bind_mount(argv, request.identity.workdir);
  else
    argv.insert(argv.end(), {"--mount", "type=bind," + csv_field("source=" + workdir_source) + "," +
                                            csv_field("target=" + request.identity.workdir)});
  argv.insert(
      argv.end(),
      {"--workdir", request.identity.workdir,
       // NVIDIA's recommended settings for deep-learning containers.
       "--shm-size=1g", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864", "--log-opt", "max-size=50m", "--label",
       fmt::format("{}={}", kLabelUser, request.identity.login), "--label", fmt::format("{}={}", kLabelGpus, indices),
       "--label", fmt::format("{}={}", kLabelGpuUuids, fmt::join(request.gpu_uuids, ",")), "--label",
       fmt::format("{}={}", kLabelUid, request.identity.uid), "--label", fmt::format("{}={}", kLabelName, name)});
  // Written whether asked for or not (empty: none): a container shows its image's labels as its
  // own, and an image committed from a gpurun container carries that launch's time limit and
  // notification to everyone who runs it.
  argv.insert(argv.end(), {"--label",
                           fmt::format("{}={}", kLabelTimeLimit,
                                       request.time_limit ? std::to_string(request.time_limit->count()) : ""),
                           "--label", fmt::format("{}={}", kLabelNotify, request.notify ? "run_ended" : ""), "--label",
                           fmt::format("{}={}", kLabelDetached, request.detach ? "true" : "")});
  for (unsigned group : request.identity.groups)
    if (group != request.identity.gid) argv.insert(argv.end(), {"--group-add", std::to_string(group)});
  // An image's own ENV cannot widen what the runtime hands out (the runtime form sets it already):
  // under sudo whatever the form, and for CDI always, since docker sets the variable for --gpus
  // alone, and where the nvidia runtime is the engine's default (DGX OS) it read a CUDA image's
  // NVIDIA_VISIBLE_DEVICES=all and gave the job every GPU, others' among them.
  if (request.gpu_request == GpuRequestForm::cdi ||
      (request.for_caller && request.gpu_request != GpuRequestForm::runtime))
    argv.insert(argv.end(),
                {"--env", "NVIDIA_VISIBLE_DEVICES=" +
                              visible_devices(request.gpu_request, request.gpu_indices, request.gpu_uuids)});
  if (request.for_caller) {
    argv.insert(argv.end(), {"--security-opt", "no-new-privileges"});
    // Nor an image's ENV the toolkit's switches that hand the container host devices besides
    // its GPUs (InfiniBand, NVSwitch, GPUDirect Storage and RDMA), which --device is refused for.
    for (const std::string_view device_switch : kToolkitDeviceSwitches)
      argv.insert(argv.end(), {"--env", std::string(device_switch) + "=disabled"});
  }
  for (const auto& e : request.env) argv.insert(argv.end(), {"--env", e});
  for (const auto& v : request.volumes) argv.insert(argv.end(), {"--volume", v});
  for (const auto& p : request.publish) argv.insert(argv.end(), {"--publish", p});
  argv.insert(argv.end(), request.docker_opts.begin(), request.docker_opts.end());
  argv.push_back(request.image);
  argv.insert(argv.end(), request.command.begin(), request.command.end());
  return argv;
}

}  // namespace gpurun
