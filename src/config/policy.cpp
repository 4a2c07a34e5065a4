#include "gpurun/config/policy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <sstream>

#include "gpurun/config/options.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/util/docker_args.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {
namespace {

// A refused_docker_options rule: exactly one docker option, in any spelling docker accepts.
std::optional<DockerArg> parse_rule(const std::string& rule) {
  std::vector<std::string> words;
  std::istringstream in(rule);
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty() || words[0].size() < 2 || words[0][0] != '-') return std::nullopt;
  std::vector<DockerArg> args = docker_args(words);
  if (args.size() != 1) return std::nullopt;
  const std::size_t used = args[0].text.find(' ') == std::string::npos ? 1 : 2;
  if (used != words.size()) return std::nullopt;
  return args[0];
}

// How a rule is read: a refusal (refused_docker_options) takes in whatever gives what it names,
// paths compared as docker mounts them and --cap-add ALL as every capability; an allowance
// (allowed_docker_options, under sudo) lets through only what it names, as written.
enum class RuleUse { refusal, allowance };

bool overlap(const std::string& a, const std::string& b, RuleUse use) {
  return use == RuleUse::refusal ? paths_overlap_as_mounted(a, b) : paths_overlap(a, b);
}

bool same_value(const std::string& option, const std::string& ruled, const std::string& given, RuleUse use) {
  if (ruled == given) return true;
  // A rule naming only a host path refuses every mount that exposes it: "-v /var/run/docker.sock".
  if (option == "volume" && ruled.find(':') == std::string::npos) return overlap(ruled, volume_source(given), use);
  if (option == "cap-add" || option == "cap-drop")
    // ALL adds (or drops) every capability: the refused one among them, but no allowed one alone.
    return capability(ruled) == capability(given) || (use == RuleUse::refusal && capability(given) == "ALL");
  return false;
}

bool matches(const DockerArg& rule, const DockerArg& arg, RuleUse use) {
  if (rule.name == "volume" && arg.name == "mount" && rule.value && rule.value->find(':') == std::string::npos)
    return overlap(*rule.value, mount_source(arg.value.value_or("")), use);
  if (rule.name != arg.name) return false;
  if (docker_boolean(rule.name))  // an unreadable boolean counts as true: docker would fail anyway
    return docker_bool(rule.value).value_or(true) == docker_bool(arg.value).value_or(true);
  return !rule.value || same_value(rule.name, *rule.value, arg.value.value_or(""), use);
}

std::string location(const SitePolicy& policy, const std::string& key) {
  const auto it = policy.sources.find(key);
  if (it == policy.sources.end()) return "the system file";
  return it->second.location();
}

// " (from user /home/a/.config/gpurun/config.json:2)" for an item of a list setting, else "".
std::string origin_of(const ItemOrigins& origins, const std::string& key, const std::string& item) {
  const auto list = origins.find(key);
  if (list == origins.end()) return "";
  const auto it = list->second.find(item);
  return it == list->second.end() || it->second.empty() ? "" : fmt::format(" (from {})", it->second);
}

// Where a mount option puts its mount in the container: -v SRC:DST[:MODE] (or an anonymous volume
// at -v DST), --tmpfs DST[:OPTIONS], --mount …,dst=DST,… (keys in any case, the last one counting,
// as docker reads them); nullopt for any other option.
std::optional<std::string> mount_target(const DockerArg& arg) {
  if (!arg.value) return std::nullopt;
  const std::string& value = *arg.value;
  if (arg.name == "volume") {
    const std::vector<std::string_view> parts = text::split(value, ':');
    return std::string(parts.size() >= 2 ? parts[1] : parts[0]);
  }
  if (arg.name == "tmpfs") return value.substr(0, value.find(':'));
  if (arg.name != "mount") return std::nullopt;
  const auto target = mount_field(value, {"target", "dst", "destination"});
  return target ? std::optional<std::string>(std::string(text::trim(*target))) : std::nullopt;
}

// The NVIDIA toolkit's device list as volume mounts (accept-nvidia-visible-devices-as-volume-mounts,
// which NVIDIA advises for Kubernetes nodes): a mount under these names chooses the GPUs, over
// the environment. Compared as the toolkit does, as a prefix of the mount's normalized target.
bool names_toolkit_device_list(const std::string& target) {
  const std::string normal = std::filesystem::path(target).lexically_normal().string();
  return normal.starts_with("/var/run/nvidia-container-devices") || normal.starts_with("/run/nvidia-container-devices");
}

}  // namespace

bool rule_matches(const std::string& rule, const DockerArg& arg) {
  const std::optional<DockerArg> parsed = parse_rule(rule);
  return parsed && matches(*parsed, arg, RuleUse::allowance);
}

bool gpu_selecting_env(std::string_view item) {
  const std::string name = text::to_upper(item.substr(0, item.find('=')));
  return name.starts_with("NVIDIA_") && (name.ends_with("_DEVICES") || name == "NVIDIA_IMEX_CHANNELS");
}

bool image_allowed(const SitePolicy& policy, const std::string& image) {
  if (!policy.allowed_images) return true;
  return std::any_of(policy.allowed_images->begin(), policy.allowed_images->end(),
                     [&](const std::string& pattern) { return ::fnmatch(pattern.c_str(), image.c_str(), 0) == 0; });
}

std::optional<std::string> rule_problem(const std::string& rule) {
  if (parse_rule(rule)) return std::nullopt;
  return fmt::format(
      "\"{}\" is not one docker option; write it as \"--privileged\", \"--pid=host\" or "
      "\"-v /var/run/docker.sock\"",
      text::printable(rule));
}

bool gpu_allowed(const SitePolicy& policy, int index) {
  const auto& allowed = policy.allowed_gpus;
  return !allowed || std::find(allowed->begin(), allowed->end(), index) != allowed->end();
}

std::string gpu_not_allowed_reason(const SitePolicy& policy) {
  return fmt::format("not offered by the site policy \"allowed_gpus\" in {}", location(policy, "allowed_gpus"));
}

void check_gpu_count(const SitePolicy& policy, int gpus, bool mig_instances) {
  if (policy.max_gpus_per_launch && gpus > *policy.max_gpus_per_launch)
    throw Refusal(
        fmt::format("{} GPUs asked for, but the site policy \"max_gpus_per_launch\" in {} allows at most {} "
                    "per launch",
                    gpus, location(policy, "max_gpus_per_launch"), *policy.max_gpus_per_launch));
  // MIG instances are not GPUs: seven may sit on one allowed GPU (the selection offers those of
  // allowed GPUs alone).
  if (policy.allowed_gpus && !mig_instances && static_cast<std::size_t>(gpus) > policy.allowed_gpus->size())
    throw Refusal(fmt::format("{} GPUs asked for, but the site policy \"allowed_gpus\" in {} offers only {}: {}", gpus,
                              location(policy, "allowed_gpus"), policy.allowed_gpus->size(),
                              fmt::join(*policy.allowed_gpus, ", ")));
}

void check_docker_options(const SitePolicy& policy, const ItemOrigins& origins, const Options& options) {
  // What the user adds to docker run, as docker will read it; gpurun's own arguments are not checked.
  struct Given {
    DockerArg arg;
    std::string key;
    std::string item;
  };
  std::vector<Given> given;
  for (DockerArg& arg : docker_args(options.docker_opts)) {
    const std::string first_word = arg.text.substr(0, arg.text.find(' '));
    // The last one, without its value: docker would take the image for it (`--docker-opt=--user`).
    // Only docker's own options that take one: podman has booleans docker lacks (--replace).
    const bool takes_value = !docker_boolean(arg.name) && find_docker_rule(arg.name) != nullptr;
    if (takes_value && (!arg.value || (arg.value->empty() && arg.text == first_word && !first_word.starts_with("--") &&
                                       first_word.size() == 2)))
      throw Error(
          fmt::format("--docker-opt \"{}\": it needs a value: write --docker-opt={}=VALUE, or the value as "
                      "the next --docker-opt (docker would take the image for it)",
                      text::printable(first_word), text::printable(first_word)));
    given.push_back({std::move(arg), "docker_opts", first_word});
  }
  const auto add_list = [&](const std::vector<std::string>& items, const char* option, const char* key) {
    for (const std::string& item : items)
      given.push_back({{option, item, fmt::format("--{} {}", option, item)}, key, item});
  };
  add_list(options.env, "env", "env");
  add_list(options.volumes, "volume", "volumes");
  add_list(options.publish, "publish", "publish");

  // Everywhere, sudo or not: the reservation says which GPUs the job gets, nothing else.
  const auto selects_gpus = [](const DockerArg& arg) {
    const std::string value = arg.value.value_or("");
    if (arg.name == "env") return gpu_selecting_env(value);
    if (arg.name == "gpus") return true;
    if (const auto target = mount_target(arg)) return names_toolkit_device_list(*target);
    // --device /dev/nvidia3, --device nvidia.com/gpu=all (CDI)
    return arg.name == "device" &&
           (value.starts_with("nvidia.com/gpu") || (value.starts_with("/dev/nvidia") && value.size() > 11 &&
                                                    std::isdigit(static_cast<unsigned char>(value[11])) != 0));
  };
  for (const Given& g : given)
    if (selects_gpus(g.arg))
      throw Refusal(
          fmt::format("docker option \"{}\"{} is refused: it would give the job GPUs outside its reservation "
                      "(gpurun passes the reserved GPUs with --gpus)",
                      text::printable(g.arg.text), origin_of(origins, g.key, g.item)));

  for (const std::string& rule_text : policy.refused_docker_options) {
    const std::optional<DockerArg> rule = parse_rule(rule_text);
    if (!rule) continue;  // the system file's check refused such a rule already
    for (const Given& g : given)
      if (matches(*rule, g.arg, RuleUse::refusal))
        throw Refusal(
            fmt::format("docker option \"{}\"{} is refused by the site policy \"refused_docker_options\" "
                        "(rule \"{}\") in {}",
                        text::printable(g.arg.text), origin_of(origins, g.key, g.item), rule_text,
                        location(policy, "refused_docker_options")));
  }
}

void check_mounted_sources(const SitePolicy& policy, const std::vector<std::string>& real_sources) {
  for (const std::string& rule_text : policy.refused_docker_options) {
    const std::optional<DockerArg> rule = parse_rule(rule_text);
    if (!rule || rule->name != "volume" || !rule->value || rule->value->find(':') != std::string::npos) continue;
    for (const std::string& real : real_sources)
      if (paths_overlap_as_mounted(*rule->value, real))
        throw Refusal(fmt::format(
            "a mount whose real path is {} is refused by the site policy \"refused_docker_options\" (rule \"{}\") "
            "in {}",
            text::printable(real), rule_text, location(policy, "refused_docker_options")));
  }
}

void check_sharing(const SitePolicy& policy, const Options& options) {
  if (policy.allow_sharing || (!options.allow_busy && !options.min_free_memory_mib)) return;
  throw Refusal(
      fmt::format("{} is refused: the site policy \"allow_sharing\" in {} forbids sharing a busy GPU; "
                  "leave it out, and add --wait (--wait 30m) to wait for a free one",
                  options.allow_busy ? "--allow-busy" : "--min-free-memory", location(policy, "allow_sharing")));
}

std::optional<std::chrono::seconds> launch_time_limit(const SitePolicy& policy, const Options& options) {
  if (!policy.max_runtime) return options.time_limit;
  if (options.time_limit && *options.time_limit > *policy.max_runtime)
    throw Refusal(
        fmt::format("--time-limit {} is refused: the site policy \"max_runtime\" in {} allows at most {}; "
                    "ask for {} or less",
                    format_duration(*options.time_limit, DurationStyle::brief), location(policy, "max_runtime"),
                    format_duration(*policy.max_runtime, DurationStyle::brief),
                    format_duration(*policy.max_runtime, DurationStyle::brief)));
  return options.time_limit ? options.time_limit : policy.max_runtime;
}

void enforce_policy(const Options& options) {
  check_gpu_count(options.policy, options.gpus, options.mig.has_value());
  check_sharing(options.policy, options);
  if (!options.image.empty() && !image_allowed(options.policy, options.image))
    throw Refusal(fmt::format("image \"{}\" is not allowed by the site policy \"allowed_images\" in {} ({})",
                              text::printable(options.image), location(options.policy, "allowed_images"),
                              fmt::join(*options.policy.allowed_images, ", ")));
  check_docker_options(options.policy, options.origins, options);
  launch_time_limit(options.policy, options);
}

}  // namespace gpurun
