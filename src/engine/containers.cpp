#include "engine/containers.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "engine/docker_command.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

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

bool is_gpu_request(const json& request) {
  if (string_at(request, json::json_pointer("/Driver")) == "nvidia") return true;
  const json* capabilities = member(request, "Capabilities");
  if (capabilities == nullptr || !capabilities->is_array()) return false;
  return std::any_of(capabilities->begin(), capabilities->end(), [](const json& set) {
    return set.is_array() && std::any_of(set.begin(), set.end(), [](const json& c) { return c == "gpu"; });
  });
}

// What one container holds, from `docker inspect` of it.
GpuContainer read_container(const json& c) {
  GpuContainer container;
  container.id = string_at(c, json::json_pointer("/Id"));
  container.name = string_at(c, json::json_pointer("/Name"));
  if (container.name.starts_with('/')) container.name.erase(0, 1);
  container.image = string_at(c, json::json_pointer("/Config/Image"));
  container.status = string_at(c, json::json_pointer("/State/Status"));
  container.started_at = string_at(c, json::json_pointer("/State/StartedAt"));

  const json* labels = find_at(c, "/Config/Labels"_json_pointer);
  if (labels != nullptr && labels->is_object() && labels->contains(std::string(kLabelUser))) {
    container.started_by_gpurun = true;
    if (labels->at(std::string(kLabelUser)).is_string()) container.user = labels->at(std::string(kLabelUser));
  }
  if (container.user.empty()) container.user = string_at(c, json::json_pointer("/Config/User"));

  const json* requests = find_at(c, "/HostConfig/DeviceRequests"_json_pointer);
  bool requests_gpus = false;
  if (requests != nullptr && requests->is_array()) {
    for (const json& request : *requests) {
      if (!request.is_object() || !is_gpu_request(request)) continue;
      requests_gpus = true;
      const json* ids = member(request, "DeviceIDs");
      const json* count = member(request, "Count");
      if (ids != nullptr && ids->is_array() && !ids->empty()) {
        for (const json& id : *ids)
          if (id.is_string()) add_device_list(container, id.get<std::string>());
      } else if (count != nullptr && count->is_number_integer()) {
        // --gpus all is Count -1; --gpus N takes the first N GPUs.
        const auto n = count->get<long long>();
        if (n < 0) container.all_gpus = true;
        for (long long i = 0; i < std::min<long long>(n, 4096); ++i) container.devices.push_back(std::to_string(i));
      }
    }
  }
  // NVIDIA_VISIBLE_DEVICES says which GPUs a container holds only without a --gpus request:
  // NVIDIA's images set it to "all" in their own environment, and with --gpus docker hands the
  // runtime the requested devices instead, so "all" there would claim every GPU for nothing.
  const json* env = requests_gpus ? nullptr : find_at(c, "/Config/Env"_json_pointer);
  if (env != nullptr && env->is_array()) {
    for (const json& entry : *env) {
      if (!entry.is_string()) continue;
      const std::string& e = entry.get_ref<const std::string&>();
      if (e.starts_with("NVIDIA_VISIBLE_DEVICES=")) add_device_list(container, std::string_view(e).substr(23));
    }
  }
  return container;
}

}  // namespace

std::vector<GpuContainer> parse_gpu_containers(std::string_view inspect_json) {
  const json parsed = json::parse(inspect_json, nullptr, false);
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
