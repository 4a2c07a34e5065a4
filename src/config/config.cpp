#include "gpurun/config/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>

#include "config_file.hpp"
#include "gpurun/config/idle_policy.hpp"
#include "gpurun/config/notify_policy.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/config/values.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;
using Kind = ConfigSource::Kind;

// "A" of "A=1", or of "A" alone (docker passes the caller's A on).
std::string variable_name(const json& item) {
  const std::string text = item.is_string() ? item.get<std::string>() : item.dump();
  return text.substr(0, text.find('='));
}

// The items of `slot` that set variable `name`, with their sources.
void drop_variable(ConfigValue& slot, const std::string& name) {
  for (std::size_t i = slot.value.size(); i-- > 0;) {
    if (variable_name(slot.value[i]) != name) continue;
    slot.value.erase(slot.value.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < slot.item_sources.size())
      slot.item_sources.erase(slot.item_sources.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

// Where `setting`, an entry of settings(), is in it, and so its value in Config::values.
std::size_t index_of(const Setting& setting) { return static_cast<std::size_t>(&setting - settings().data()); }

void set_value(Config& config, const Setting& info, const json& value, const ConfigSource& source) {
  if (config.caller) check_root_only(info, source, config.system_file);
  ConfigValue& slot = config.values.at(index_of(info));
  if (value.is_null()) {
    slot = {info.default_value(), source, {}};
  } else if (info.type == ValueType::appended_list) {
    // Lists add up across layers, the higher layer's items last (docker takes the last `--env A=`).
    for (const json& item : value) {
      if (info.items == ListItems::unique && std::find(slot.value.begin(), slot.value.end(), item) != slot.value.end())
        continue;
      if (info.items == ListItems::variables) drop_variable(slot, variable_name(item));
      slot.value.push_back(item);
      slot.item_sources.push_back(source);
    }
    slot.source = source;
  } else {
    slot = {value, source, {}};
  }
}

void merge_file(Config& config, const ParsedFile& f) {
  for (const auto& [key, value] : f.content.items()) {
    const Setting* info = find_setting(key);
    if (info != nullptr && info->scope == Scope::option) set_value(config, *info, value, f.source(key));
  }
}

void load_policy(Config& config, const ParsedFile& system) {
  SitePolicy& policy = config.policy;
  for (const auto& [key, value] : system.content.items()) {
    if (key == "idle_policy") {  // an object of its own (gpurun/config/idle_policy.hpp), checked on load
      policy.sources[key] = system.source(key);
      policy.idle_policy = read_idle_policy(value).policy;
      continue;
    }
    if (key == "notify") {  // likewise (gpurun/config/notify_policy.hpp)
      policy.sources[key] = system.source(key);
      policy.notify = read_notify_policy(value).policy;
      continue;
    }
    const Setting* info = find_setting(key);
    if (info == nullptr || info->scope != Scope::policy) continue;
    policy.sources[key] = system.source(key);
    if (key == "allowed_gpus") policy.allowed_gpus = value.get<std::vector<int>>();
    if (key == "max_gpus_per_launch") policy.max_gpus_per_launch = value.get<int>();
    if (key == "max_runtime") policy.max_runtime = duration_value(value);
    if (key == "refused_docker_options") policy.refused_docker_options = value.get<std::vector<std::string>>();
    if (key == "allowed_images") policy.allowed_images = value.get<std::vector<std::string>>();
    if (key == "allowed_docker_options") policy.allowed_docker_options = value.get<std::vector<std::string>>();
    if (key == "admin_group") policy.admin_group = value.get<std::string>();
    if (key == "allow_sharing") policy.allow_sharing = value.get<bool>();
    if (key == "history_visibility" && value.is_string())
      policy.history_visibility =
          choice_from<HistoryVisibility>(value.get<std::string>()).value_or(HistoryVisibility::own);
  }
}

void merge_profile(Config& config, const std::vector<ParsedFile>& files, const std::string& name,
                   const std::string& chosen_by) {
  if (!config.profiles.contains(name)) {
    std::vector<std::string> known;
    for (const auto& [known_name, where] : config.profiles) known.push_back(text::printable(known_name));
    throw Error(fmt::format("unknown profile \"{}\" (chosen by {}){}; {}", text::printable(name), chosen_by,
                            suggestion(name, known),
                            known.empty() ? "no configuration file defines any profile"
                                          : fmt::format("known profiles: {}", fmt::join(known, ", "))));
  }
  config.profile = ChosenProfile{name, chosen_by, config.profiles.at(name)};
  for (const ParsedFile& f : files) {
    if (!f.content.contains("profiles") || !f.content["profiles"].contains(name)) continue;
    for (const auto& [key, value] : f.content["profiles"][name].items())
      set_value(config, *find_setting(key), value, f.source(join_path(join_path("profiles", name), key), name));
  }
}

void merge_environment(Config& config, const std::map<std::string, std::string>& environment) {
  const auto variables = [] {  // for "did you mean": only on a mistake (a launch has none to spend on it)
    std::vector<std::string> names{"GPURUN_PROFILE"};
    for (const Setting& s : settings())
      if (s.scope == Scope::option) names.push_back(s.env());
    return names;
  };
  for (const auto& [variable, raw] : environment) {
    // Not settings: the profile, the sysfs root tests point at a tree of their own
    // (gpurun/gpu/topology.hpp), the system file they replace (read by the CLI, not under sudo) and
    // their system log (gpurun/util/syslog.hpp), and the mark of the inner gpurun of a Slurm step
    // (src/slurm/slurm_report.hpp).
    if (variable == "GPURUN_PROFILE" || variable == "GPURUN_SYSFS_ROOT" || variable == "GPURUN_SYSTEM_CONFIG" ||
        variable == "GPURUN_SYSLOG_SOCKET" || variable == "GPURUN_SLURM_REPORT_STEP" || raw.empty())
      continue;  // empty: unset
    // Taken for --dry-run's, it would let a real launch go ahead where the user asked for none.
    if (variable == "GPURUN_DRY_RUN" && value_from_text(ValueType::boolean, raw, variable) != json(false))
      throw Error(
          "GPURUN_DRY_RUN is not read: a dry run is asked for on the command line alone; pass --dry-run "
          "(and unset GPURUN_DRY_RUN)");
    const Setting* info = variable.starts_with("GPURUN_") ? find_setting(text::to_lower(variable.substr(7))) : nullptr;
    if (info == nullptr || info->scope != Scope::option) {
      config.warnings.push_back(fmt::format("ignoring {}: gpurun has no such setting{}", variable,
                                            info != nullptr && info->scope == Scope::policy
                                                ? " (site policy is set only in /etc/gpurun/config.json)"
                                                : suggestion(variable, variables())));
      continue;
    }
    const json value = value_from_text(info->type, raw, variable);
    if (const auto problem = info->problem(value))
      throw Error(fmt::format("{}=\"{}\": {}", variable, text::printable(raw), *problem));
    set_value(config, *info, value, {Kind::environment, variable, 0, {}});
  }
}

// The flags given; `invocation`: those that say what this one run does, which no file sets.
void merge_flags(Config& config, const std::vector<std::pair<std::string, json>>& flags, bool invocation) {
  for (const auto& [key, given] : flags) {
    const Setting* info = find_setting(key);
    if (info == nullptr || info->scope != (invocation ? Scope::invocation : Scope::option))
      throw Error(fmt::format("no command-line flag sets the configuration key \"{}\"", key));
    const json value = info->type == ValueType::appended_list && given.is_string() ? json::array({given}) : given;
    if (const auto problem = info->problem(value))  // named once: "--max-util "200": …"
      throw Error(problem->starts_with(info->flag) ? *problem : fmt::format("{}: {}", info->flag, *problem));
    if (info->scope == Scope::invocation)
      config.invocation.emplace_back(key, value);
    else
      set_value(config, *info, value, {Kind::flag, std::string(info->flag), 0, {}});
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> out;
    for (const Setting& s : settings())
      if (s.scope != Scope::invocation)
        out.push_back(
            {std::string(s.key), std::string(s.flag), s.env(), std::string(s.help), s.scope == Scope::policy});
    return out;
  }();
  return keys;
}

const ConfigValue& Config::at(std::string_view key) const {
  const Setting* setting = find_setting(key);
  if (setting == nullptr || setting->scope != Scope::option || values.size() != settings().size())
    throw Error(fmt::format("no configuration key \"{}\"", key));
  return values[index_of(*setting)];
}

Config load_config(const ConfigInputs& inputs) {
  Config config;
  config.caller = inputs.caller;
  config.system_file = inputs.system_file;
  // Indexed as the settings, not keyed by name: a map of 43 defaults was 100 allocations a launch.
  config.values.resize(settings().size());
  for (const Setting& s : settings())
    if (s.scope == Scope::option) config.values[index_of(s)].value = s.default_value();

  // The system file is read even with --no-config: its site policy always holds.
  std::vector<ParsedFile> files;  // those whose options count, lowest first
  const auto note = [&](Kind layer, const std::string& path, ConfigFile::State state) {
    config.files.push_back({layer, path, state});
  };
  // Under sudo the admin's file always counts: --no-config cannot drop what it sets.
  const bool ignore_system = inputs.no_config && !inputs.caller;
  std::optional<ParsedFile> system;
  {
    const AsRoot root;  // the admin's file, whoever may read it
    if (const std::optional<FileText> text = read_text(inputs.system_file, false)) {
      if (inputs.caller || inputs.root_runs_what_it_names)
        if (const auto why = not_roots_alone(inputs.system_file, text->st))
          throw Refusal(fmt::format(
              "the system file {} is not root's alone ({}): it chooses the programs root runs, so "
              "nothing is run until it is; make it so with `sudo chown root:root {} && sudo chmod 644 {}` (and "
              "its directory root's, mode 755)",
              text::terminal_safe(inputs.system_file), *why, text::terminal_safe(inputs.system_file),
              text::terminal_safe(inputs.system_file)));
      system = checked_file(inputs.system_file, Kind::system, text->text);
    }
  }
  if (system) {
    load_policy(config, *system);
    note(Kind::system, inputs.system_file, ignore_system ? ConfigFile::State::ignored : ConfigFile::State::loaded);
    if (!ignore_system && system->content.contains("service"))
      config.service = read_service_section(system->content["service"]).section;  // checked on load
    if (!ignore_system) files.push_back(std::move(*system));
  } else {
    note(Kind::system, inputs.system_file, ConfigFile::State::not_found);
  }

  const std::optional<std::string> user_file = inputs.caller ? caller_config_path(*inputs.caller) : inputs.user_file;
  if (user_file) {
    if (inputs.no_config) {
      note(Kind::user, *user_file, ConfigFile::State::ignored);
    } else if (auto user = load_file(*user_file, Kind::user, false)) {
      note(Kind::user, *user_file, ConfigFile::State::loaded);
      files.push_back(std::move(*user));
    } else {
      note(Kind::user, *user_file, ConfigFile::State::not_found);
    }
  }

  if (!inputs.no_config && !inputs.cwd.empty()) {
    if (const auto project = find_project_file(inputs.cwd)) {
      const uid_t owner = inputs.caller ? inputs.caller->ids.uid : inputs.user_id.value_or(::geteuid());
      if (const auto file = read_text(*project, false, owner)) {
        if (const auto& why = file->untrusted) {
          config.warnings.push_back(fmt::format("ignoring {}: {}", *project, *why));
          note(Kind::project, *project, ConfigFile::State::untrusted);
        } else {
          note(Kind::project, *project, ConfigFile::State::loaded);
          files.push_back(checked_file(*project, Kind::project, file->text));
        }
      }
    }
  }

  for (const std::string& extra : inputs.extra_files) {
    files.push_back(*load_file(extra, Kind::extra_file, true));
    note(Kind::extra_file, extra, ConfigFile::State::loaded);
  }

  for (const ParsedFile& f : files) {
    merge_file(config, f);
    if (f.content.contains("profiles"))
      for (const auto& [name, profile] : f.content["profiles"].items())
        config.profiles[name].push_back(f.source(join_path("profiles", name)));
  }

  // GPURUN_PROFILE stays in the environment of what gpurun starts: the `gpurun --no-config` a Slurm
  // step runs inherits it, and its files are not read. There it chooses only a profile a --config
  // file defines.
  const auto env_profile = inputs.environment.find("GPURUN_PROFILE");
  const auto env_profile_applies = [&] {
    return env_profile != inputs.environment.end() && !env_profile->second.empty() &&
           (!inputs.no_config || config.profiles.contains(env_profile->second));
  };
  if (inputs.profile)
    merge_profile(config, files, *inputs.profile, inputs.no_config ? "--profile, with --no-config" : "--profile");
  else if (env_profile_applies())
    merge_profile(config, files, env_profile->second, "GPURUN_PROFILE");

  merge_environment(config, inputs.environment);
  merge_flags(config, inputs.flags, false);
  merge_flags(config, inputs.invocation, true);
  return config;
}

void apply_to(const Config& config, Options& options) {
  for (const Setting& s : settings())
    if (s.scope == Scope::option) s.apply(config.values.at(index_of(s)).value, options);
  for (const auto& [key, value] : config.invocation) find_setting(key)->apply(value, options);
  options.policy = config.policy;
  options.origins = item_origins(config);
  options.caller = config.caller;
  const auto lock_dir_from = config.at("lock_dir").source.kind;  // the machine's, or a user's own choice
  options.lock_dir_shared = lock_dir_from == Kind::defaults || lock_dir_from == Kind::system;
  settle_options(options);
}

void settle_options(Options& options) {
  if (!options.report_json.empty()) options.report = true;  // --report-json implies --report
  if (options.watch_s && !(*options.watch_s >= 0.1 && *options.watch_s <= 86400))
    throw Error(fmt::format("--watch {:g}: give 0.1 to 86400 seconds", *options.watch_s));
}

ItemOrigins item_origins(const Config& config) {
  ItemOrigins origins;
  for (std::size_t index = 0; index < config.values.size(); ++index) {
    const ConfigValue& v = config.values[index];
    for (std::size_t i = 0; i < v.value.size() && i < v.item_sources.size(); ++i) {
      if (!v.value[i].is_string()) continue;
      // A word given by two layers (docker_opts' "--label") has no one origin to name: "".
      const auto [at, first] = origins[std::string(settings()[index].key)].emplace(v.value[i].get<std::string>(),
                                                                                   v.item_sources[i].describe());
      if (!first && at->second != v.item_sources[i].describe()) at->second.clear();
    }
  }
  return origins;
}

bool gpu_allowed(const Config& config, int index) { return gpu_allowed(config.policy, index); }
std::string gpu_not_allowed_reason(const Config& config) { return gpu_not_allowed_reason(config.policy); }
void check_gpu_count(const Config& config, int gpus, bool mig_instances) {
  check_gpu_count(config.policy, gpus, mig_instances);
}
void check_docker_options(const Config& config, const Options& options) {
  check_docker_options(config.policy, item_origins(config), options);
}
void check_policy(const Config& config, const Options& options) {
  check_gpu_count(config, options.gpus, options.mig.has_value());
  check_sharing(config.policy, options);
  check_docker_options(config, options);
}

Config configure(const ConfigInputs& inputs, Options& options) {
  Config config = load_config(inputs);
  apply_to(config, options);
  return config;
}

}  // namespace gpurun
