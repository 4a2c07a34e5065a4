#pragma once
// The settings registry: every setting gpurun has, declared once. The command-line binding, the
// configuration files and GPURUN_* variables, `gpurun config`, the completion scripts and the
// starter file are all generated from this table, so adding a setting is one entry here plus the
// code that uses its Options field.
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/values.hpp"

namespace gpurun {

struct Options;

// Where a setting may be set.
enum class Scope {
  option,      // any layer: files, profiles, GPURUN_<KEY>, the command line
  invocation,  // the command line only: it says what this one run does (--dry-run, --json)
  policy,      // the system file only: the site policy (gpurun/config/policy.hpp)
};

// What the word after a flag is, which decides what the completion scripts offer for it.
enum class CompletionHint {
  none,           // a flag: takes no value
  optional_word,  // takes a value only as --flag=VALUE (--wait=30s)
  word,           // a value of gpurun's own (a number, a name): nothing to offer
  choice,         // one of the setting's words (Setting::words), which completion offers
  file,
  directory,
  program,  // a command on PATH or a path
  profile,  // a profile name from the config files
  image,    // an image of the local engine
};

// What an appended list does with an item a layer gives again.
enum class ListItems {
  unique,     // it keeps its first place and source (volumes, publish)
  words,      // each is kept where it was given: command-line words (docker_opts), `--label a --label b`
  variables,  // NAME=VALUE (env): the later NAME replaces the earlier, as the higher layer wins
};

struct Setting {
  std::string_view key;  // the config key and JSON name; GPURUN_<KEY> for Scope::option
  ValueType type = ValueType::text;
  Scope scope = Scope::option;
  std::string_view flag;        // "--max-util"; "N" or "COMMAND" for the positional ones; "" for policy
  std::string_view short_flag;  // "-e", or ""
  std::string_view bare_value;  // the value of a flag given without one (--wait: "forever"); "" if none
  std::string_view help;        // one line, for --help, `gpurun config` and the starter file
  std::string_view group;       // the --help section
  std::string_view fallback;    // the built-in default, as JSON ("\"10%\"", "null": unset)
  std::string_view example;     // the starter file's example value, as JSON; "" for none
  CompletionHint completion = CompletionHint::none;
  std::span<const std::string_view> words;  // CompletionHint::choice: every word it takes (gpurun/util/choices.hpp)
  bool program = false;                     // names a program gpurun runs: never from a project's file
  bool root_only = false;                   // under sudo, only the system file sets it (gpurun/config/sudo_rules.hpp)
  bool machine_wide = false;                // the machine's one set of reservations: never moved by a project's file
  ListItems items = ListItems::unique;      // an appended list: what an item given again does
  void (*apply)(const nlohmann::json& value, Options& options) = nullptr;  // stores the typed value

  std::string env() const;               // "GPURUN_MAX_UTIL"; "" when no variable sets it
  nlohmann::json default_value() const;  // fallback, parsed
  // Why `value` cannot be this setting's: its type's rules (value_problem), and a volume's form.
  std::optional<std::string> problem(const nlohmann::json& value) const;
};

// Every setting, in the order `gpurun config` and the starter file show them.
const std::vector<Setting>& settings();

// The setting with this config key, or nullptr.
const Setting* find_setting(std::string_view key);

// The setting with this flag ("--image", "-e"), or nullptr.
const Setting* find_flag(std::string_view flag);

}  // namespace gpurun
