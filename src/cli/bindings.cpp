#include "bindings.hpp"

#include "gpurun/config/values.hpp"

namespace gpurun::cli {

const RunOptionSpec* find_run_option(std::string_view name) {
  for (const RunOptionSpec& option : kRunOptions)
    if (!name.empty() && (option.long_name == name || option.short_name == name)) return &option;
  return nullptr;
}

std::vector<std::pair<std::string, nlohmann::json>> flags_given(const Names& given, const Bindings& b, Scope scope) {
  std::vector<std::pair<std::string, nlohmann::json>> flags;
  for (const Setting& s : settings()) {
    if (s.scope != scope || !s.flag.starts_with("--") || !given.contains(s.flag)) continue;
    const std::string key(s.key);
    if (s.type == ValueType::boolean)
      flags.emplace_back(key, b.switches.at(key));
    else if (b.lists.contains(key))
      flags.emplace_back(key, b.lists.at(key));
    else
      flags.emplace_back(key, value_from_text(s.type, b.words.at(key), s.flag));
  }
  return flags;
}

}  // namespace gpurun::cli
