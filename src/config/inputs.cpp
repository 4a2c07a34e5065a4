#include "gpurun/config/inputs.hpp"

#include <filesystem>
#include <string_view>

namespace gpurun {

namespace fs = std::filesystem;

std::optional<std::string> default_user_config_path(const std::optional<std::string>& xdg_config_home,
                                                    const std::optional<std::string>& home) {
  // The XDG spec says to ignore a relative XDG_CONFIG_HOME.
  if (xdg_config_home && xdg_config_home->starts_with("/")) return *xdg_config_home + "/gpurun/config.json";
  if (home && !home->empty()) return *home + "/.config/gpurun/config.json";
  return std::nullopt;
}

std::optional<std::string> find_project_file(const std::string& cwd) {
  std::error_code ec;
  fs::path dir = fs::absolute(cwd, ec).lexically_normal();
  if (ec) return std::nullopt;
  if (!dir.has_filename() && dir.has_parent_path() && dir != dir.root_path()) dir = dir.parent_path();
  while (true) {
    const fs::path candidate = dir / kProjectFileName;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (dir == dir.root_path() || !dir.has_parent_path()) return std::nullopt;
    dir = dir.parent_path();
  }
}

std::map<std::string, std::string> environment_with_prefix(const char* const* envp, std::string_view prefix) {
  std::map<std::string, std::string> found;
  for (; envp != nullptr && *envp != nullptr; ++envp) {
    const std::string_view entry(*envp);
    const std::size_t eq = entry.find('=');
    if (entry.starts_with(prefix) && eq != std::string_view::npos)
      found.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return found;
}

std::map<std::string, std::string> gpurun_environment(const char* const* envp) {
  return environment_with_prefix(envp, "GPURUN_");
}

}  // namespace gpurun
