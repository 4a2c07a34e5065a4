#include "gpurun/config/file_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "config_file.hpp"
#include "gpurun/config/inputs.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {

std::string check_config_file(const std::string& path) {
  // A .gpurun.json is checked as what the search makes it, a project file (it may set less);
  // any other as the system file, whose keys are a superset: policy keys then say where they may go.
  if (std::filesystem::path(path).filename() == kProjectFileName) {
    // As the search would judge it for whoever checks it: one it skips is said so, not "valid".
    const std::optional<FileText> text = read_text(path, true, ::geteuid());
    if (text->untrusted)
      throw Error(fmt::format("{}: a launch here would ignore it ({}); make it yours alone (chmod go-w {})",
                              text::terminal_safe(path), *text->untrusted, text::terminal_safe(path)));
    const ParsedFile file = checked_file(path, ConfigSource::Kind::project, text->text);
    std::vector<std::string> keys;
    for (const auto& item : file.content.items()) keys.push_back(item.key());
    if (keys.empty()) return fmt::format("{}: valid, and sets nothing", path);
    return fmt::format("{}: valid as a project file; sets {}", path, fmt::join(keys, ", "));
  }
  const ParsedFile file = *load_file(path, ConfigSource::Kind::system, true);
  std::vector<std::string> options;
  std::vector<std::string> policy;
  bool service = false;  // gpurund's section: the system file's alone too
  for (const auto& item : file.content.items()) {
    const Setting* setting = find_setting(item.key());
    if ((setting != nullptr && setting->scope == Scope::policy) || is_policy_object(item.key()))
      policy.push_back(item.key());
    else if (item.key() == "service")
      service = true;
    else
      options.push_back(item.key());
  }
  if (options.empty() && policy.empty() && !service) return fmt::format("{}: valid, and sets nothing", path);
  std::string line =
      fmt::format("{}: valid as {}", path, policy.empty() && !service ? "a system or user file" : "the system file");
  if (!options.empty()) line += fmt::format("; sets {}", fmt::join(options, ", "));
  if (!policy.empty()) line += fmt::format("; site policy (system file only): {}", fmt::join(policy, ", "));
  if (service) line += "; the service's settings (system file only)";
  return line;
}

}  // namespace gpurun
