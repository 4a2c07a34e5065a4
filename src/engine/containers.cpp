#include "gpurun/engine/containers.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

#include "gpurun/engine/docker_command.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/json_kept.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

using nlohmann::json;

// The value at `pointer`, or nullptr. Never a copy: copying a json value recurses once per level
// of nesting, so a deeply nested value (the fuzzer's find) would overflow the stack.
const json* find_at(const json& object, const json::json_pointer& pointer) {
  return object.contains(pointer) ? &object.at(pointer) : nullptr;
}

// The member `key` of an object, or nullptr.
const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_at(const json& object, const json::json_pointer& pointer) {
  const json* value = find_at(object, pointer);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string{};
}

void add_device_list(GpuContainer& container, std::string_view list) {
  const std::string lowered = text::to_lower(text::trim(list));
  if (lowered.empty() || lowered == "none" || lowered == "void") return;
  if (lowered == "all") {
    container.all_gpus = true;
    return;
  }
  for (std::string_view device : text::split(list, ','))
    if (!text::trim(device).empty()) container.devices.emplace_back(text::trim(device));
}

// NVIDIA's CDI devices are "nvidia.com/gpu=<index|UUID|index:MIG|all>" (nvidia-ctk's spec).
constexpr std::string_view kNvidiaCdiPrefix = "nvidia.com/gpu=";

// Adds a CDI device name; false when it is not one of NVIDIA's GPUs.
bool add_cdi_device(GpuContainer& container, std::string_view name) {
  if (!name.starts_with(kNvidiaCdiPrefix)) return false;
  add_device_list(container, name.substr(kNvidiaCdiPrefix.size()));
  return true;
}

// A request docker's nvidia driver serves: Driver "nvidia", or no driver and a capability set
// that driver has whole (daemon/nvidia_linux.go: gpu, nvidia and the toolkit's capabilities; a
// compose file's `capabilities: [compute, utility]` gets the GPUs too).
bool is_gpu_request(const json& request) {
  const std::string driver = string_at(request, json::json_pointer("/Driver"));
  if (driver == "nvidia") return true;
  if (!driver.empty()) return false;
  constexpr std::array<std::string_view, 8> kNvidiaCapabilities{"gpu",      "nvidia",  "compute", "compat32",
                                                                "graphics", "utility", "video",   "display"};
  const json* capabilities = member(request, "Capabilities");
  if (capabilities == nullptr || !capabilities->is_array()) return false;
  return std::any_of(capabilities->begin(), capabilities->end(), [&](const json& set) {
    return set.is_array() && !set.empty() && std::all_of(set.begin(), set.end(), [&](const json& c) {
             return c.is_string() && std::find(kNvidiaCapabilities.begin(), kNvidiaCapabilities.end(),
                                               c.get_ref<const std::string&>()) != kNvidiaCapabilities.end();
           });
  });
}

// One DeviceRequest: --gpus (Capabilities gpu, or Driver nvidia) or, from docker 25 on,
// --device nvidia.com/gpu=0 (Driver cdi). True when it asks for NVIDIA GPUs.
bool add_device_request(GpuContainer& container, const json& request) {
  const json* ids = member(request, "DeviceIDs");
  const bool has_ids = ids != nullptr && ids->is_array() && !ids->empty();
  if (string_at(request, json::json_pointer("/Driver")) == "cdi") {
    bool gpus = false;
    if (has_ids)
      for (const json& id : *ids)
        if (id.is_string()) gpus = add_cdi_device(container, id.get_ref<const std::string&>()) || gpus;
    return gpus;
  }
  if (!is_gpu_request(request)) return false;
  const json* count = member(request, "Count");
  if (has_ids) {
    for (const json& id : *ids)
      if (id.is_string()) add_device_list(container, id.get<std::string>());
  } else if (count != nullptr && count->is_number_integer()) {
    // --gpus all is Count -1; --gpus N takes the first N GPUs.
    const auto n = count->get<long long>();
    if (n < 0) container.all_gpus = true;
    for (long long i = 0; i < std::min<long long>(n, 4096); ++i) container.devices.push_back(std::to_string(i));
  }
  return true;
}

// One --device mapping: a GPU's device node (/dev/nvidia3) or a CDI name (podman, and compose
// before 2.30, store `--device nvidia.com/gpu=0` here). True when it is an NVIDIA GPU.
bool add_device_mapping(GpuContainer& container, const json& mapping) {
  if (!mapping.is_object()) return false;
  const std::string path = string_at(mapping, json::json_pointer("/PathOnHost"));
  if (add_cdi_device(container, path)) return true;
  constexpr std::string_view cap = "/dev/nvidia-caps/nvidia-cap";
  if (path.starts_with(cap)) {
    if (const auto n = text::parse_integer(std::string_view(path).substr(cap.size())); n && *n >= 0 && *n < 1000000)
      container.mig_caps.push_back(static_cast<int>(*n));
    return false;  // a capability alone holds no GPU
  }
  constexpr std::string_view node = "/dev/nvidia";
  if (!path.starts_with(node)) return false;
  const std::string_view minor = std::string_view(path).substr(node.size());
  // /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia-caps/... are shared by every GPU's user.
  if (minor.empty() || !std::all_of(minor.begin(), minor.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
      minor.size() > 6)
    return false;
  container.devices.push_back(fmt::format("{}{}", kMinorPrefix, minor));
  return true;
}

// Whether gpurun's labels in `labels` are the container's own (docker_command.hpp).
bool labels_are_its_own(const json& labels, std::string_view name) {
  const auto label = labels.find(std::string(kLabelName));
  if (label == labels.end()) return labels_written_for(std::nullopt, name);
  return labels_written_for(label->is_string() ? label->get<std::string>() : std::string(), name);
}

// The time limit and notification a launch asked for (docker_command.hpp's labels); a value
// that is not one gpurun writes is ignored.
void read_policy_labels(const json& labels, GpuContainer& container) {
  const auto limit = labels.find(std::string(kLabelTimeLimit));
  // gpurun writes a year at most (config/values.hpp, kLongestDuration); a label written by hand
  // past that is not its, and 10^18 s would overflow the service's clock arithmetic.
  constexpr long long kLongestTimeLimit = 366LL * 86400;
  if (limit != labels.end() && limit->is_string())
    if (const auto seconds = text::parse_integer(limit->get<std::string>());
        seconds && *seconds > 0 && *seconds <= kLongestTimeLimit)
      container.time_limit = std::chrono::seconds(*seconds);
  const auto notify = labels.find(std::string(kLabelNotify));
  container.notify_end = notify != labels.end() && notify->is_string() && notify->get<std::string>() == "run_ended";
}

// Every member read_container reads: the rest of an inspect answer is not built.
constexpr std::array<std::string_view, 16> kMembersRead{"/Id",
                                                        "/Name",
                                                        "/Path",
                                                        "/Args",
                                                        "/Config/Image",
                                                        "/Config/Labels",
                                                        "/Config/Env",
                                                        "/State/Status",
                                                        "/State/StartedAt",
                                                        "/State/FinishedAt",
                                                        "/State/ExitCode",
                                                        "/Created",
                                                        "/HostConfig/DeviceRequests",
                                                        "/HostConfig/Devices",
                                                        "/HostConfig/Privileged",
                                                        "/HostConfig/Runtime"};

// What one container holds, from `docker inspect` of it.
GpuContainer read_container(const json& c) {
  GpuContainer container;
  container.id = string_at(c, json::json_pointer("/Id"));
  container.name = string_at(c, json::json_pointer("/Name"));
  if (container.name.starts_with('/')) container.name.erase(0, 1);
  container.image = string_at(c, json::json_pointer("/Config/Image"));
  container.status = string_at(c, json::json_pointer("/State/Status"));
  container.started_at = string_at(c, json::json_pointer("/State/StartedAt"));
  container.finished_at = string_at(c, json::json_pointer("/State/FinishedAt"));
  container.created_at = string_at(c, json::json_pointer("/Created"));
  if (const json* code = find_at(c, "/State/ExitCode"_json_pointer);
      code != nullptr && code->is_number_integer() && has_ended(container) && !never_started(container))
    container.exit_code = code->get<int>();
  container.command = string_at(c, json::json_pointer("/Path"));
  if (const json* args = find_at(c, "/Args"_json_pointer); args != nullptr && args->is_array())
    for (const json& arg : *args)
      if (arg.is_string()) container.command.append(" ").append(arg.get_ref<const std::string&>());

  const json* labels = find_at(c, "/Config/Labels"_json_pointer);
  if (labels != nullptr && (!labels->is_object() || !labels_are_its_own(*labels, container.name))) labels = nullptr;
  if (labels != nullptr && labels->contains(std::string(kLabelUser))) {
    container.started_by_gpurun = true;
    if (labels->at(std::string(kLabelUser)).is_string()) container.user = labels->at(std::string(kLabelUser));
  }
  // Nobody else's: the engine records no one who ran a container, and an image's Config.User
  // ("ubuntu", "1000") is an account inside it, not a person to name, mail or exempt.
  // Every launch writes gpurun.name beside the time limit and notification labels (since
  // 2026-11-27; a container of the two days before keeps max_runtime, not its own limit): without
  // it they are an image's (a LABEL in a Dockerfile), and a plain `docker run` of that image is
  // no launch of gpurun's to stop or mail about.
  container.labelled_by_launch = container.started_by_gpurun && labels->contains(std::string(kLabelName));
  if (container.labelled_by_launch) {
    read_policy_labels(*labels, container);
    const auto detached = labels->find(std::string(kLabelDetached));
    container.detached = detached != labels->end() && *detached == "true";
  }

  bool requests_gpus = false;
  bool docker_sets_env = false;  // a --gpus request: docker gives the runtime NVIDIA_VISIBLE_DEVICES itself
  const json* requests = find_at(c, "/HostConfig/DeviceRequests"_json_pointer);
  if (requests != nullptr && requests->is_array())
    for (const json& request : *requests)
      if (request.is_object()) {
        const bool gpus = add_device_request(container, request);
        requests_gpus = requests_gpus || gpus;
        docker_sets_env = docker_sets_env || (gpus && string_at(request, json::json_pointer("/Driver")) != "cdi");
      }
  const json* mappings = find_at(c, "/HostConfig/Devices"_json_pointer);
  if (mappings != nullptr && mappings->is_array())
    for (const json& mapping : *mappings) requests_gpus = add_device_mapping(container, mapping) || requests_gpus;
  // A privileged container sees every device node the host has, every GPU's included.
  const json* privileged = find_at(c, "/HostConfig/Privileged"_json_pointer);
  if (privileged != nullptr && privileged->is_boolean() && privileged->get<bool>()) container.all_gpus = true;

  // NVIDIA_VISIBLE_DEVICES says which GPUs a container holds without a GPU request (the legacy
  // --runtime=nvidia form): NVIDIA's images set it to "all" in their own environment, and with
  // --gpus docker hands the runtime the requested devices in its own variable, so "all" there
  // would claim every GPU for nothing. Nor under docker's plain runc (its default), which never
  // reads it: a CPU job of an NVIDIA image holds no GPU. The nvidia runtime does, and so may
  // podman's (its NVIDIA hook, where installed, runs under any runtime); under the nvidia runtime
  // (DGX OS's default) it reads the image's "all" beside CDI devices and device nodes too.
  const std::string runtime = string_at(c, json::json_pointer("/HostConfig/Runtime"));
  const bool env_read = runtime != "runc" && runtime != "io.containerd.runc.v2" &&
                        (!requests_gpus || (runtime == "nvidia" && !docker_sets_env));
  const json* env = env_read ? find_at(c, "/Config/Env"_json_pointer) : nullptr;
  if (env != nullptr && env->is_array()) {
    for (const json& entry : *env) {
      if (!entry.is_string()) continue;
      const std::string& e = entry.get_ref<const std::string&>();
      if (e.starts_with("NVIDIA_VISIBLE_DEVICES=")) add_device_list(container, std::string_view(e).substr(23));
    }
  }
  // Podman resolves CDI names when it creates a container: its inspect shows the spec's device
  // nodes, not nvidia.com/gpu=UUID. A container gpurun started says in its label what it got.
  if (!container.all_gpus && container.devices.empty() && labels != nullptr) {
    const auto uuids = labels->find(std::string(kLabelGpuUuids));
    if (uuids != labels->end() && uuids->is_string()) add_device_list(container, uuids->get_ref<const std::string&>());
  }
  return container;
}

}  // namespace

std::optional<int> device_minor(std::string_view device) {
  if (!device.starts_with(kMinorPrefix)) return std::nullopt;
  const auto minor = text::parse_integer(device.substr(kMinorPrefix.size()));
  if (!minor || *minor < 0 || *minor > 1000000) return std::nullopt;
  return static_cast<int>(*minor);
}

bool never_started(const GpuContainer& container) {
  return container.status == "created" || container.status == "initialized";
}

bool has_ended(const GpuContainer& container) {
  return container.status == "exited" || container.status == "dead" || container.status == "stopped" ||
         never_started(container);
}

std::vector<GpuContainer> parse_gpu_containers(std::string_view inspect_json) {
  const json parsed = parse_json_keeping(inspect_json, kMembersRead);
  if (parsed.is_discarded() || !parsed.is_array()) throw Error("docker inspect did not answer with a JSON array");
  std::vector<GpuContainer> containers;
  for (const json& c : parsed) {
    if (!c.is_object()) continue;
    GpuContainer container = read_container(c);
    if (container.all_gpus || !container.devices.empty()) containers.push_back(std::move(container));
  }
  return containers;
}

}  // namespace gpurun
