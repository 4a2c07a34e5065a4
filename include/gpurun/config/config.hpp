#pragma once
// Layered configuration (issue 3). Pure library code: the CLI layer gathers the inputs (paths,
// GPURUN_* variables, the flags that were given) and calls load_config(); every rule lives here.
//
// Layers, lowest first: built-in defaults < system file < user file < project file (.gpurun.json
// found in cwd or the nearest parent), then --config files in order < the chosen profile <
// GPURUN_<KEY> variables < command-line flags. A key's effective value is the highest layer's.
//  - Lists: env, volumes, publish and docker_opts add up across all layers (an item already
//    present is not added twice); command is replaced like any scalar. null resets a key to its
//    built-in default, and for those lists drops what lower layers added.
//  - Profiles ("profiles": {"NAME": {option keys}}) may be defined in any file; the chosen one
//    (-P/--profile, else GPURUN_PROFILE) is merged from every file defining it, in file order,
//    above all files and below the environment and the flags.
//  - Site policy (allowed_gpus, max_gpus_per_launch, refused_docker_options) is read from the
//    system file only, and still holds under --no-config; anywhere else it is an error.
//  - A found .gpurun.json owned by another user (not root) or writable by anyone is skipped with a
//    warning, and may not set docker or nvidia_smi (a cloned repository could run any program),
//    nor lock_dir or lock_group (it would move the machine's reservations).
//  - dry_run, json, from_csv and verbosity are per invocation: flags only, no config keys.
//  - Under sudo (ConfigInputs::caller): the user file is the caller's own, files are read with the
//    caller's rights, the system file always counts (also with --no-config), and the settings
//    marked root_only (docker, nvidia_smi, lock_dir) come from the system file only: any other
//    layer setting one is an error (gpurun/config/sudo_rules.hpp).
//  - GPURUN_<KEY>: booleans 1/0/true/false/yes/no/on/off; lists a JSON array, anything else is
//    one item (never split on spaces); an empty variable counts as unset.
#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpurun/config/caller.hpp"
#include "gpurun/config/inputs.hpp"
#include "gpurun/config/options.hpp"
#include "gpurun/config/policy.hpp"
#include "gpurun/config/service_section.hpp"
#include "gpurun/config/source.hpp"

namespace gpurun {

struct ConfigValue {
  nlohmann::json value;
  ConfigSource source;                     // the layer that set it; for appended lists, the last layer that added items
  std::vector<ConfigSource> item_sources;  // appended lists (env, volumes, publish, docker_opts): per item
};

// One key a configuration file may set (a setting of Scope::option or Scope::policy), as the
// man page and the reports list them.
struct ConfigKey {
  std::string name;     // "docker_opts"
  std::string flag;     // "--docker-opt"; "N" for gpus, "COMMAND" for command; empty for policy keys
  std::string env;      // "GPURUN_DOCKER_OPTS"; empty for policy keys
  std::string meaning;  // one line
  bool site_policy = false;
};
const std::vector<ConfigKey>& config_keys();  // in the registry's order

// A configuration file that was looked at, for the report.
struct ConfigFile {
  enum class State { loaded, not_found, ignored, untrusted };
  ConfigSource::Kind layer = ConfigSource::Kind::system;
  std::string path;
  State state = State::loaded;
};

struct ChosenProfile {
  std::string name;
  std::string chosen_by;                 // "--profile" or "GPURUN_PROFILE"
  std::vector<ConfigSource> defined_in;  // every file that defines it, in merge order
};

struct Config {
  std::vector<ConfigValue> values;  // every option's effective value, in settings()' order (at() finds one)
  SitePolicy policy;
  ServiceSection service;  // the system file's "service" (gpurund's settings), unless --no-config
  std::optional<ChosenProfile> profile;
  std::map<std::string, std::vector<ConfigSource>> profiles;  // every known profile -> where defined
  std::vector<ConfigFile> files;
  std::vector<std::string> warnings;  // for the CLI to log: skipped files, unknown GPURUN_* variables
  std::vector<std::pair<std::string, nlohmann::json>> invocation;  // ConfigInputs::invocation, checked
  std::optional<Caller> caller;                                    // ConfigInputs::caller
  std::string system_file;                                         // ConfigInputs::system_file

  const ConfigValue& at(std::string_view key) const;  // throws Error for a key that does not exist
};

struct ConfigInputs {
  std::string system_file = "/etc/gpurun/config.json";
  std::optional<std::string> user_file;  // see default_user_config_path()
  std::string cwd;                       // where the .gpurun.json search starts; empty: no search
  std::vector<std::string> extra_files;  // --config FILE, in order; must exist
  bool no_config = false;                // --no-config: no option values from the system, user and
                                         // project files (the site policy still holds; --config files still load)
  std::map<std::string, std::string> environment;                  // the GPURUN_* variables (see gpurun_environment())
  std::vector<std::pair<std::string, nlohmann::json>> flags;       // key -> value, only the flags given
  std::vector<std::pair<std::string, nlohmann::json>> invocation;  // the per-invocation ones (--dry-run, --json)
  std::optional<std::string> profile;                              // -P/--profile; when absent, GPURUN_PROFILE is used
  std::optional<uid_t> user_id;  // who may own a found .gpurun.json; nullopt: geteuid()
  std::optional<Caller> caller;  // under sudo (gpurun/config/caller.hpp): the caller's own user file
                                 // instead of user_file, and gpurun/config/sudo_rules.hpp holds
  // The system file names programs root runs (gpurund as root; sudo: `caller`): it must be root's alone.
  bool root_runs_what_it_names = false;
};

// Loads, checks and merges every layer. Throws Error (exit 125) naming file, line and key for a
// syntax error, an unknown key, a wrong type or a bad value, and for an unknown profile.
Config load_config(const ConfigInputs& inputs);

// Sets every Options field from the effective values, the per-invocation flags given, the site
// policy and the list items' origins; leaves per-invocation fields not given (dry_run, ...) alone.
void apply_to(const Config& config, Options& options);

// Settles what follows from other settings, once, at the end of apply_to(): --report-json
// implies --report; --watch's range. Throws Error (exit 125) for a value out of range.
void settle_options(Options& options);

// Where each item of the list settings came from (for refusals that name it).
ItemOrigins item_origins(const Config& config);

// The site policy's checks (gpurun/config/policy.hpp) with the policy of `config`.
bool gpu_allowed(const Config& config, int index);
std::string gpu_not_allowed_reason(const Config& config);
void check_gpu_count(const Config& config, int gpus, bool mig_instances = false);
void check_docker_options(const Config& config, const Options& options);
void check_policy(const Config& config, const Options& options);  // these and check_sharing

// load_config, then apply_to.
Config configure(const ConfigInputs& inputs, Options& options);

}  // namespace gpurun
