#pragma once
// What a command line's options set, as read by either reader (CLI11's, option_binding.hpp, or
// the plain one, plain_options.hpp), and the configuration layer it makes.
#include <nlohmann/json.hpp>

#include <array>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpurun/config/settings.hpp"

namespace gpurun::cli {

// Each registry setting's words as typed (its values are checked and typed by the config layer,
// with the flag named in any error), and the options about the run itself.
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

// The options that are no setting: how the configuration is read, how much is said, help and
// version. Both readers take their names and forms from this one table (bind_options binds each
// to its member of Bindings; CLI11 answers -h and --version itself).
enum class RunOption { profile, config, no_config, verbose, quiet, help, version };
struct RunOptionSpec {
  RunOption which;
  std::string_view short_name;  // "-P", or empty
  std::string_view long_name;   // "--profile"
  bool takes_value;             // the next word (or what follows '=') is its value
  std::string_view help;
  std::string_view group;
};
inline constexpr std::array kRunOptions{
    RunOptionSpec{RunOption::profile, "-P", "--profile", true,
                  "use this profile of the config files [env GPURUN_PROFILE]", "Configuration"},
    RunOptionSpec{RunOption::config, "", "--config", true, "read this config file too, above the others (repeatable)",
                  "Configuration"},
    RunOptionSpec{RunOption::no_config, "", "--no-config", false,
                  "ignore the option values of the system, user and project files", "Configuration"},
    RunOptionSpec{RunOption::verbose, "", "--verbose", false, "more diagnostics on stderr (repeatable)", "Output"},
    RunOptionSpec{RunOption::quiet, "-q", "--quiet", false, "fewer diagnostics on stderr (repeatable)", "Output"},
    RunOptionSpec{RunOption::help, "-h", "--help", false, "", ""},
    RunOptionSpec{RunOption::version, "", "--version", false, "", ""},
};

// The entry of kRunOptions whose short or long name is `name`; nullptr for any other word.
const RunOptionSpec* find_run_option(std::string_view name);

// The flags of `scope` among the long names `given` ("--image"), typed (key -> value), in the
// registry's order: the top configuration layer.
std::vector<std::pair<std::string, nlohmann::json>> flags_given(const Names& given, const Bindings& b, Scope scope);

}  // namespace gpurun::cli
