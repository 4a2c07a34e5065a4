#include "plain_options.hpp"

#include "gpurun/config/settings.hpp"

namespace gpurun::cli {
namespace {

// The setting an option name sets, where CLI11 is given it (positional ones are not).
const Setting* setting_of(std::string_view name) {
  const Setting* setting = find_flag(name);
  return setting != nullptr && setting->flag.starts_with("--") ? setting : nullptr;
}

bool is_plain_value(std::string_view value) { return !value.empty() && !value.starts_with('-'); }

}  // namespace

bool is_option_name(std::string_view name) { return find_run_option(name) != nullptr || setting_of(name) != nullptr; }

bool option_takes_value(std::string_view name) {
  if (const RunOptionSpec* option = find_run_option(name)) return option->takes_value;
  const Setting* setting = setting_of(name);
  return setting != nullptr && setting->type != ValueType::boolean && setting->bare_value.empty();
}

std::optional<Names> read_plain_options(const std::vector<std::string>& words, Bindings& b) {
  Names given;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    const std::size_t equals = word.starts_with("--") ? word.find('=') : std::string_view::npos;
    const std::string_view name = word.substr(0, equals);
    if (!name.starts_with("--") && name.size() != 2) return std::nullopt;  // -qv, -eFOO=1
    std::string value;  // of an option that takes one: after '=', or the next word
    if (option_takes_value(name)) {
      if (equals != std::string_view::npos)
        value = word.substr(equals + 1);  // --docker-opt=--ipc=host: all of it
      else if (i + 1 < words.size() && is_plain_value(words[i + 1]))
        value = words[++i];
      if (value.empty()) return std::nullopt;
    } else if (equals != std::string_view::npos) {
      return std::nullopt;  // --dry-run=false: CLI11 reads a switch's value
    }

    if (const RunOptionSpec* option = find_run_option(name)) {
      switch (option->which) {
        case RunOption::verbose:
          ++b.verbose;
          break;
        case RunOption::quiet:
          ++b.quiet;
          break;
        case RunOption::no_config:
          if (b.no_config) return std::nullopt;
          b.no_config = true;
          break;
        case RunOption::profile:
          b.profile = value;  // the last wins
          break;
        case RunOption::config:
          b.config_files.push_back(value);
          break;
        case RunOption::help:
        case RunOption::version:
          return std::nullopt;  // CLI11's own
      }
    } else {
      const Setting* setting = setting_of(name);
      if (setting == nullptr || !setting->bare_value.empty()) return std::nullopt;  // --wait, unknown
      const std::string key(setting->key);
      const bool list = setting->type == ValueType::list || setting->type == ValueType::appended_list;
      given.insert(std::string(setting->flag));  // given twice: the last wins (an alias's --image overridden)
      if (setting->type == ValueType::boolean)
        b.switches[key] = true;
      else if (list)
        b.lists[key].push_back(value);
      else
        b.words[key] = value;
    }
  }
  return given;
}

}  // namespace gpurun::cli
