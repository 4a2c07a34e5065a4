#pragma once
// gpurun's settings as CLI11 options: which to bind for a command line, and the flags it gave.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/config/settings.hpp"

namespace gpurun::cli {

// What CLI11 fills: each registry setting's words as typed (its values are checked and typed by
// the config layer, with the flag named in any error), and the options about the run itself.
struct Bindings {
  std::map<std::string, std::string> words;               // key -> the value of a one-value flag
  std::map<std::string, std::vector<std::string>> lists;  // key -> the values of a repeatable flag
  std::map<std::string, bool> switches;                   // key -> a boolean flag
  int verbose = 0;
  int quiet = 0;
  std::string profile;
  std::vector<std::string> config_files;
  bool no_config = false;
};

using Names = std::set<std::string, std::less<>>;

// The option names a command line mentions, as an option or not: "--gpus" of "--gpus=2", and
// "-q" and "-v" of "-qv". nullopt where every option is needed: for help (`-h`, `--help`) and
// the completion scripts, which list them all.
std::optional<Names> mentioned_names(const std::vector<std::string>& args);

// One CLI11 option per registry setting that has a flag (of those `only` names, where given), then
// the options about configuration and diagnostics themselves. Only the mentioned ones, because
// CLI11 compares each option added with every one before it (copying their name lists): binding
// all hundred took 0.4 ms of every launch (docs/performance.md). A name no option has stays
// unknown either way.
void bind_options(CLI::App& app, Bindings& b, const std::optional<Names>& only);

// The flags of `scope` given on this command line (key -> value): the top configuration layer.
std::vector<std::pair<std::string, nlohmann::json>> given_flags(const CLI::App& app, const Bindings& b, Scope scope);

// The long names of all gpurun's options, for "did you mean" (an error's path: the parser binds
// only the options a command line mentions).
std::vector<std::string> option_names();

}  // namespace gpurun::cli
