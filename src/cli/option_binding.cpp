#include "option_binding.hpp"

#include <fmt/format.h>

#include "gpurun/util/version.hpp"

namespace gpurun::cli {
namespace {

std::string names_of(const Setting& s) {
  return s.short_flag.empty() ? std::string(s.flag) : fmt::format("{},{}", s.short_flag, s.flag);
}

}  // namespace

std::optional<Names> mentioned_names(const std::vector<std::string>& args) {
  Names names;
  for (const std::string& word : args) {
    if (word == "completion") return std::nullopt;
    if (word.starts_with("--")) {
      names.insert(word.substr(0, word.find('=')));
      if (names.contains("--help")) return std::nullopt;
    } else if (word.starts_with("-")) {
      for (char c : word.substr(1)) names.insert(std::string{'-', c});
      if (names.contains("-h")) return std::nullopt;
    }
  }
  return names;
}

void bind_options(CLI::App& app, Bindings& b, const std::optional<Names>& only) {
  app.set_version_flag("--version", std::string(kVersion));
  for (const Setting& s : settings()) {
    if (!s.flag.starts_with("--")) continue;
    if (only && !only->contains(s.flag) && (s.short_flag.empty() || !only->contains(s.short_flag))) continue;
    const std::string key(s.key);
    const std::string help(s.help);
    CLI::Option* option = nullptr;
    if (s.type == ValueType::boolean) {
      option = app.add_flag(names_of(s), b.switches[key], help);
    } else if (!s.bare_value.empty()) {  // --wait, --wait=30m
      option = app.add_flag(fmt::format("{}{{{}}}", names_of(s), s.bare_value), b.words[key], help);
    } else if (s.type == ValueType::list || s.type == ValueType::appended_list) {
      option = app.add_option(names_of(s), b.lists[key], help)->allow_extra_args(false);
    } else {
      option = app.add_option(names_of(s), b.words[key], help);
    }
    // Given twice, the last wins: `alias trainrun='gpurun --image me/pytorch:24.05 2'`, then
    // `trainrun --image other`.
    if (s.type != ValueType::list && s.type != ValueType::appended_list)
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    option->group(std::string(s.group));
  }
  for (const RunOptionSpec& spec : kRunOptions) {
    const std::string names =
        spec.short_name.empty() ? std::string(spec.long_name) : fmt::format("{},{}", spec.short_name, spec.long_name);
    const std::string help(spec.help);
    CLI::Option* option = nullptr;
    switch (spec.which) {
      case RunOption::profile:
        option = app.add_option(names, b.profile, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        break;
      case RunOption::config:
        option = app.add_option(names, b.config_files, help)->allow_extra_args(false);
        break;
      case RunOption::no_config:
        option = app.add_flag(names, b.no_config, help);
        break;
      case RunOption::verbose:
        option = app.add_flag(names, b.verbose, help);
        break;
      case RunOption::quiet:
        option = app.add_flag(names, b.quiet, help);
        break;
      case RunOption::help:  // CLI11's own
      case RunOption::version:
        continue;
    }
    option->group(std::string(spec.group));
  }
}

Names filled_names(const CLI::App& app) {
  Names given;  // read off the few options bound, not looked up by name for every setting
  for (const CLI::Option* option : app.get_options())
    if (option->count() > 0)
      for (const auto& name : option->get_lnames()) given.insert("--" + name);
  return given;
}

std::vector<std::string> option_names() {
  CLI::App app;
  Bindings unused;
  bind_options(app, unused, std::nullopt);
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options())
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  return names;
}

}  // namespace gpurun::cli
