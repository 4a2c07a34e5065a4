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
//    warning, and may not set docker or nvidia_smi (a cloned repository could run any program).
//  - dry_run, json, from_csv and verbosity are per invocation: flags only, no config keys.
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

#include "config/options.hpp"

namespace gpurun {

// Where a value came from. The enumerators are in precedence order, lowest first.
struct ConfigSource {
  enum class Kind { defaults, system, user, project, extra_file, profile, environment, flag };
  Kind kind = Kind::defaults;
  std::string where;     // a file path, "GPURUN_IMAGE" or "--image"; empty for defaults
  std::size_t line = 0;  // the key's line in a file (1-based); 0 when not from a file
  std::string profile;   // kind == profile: the profile's name (where/line: the file defining it)

  // "default", "user /home/a/.config/gpurun/config.json:3", "env GPURUN_IMAGE", "flag --image",
  // "profile jupyter in /etc/gpurun/config.json:9".
  std::string describe() const;
  std::string location() const;  // "/etc/gpurun/config.json:3", or `where` alone without a line
};
std::string_view kind_name(ConfigSource::Kind kind);  // "default", "system", ..., "env", "flag"

struct ConfigValue {
  nlohmann::json value;
  ConfigSource source;  // the layer that set it; for appended lists, the last layer that added items
  std::vector<ConfigSource> item_sources;  // appended lists (env, volumes, publish, docker_opts): per item
};

// One key a configuration may set. Option keys go in any file, in profiles, in GPURUN_<KEY> and on
// the command line; site policy keys only in the system file.
struct ConfigKey {
  std::string name;     // "docker_opts"
  std::string flag;     // "--docker-opt"; "N" for gpus, "COMMAND" for command; empty for policy keys
  std::string env;      // "GPURUN_DOCKER_OPTS"; empty for policy keys
  std::string meaning;  // one line for the report and the starter file
  bool site_policy = false;
};
const std::vector<ConfigKey>& config_keys();  // option keys in Options order, then the policy keys

// The site policy of the system file. Each rule's source (file and line) is in `sources`.
struct SitePolicy {
  std::optional<std::vector<int>> allowed_gpus;
  std::optional<int> max_gpus_per_launch;
  std::vector<std::string> refused_docker_options;
  std::map<std::string, ConfigSource> sources;  // policy key -> where it is set
};

// A configuration file that was looked at, for the report.
struct ConfigFile {
  enum class State { loaded, not_found, ignored, untrusted };
  ConfigSource::Kind layer = ConfigSource::Kind::system;
  std::string path;
  State state = State::loaded;
};

struct ChosenProfile {
  std::string name;
  std::string chosen_by;                  // "--profile" or "GPURUN_PROFILE"
  std::vector<ConfigSource> defined_in;   // every file that defines it, in merge order
};

struct Config {
  std::map<std::string, ConfigValue> values;  // every option key -> its effective value
  SitePolicy policy;
  std::optional<ChosenProfile> profile;
  std::map<std::string, std::vector<ConfigSource>> profiles;  // every known profile -> where defined
  std::vector<ConfigFile> files;
  std::vector<std::string> warnings;  // for the CLI to log: skipped files, unknown GPURUN_* variables

  const ConfigValue& at(std::string_view key) const;  // throws Error for a key that does not exist
};

struct ConfigInputs {
  std::string system_file = "/etc/gpurun/config.json";
  std::optional<std::string> user_file;   // see default_user_config_path()
  std::string cwd;                        // where the .gpurun.json search starts; empty: no search
  std::vector<std::string> extra_files;   // --config FILE, in order; must exist
  bool no_config = false;                 // --no-config: no option values from the system, user and
                                          // project files (the site policy still holds; --config files still load)
  std::map<std::string, std::string> environment;  // the GPURUN_* variables (see gpurun_environment())
  std::vector<std::pair<std::string, nlohmann::json>> flags;  // key -> value, only the flags given
  std::optional<std::string> profile;     // -P/--profile; when absent, GPURUN_PROFILE is used
  std::optional<uid_t> user_id;           // who may own a found .gpurun.json; nullopt: geteuid()
};

// Loads, checks and merges every layer. Throws Error (exit 125) naming file, line and key for a
// syntax error, an unknown key, a wrong type or a bad value, and for an unknown profile.
Config load_config(const ConfigInputs& inputs);

// $XDG_CONFIG_HOME/gpurun/config.json (when absolute), else $HOME/.config/gpurun/config.json.
std::optional<std::string> default_user_config_path(const std::optional<std::string>& xdg_config_home,
                                                    const std::optional<std::string>& home);
// The nearest .gpurun.json in `cwd` or one of its parents; nullopt when there is none.
std::optional<std::string> find_project_file(const std::string& cwd);
// The GPURUN_* variables of an environ-style array.
std::map<std::string, std::string> gpurun_environment(const char* const* envp);

// Sets every Options field that has a config key from the effective values; leaves the rest
// (dry_run, json, from_csv) alone.
void apply_to(const Config& config, Options& options);

// Site policy. Each refusal is an Error naming the rule, its value and the file:line that sets it.
bool gpu_allowed(const Config& config, int index);             // allowed_gpus (true when unset)
std::string gpu_not_allowed_reason(const Config& config);      // a busy-reason for status tables
void check_gpu_count(const Config& config, int gpus);          // max_gpus_per_launch, allowed_gpus
void check_docker_options(const Config& config, const Options& options);  // refused_docker_options
void check_policy(const Config& config, const Options& options);          // both of the above

// `gpurun config`: every key, its effective value and where it came from.
std::string config_report_table(const Config& config);
nlohmann::json config_report_json(const Config& config);

// A commented starter user file for `gpurun config init`; it changes nothing until edited.
std::string starter_user_config();

// load_config, then apply_to, and the site policy's allowed GPUs into `options`.
Config configure(const ConfigInputs& inputs, Options& options);

// `gpurun config [--json]`: the effective configuration; `gpurun config init`: writes the starter
// user file (never over an existing one) and prints its path.
int run_config(const Config& config, const ConfigInputs& inputs, bool init, bool json, std::ostream& out);

}  // namespace gpurun
