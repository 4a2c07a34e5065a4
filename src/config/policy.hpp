#pragma once
// The site policy: rules only the admin's system file sets, which no user layer can loosen. The
// library enforces it itself (enforce_policy, called by every verb that hands out GPUs), so a
// caller of the library cannot bypass it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/source.hpp"

namespace gpurun {

struct Options;

struct SitePolicy {
  std::optional<std::vector<int>> allowed_gpus;
  std::optional<int> max_gpus_per_launch;
  std::vector<std::string> refused_docker_options;
  std::map<std::string, ConfigSource> sources;  // policy key -> where it is set
};

// Where each item of the list settings came from, for naming it in a refusal:
// key ("docker_opts") -> item ("--pid=host") -> "user /home/a/.config/gpurun/config.json:2".
using ItemOrigins = std::map<std::string, std::map<std::string, std::string>>;

// Why a refused_docker_options rule is not exactly one docker option; nullopt when it is.
std::optional<std::string> rule_problem(const std::string& rule);

// allowed_gpus (true when unset), and the busy-reason for the GPUs it leaves out.
bool gpu_allowed(const SitePolicy& policy, int index);
std::string gpu_not_allowed_reason(const SitePolicy& policy);

// Each refusal is an Error naming the rule, its value and the file:line that sets it.
void check_gpu_count(const SitePolicy& policy, int gpus);  // max_gpus_per_launch, allowed_gpus
void check_docker_options(const SitePolicy& policy, const ItemOrigins& origins, const Options& options);

// Both checks, with the policy and origins the options carry.
void enforce_policy(const Options& options);

}  // namespace gpurun
