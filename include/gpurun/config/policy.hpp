#pragma once
// The site policy: rules only the admin's system file sets, which no user layer can loosen. The
// library enforces it itself (enforce_policy, called by every verb that hands out GPUs), so a
// caller of the library cannot bypass it.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/idle_policy.hpp"
#include "gpurun/config/notify_policy.hpp"
#include "gpurun/config/source.hpp"
#include "gpurun/util/choices.hpp"
#include "gpurun/util/docker_args.hpp"

namespace gpurun {

struct Options;

struct SitePolicy {
  std::optional<std::vector<int>> allowed_gpus;
  std::optional<int> max_gpus_per_launch;
  std::vector<std::string> refused_docker_options;
  std::optional<std::vector<std::string>> allowed_images;         // shell-wildcard patterns; unset: any image
  std::vector<std::string> allowed_docker_options;                // under sudo, beyond the built-in allowlist
  std::string admin_group;                                        // under sudo, may manage any gpurun container
  bool allow_sharing = true;                                      // false: no --allow-busy, no --min-free-memory
  HistoryVisibility history_visibility = HistoryVisibility::all;  // whose runs the service shows a user
  std::optional<IdlePolicy> idle_policy;                          // what gpurund does about idle holders
  std::optional<std::chrono::seconds> max_runtime;                // longest a launch may run
  std::optional<NotifyPolicy> notify;                             // how gpurund tells people
  std::map<std::string, ConfigSource> sources;                    // policy key -> where it is set
};

// Where each item of the list settings came from, for naming it in a refusal:
// key ("docker_opts") -> item ("--pid=host") -> "user /home/a/.config/gpurun/config.json:2"; ""
// for a word two layers gave (docker_opts' "--label"), which has no one origin.
using ItemOrigins = std::map<std::string, std::map<std::string, std::string>>;

// Why a refused_docker_options rule is not exactly one docker option; nullopt when it is.
std::optional<std::string> rule_problem(const std::string& rule);

// Whether the docker option rule (one option, as in allowed_docker_options) lets `arg` through:
// as written (paths compared as given, --cap-add ALL matching no rule but "--cap-add ALL").
bool rule_matches(const std::string& rule, const DockerArg& arg);

// Whether an environment item ("NAME=value" or "NAME") names a variable that tells the NVIDIA
// runtime which GPUs to give (NVIDIA_VISIBLE_DEVICES, NVIDIA_MIG_CONFIG_DEVICES, ...): refused
// everywhere, since it would reach GPUs outside the reservation.
bool gpu_selecting_env(std::string_view item);

// allowed_images (true when unset): shell wildcards as fnmatch(3) reads them.
bool image_allowed(const SitePolicy& policy, const std::string& image);

// allowed_gpus (true when unset), and the busy-reason for the GPUs it leaves out.
bool gpu_allowed(const SitePolicy& policy, int index);
std::string gpu_not_allowed_reason(const SitePolicy& policy);

// Each refusal is an Error naming the rule, its value and the file:line that sets it.
// max_gpus_per_launch, and allowed_gpus's size (not for MIG instances, `mig_instances`).
void check_gpu_count(const SitePolicy& policy, int gpus, bool mig_instances = false);
void check_docker_options(const SitePolicy& policy, const ItemOrigins& origins, const Options& options);
// The refused host paths ("-v /srv/licensed") against the real paths a sudo caller's mounts were
// pinned at: what docker will mount, not the path as typed, which a symlink may change meanwhile.
void check_mounted_sources(const SitePolicy& policy, const std::vector<std::string>& real_sources);

// allow_sharing: --allow-busy and --min-free-memory are refused when the policy forbids sharing.
void check_sharing(const SitePolicy& policy, const Options& options);

// The time limit a launch gets: the smaller of --time-limit and max_runtime (nullopt: none).
// Throws Refusal when --time-limit asks for more than max_runtime allows.
std::optional<std::chrono::seconds> launch_time_limit(const SitePolicy& policy, const Options& options);

// All of these checks, with the policy and origins the options carry.
void enforce_policy(const Options& options);

}  // namespace gpurun
