#include "gpurun/engine/ownership.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "gpurun/engine/container_engine.hpp"
#include "gpurun/engine/docker_command.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {

std::optional<ContainerOwner> parse_container_owner(std::string_view inspect_json) {
  using json = nlohmann::json;
  const json parsed = json::parse(inspect_json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) throw Error("docker inspect did not answer with a JSON array");
  if (parsed.empty() || !parsed[0].is_object()) return std::nullopt;
  ContainerOwner owner;
  owner.id = parsed[0].value("Id", "");
  owner.image = parsed[0].value("Image", "");
  if (const auto state = parsed[0].find("State"); state != parsed[0].end() && state->is_object()) {
    const auto said = [&](const char* key, const json& value) {
      const auto member = state->find(key);
      return member != state->end() && *member == value;
    };
    if (const auto status = state->find("Status"); status != state->end() && status->is_string())
      owner.status = status->get<std::string>();
    if (const auto code = state->find("ExitCode"); code != state->end() && code->is_number_integer())
      owner.exit_code = code->get<int>();
    owner.running = said("Running", true) || said("Restarting", true) || said("Status", "running") ||
                    said("Status", "paused") || said("Status", "restarting");
    if (owner.running || owner.status == "created" || owner.status == "initialized")
      owner.exit_code.reset();  // no job has ended
  }
  const auto name_member = parsed[0].find("Name");
  std::string name = name_member != parsed[0].end() && name_member->is_string() ? name_member->get<std::string>() : "";
  if (name.starts_with('/')) name.erase(0, 1);
  owner.container_name = name;
  if (const auto created = parsed[0].find("Created"); created != parsed[0].end() && created->is_string())
    owner.created_at = created->get<std::string>();
  const json labels = parsed[0].contains("Config") && parsed[0]["Config"].is_object()
                          ? parsed[0]["Config"].value("Labels", json::object())
                          : json::object();
  if (!labels.is_object()) return owner;
  const auto label = [&](std::string_view key) {
    const auto it = labels.find(std::string(key));
    return it != labels.end() && it->is_string() ? std::optional(it->get<std::string>()) : std::nullopt;
  };
  // Labels of a container of another name than they say are its image's: nobody's.
  if (!labels_written_for(label(kLabelName), name)) return owner;
  if (label(kLabelName)) owner.name = name;
  owner.started_by_gpurun = label(kLabelUser).has_value() && label(kLabelGpus).has_value();
  owner.user = label(kLabelUser).value_or("");
  if (const auto uid = label(kLabelUid))
    if (const auto n = text::parse_integer(*uid); n && *n >= 0) owner.uid = static_cast<unsigned>(*n);
  return owner;
}

std::optional<ContainerOwner> container_owner(const std::vector<std::string>& inspect_argv,
                                              std::chrono::milliseconds timeout) {
  const ProcessResult result = run_process({inspect_argv, {}}, timeout);
  const std::string& docker = inspect_argv.front();
  const std::string& name = inspect_argv.back();
  // docker: exit 1 and "No such object" (or container); podman: 125 and "no such container". docker's
  // 1 alone is also a daemon that is down, a socket this user may not open, or an ambiguous prefix:
  // those are said as they are, not as a container that is not there.
  const std::string said = text::to_lower(result.err);  // (docker 28's daemon down: "…: no such file or directory")
  const bool no_such =
      said.find("no such container") != std::string::npos || said.find("no such object") != std::string::npos;
  if (result.end == ProcessResult::End::exited && no_such && result.out.find('{') == std::string::npos)
    return std::nullopt;
  if (!result.succeeded())
    throw Error(fmt::format("cannot ask {} about container {}: {}{}{}", docker, text::printable(name),
                            describe_end(result, timeout), result.err.empty() ? "" : ": ",
                            text::printable(std::string(text::trim(result.err)), 300)));
  return parse_container_owner(result.out);
}

std::optional<ContainerOwner> container_owner(const ContainerEngine& engine, const std::string& container,
                                              std::chrono::milliseconds timeout) {
  std::vector<std::string> inspect = engine.inspect_argv(container);
  inspect.front() = locate_program(inspect.front());
  return container_owner(inspect, timeout);
}

bool owner_from_image(const ContainerOwner& owner, std::string_view image_inspect_json) {
  using json = nlohmann::json;
  const json parsed = json::parse(image_inspect_json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array() || parsed.empty() || !parsed[0].is_object())
    throw Error("the engine's inspect of an image did not answer with a JSON array of one image");
  // The image's value of `key`: docker keeps labels in Config.Labels, podman in Labels too.
  const auto image_label = [&parsed](std::string_view key) -> std::optional<std::string> {
    for (const json* where : {parsed[0].contains("Config") ? &parsed[0]["Config"] : nullptr, &parsed[0]}) {
      if (where == nullptr || !where->is_object() || !where->contains("Labels")) continue;
      const json& labels = (*where)["Labels"];
      if (!labels.is_object() || !labels.contains(std::string(key))) continue;
      const json& value = labels[std::string(key)];
      return value.is_string() ? value.get<std::string>() : std::string();
    }
    return std::nullopt;
  };
  // The name label, written at the launch with the others, is not the image's: nor are they.
  if (!owner.name.empty() && image_label(kLabelName) != owner.name) return false;
  if (owner.uid) {
    const auto uid = image_label(kLabelUid);
    const auto n = uid ? text::parse_integer(*uid) : std::nullopt;
    return uid && (!n || *n == static_cast<long long>(*owner.uid));
  }
  const auto user = image_label(kLabelUser);
  return user && *user == owner.user;
}

bool owner_from_image(const ContainerOwner& owner, const std::vector<std::string>& image_inspect_argv,
                      std::chrono::milliseconds timeout) {
  const ProcessResult result = run_process({image_inspect_argv, {}}, timeout);
  if (!result.succeeded())
    throw Error(fmt::format("cannot ask {} about image {}: {}", image_inspect_argv.front(),
                            text::printable(image_inspect_argv.back()), describe_end(result, timeout)));
  return owner_from_image(owner, result.out);
}

}  // namespace gpurun
