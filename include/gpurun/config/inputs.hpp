#pragma once
// Where the configuration layers come from: the user file's path, the project file search, and
// the GPURUN_* variables of the environment.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

// $XDG_CONFIG_HOME/gpurun/config.json (when absolute), else $HOME/.config/gpurun/config.json.
std::optional<std::string> default_user_config_path(const std::optional<std::string>& xdg_config_home,
                                                    const std::optional<std::string>& home);
// A project file's name.
inline constexpr std::string_view kProjectFileName = ".gpurun.json";

// The nearest .gpurun.json in `cwd` or one of its parents; nullopt when there is none.
std::optional<std::string> find_project_file(const std::string& cwd);
// The variables of an environ-style array whose names start with `prefix` ("SUDO_").
std::map<std::string, std::string> environment_with_prefix(const char* const* envp, std::string_view prefix);
// The GPURUN_* variables of an environ-style array.
std::map<std::string, std::string> gpurun_environment(const char* const* envp);

}  // namespace gpurun
