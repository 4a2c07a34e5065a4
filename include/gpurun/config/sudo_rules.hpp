#pragma once
// What a caller may do through `sudo gpurun` (gpurun/config/caller.hpp). gpurun then runs as root for
// someone who is not, so:
//  - the programs it runs, the lock directory and the site policy come from the admin's system
//    file only (settings marked root_only; policy keys are system-file-only anyway);
//  - docker options are an allowlist (sudo_docker_rules()), which the admin's
//    "allowed_docker_options" can extend; everything else is refused, naming the option;
//  - a launch reads the GPUs from nvidia-smi, never from a snapshot the caller wrote.
// Each refusal is Error(…, 125) starting "not allowed under sudo: ".
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/settings.hpp"
#include "gpurun/config/source.hpp"
#include "gpurun/util/docker_args.hpp"

namespace gpurun {

struct Options;

// Throws when `setting` is root_only and `source` is not the system file `system_file` (a profile
// defined there counts as the system file).
void check_root_only(const Setting& setting, const ConfigSource& source, const std::string& system_file);

// One docker option as the sudo rules see it: allowed (perhaps for some values only) or refused,
// with why. The table documents itself (docs/sudo.md lists it; a test keeps them equal).
struct DockerOptionRule {
  std::string_view name;  // docker's long name without dashes
  bool allowed = false;
  std::string_view why;  // allowed: which values; refused: what it would give the caller
  bool (*value_ok)(const std::optional<std::string>& value) = nullptr;  // allowed: values allowed; null: any
};
const std::vector<DockerOptionRule>& sudo_docker_rules();
// docker run's option of this long name (without dashes), or nullptr: not one of docker's.
const DockerOptionRule* find_docker_rule(std::string_view name);

// Why `arg` is refused under sudo ("" when allowed), given the admin's allowed_docker_options.
std::string sudo_refusal(const DockerArg& arg, const std::vector<std::string>& admin_allowed);

// The --docker-opt words of a caller under sudo, read as docker reads them, one DockerArg per
// option (a value taken from the next word is joined to it). Refused: a word that is not an
// option nor an option's value (docker would take it for the image), "--", and an option that
// needs a value but has none (docker would take the image for it).
std::vector<DockerArg> caller_docker_args(const std::vector<std::string>& words);

// "--name=value" or "--name": the one spelling gpurun passes on under sudo.
std::string canonical(const DockerArg& arg);

// Every rule for a launch by a caller under sudo (no-op when options.caller is unset): root-only
// inputs, the docker options and list settings, --from-csv. Bind-mount sources are checked by
// job/caller_mounts.hpp, which needs the file system.
void enforce_caller_rules(const Options& options, bool dry_run);

}  // namespace gpurun
