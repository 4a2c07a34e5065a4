#include "option_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "gpurun/config/settings.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/config/values.hpp"
#include "gpurun/util/docker_args.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/text.hpp"
#include "option_binding.hpp"

namespace gpurun::cli {
namespace {

bool contains(const auto& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// Whether `word` ("--ipc=host", "--shm-size", "-it") is an option of `docker run` (and not gpurun's).
bool is_docker_run_option(std::string_view word) {
  if (word.starts_with("--")) {
    const std::string_view name = word.substr(2, word.find('=') - 2);
    return find_docker_rule(name) != nullptr || docker_boolean(name);
  }
  const auto read = docker_args({std::string(word)});    // a short option or cluster: its first letter
  return !read.empty() && read.front().name.size() > 1;  // docker's own (an unknown letter stays one)
}

// An option that takes a value given none: what it is, and a value of the kind it takes. `-v` is
// docker's --volume here, which someone used to `-v` for "verbose" should hear.
Error missing_value(const std::string& typed) {
  const Setting* setting = find_flag(typed);
  std::string example = typed == "--config" ? "FILE" : typed == "-P" || typed == "--profile" ? "NAME" : "VALUE";
  if (setting != nullptr && !setting->example.empty()) {
    const nlohmann::json value = nlohmann::json::parse(setting->example, nullptr, false);
    const nlohmann::json& first = value.is_array() && !value.empty() ? value.front() : value;
    if (!first.is_discarded() && !first.is_null())
      example = first.is_string() ? first.get<std::string>() : first.dump();
  }
  const std::string long_form =
      setting != nullptr && typed != setting->flag ? fmt::format(" (short for {})", setting->flag) : "";
  return Error(fmt::format("{}{} needs a value, as in `{} {}`{}", typed, long_form, typed, shell_quote(example),
                           typed == "-v" ? "; for more diagnostics on stderr, write --verbose" : ""));
}

}  // namespace

// An option gpurun does not have: a docker option is answered with --docker-opt, anything else
// with the nearest of gpurun's own.
void check_known_options(const std::vector<std::string>& words, const std::vector<std::string>& args,
                         const CLI::App& app) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.size() < 2 || word[0] != '-' || word == "--") continue;
    const std::string name = word.substr(0, word.find('='));
    bool known = app.get_option_no_throw(name) != nullptr;
    if (!known && !word.starts_with("--") && word.size() > 2) {
      // A short option with its value attached (-eFOO=1, -p8080:80, -t5), as CLI11 reads it.
      const CLI::Option* first = app.get_option_no_throw(word.substr(0, 2));
      if (first != nullptr && first->get_items_expected_min() > 0) continue;
      // A cluster of gpurun's short flags: -qq
      known = std::all_of(word.begin() + 1, word.end(), [&](char c) {
        return app.get_option_no_throw(std::string{'-', c}) != nullptr;
      });
    }
    if (known) {
      const CLI::Option* option = app.get_option_no_throw(name);
      // A switch with a value (--allow-busy=2): CLI11 takes any number for "on".
      const Setting* setting = find_flag(name);
      if (setting != nullptr && setting->type == ValueType::boolean && word.size() > name.size()) {
        static const std::set<std::string, std::less<>> kBooleans{"true", "false", "yes", "no", "on", "off", "1", "0"};
        if (!kBooleans.contains(text::to_lower(word.substr(name.size() + 1))))
          throw Error(
              fmt::format("{} is a switch and takes no value: write {} alone (or {}=false to undo a file's "
                          "setting), not {}",
                          name, name, name, text::printable(word)));
      }
      // An option whose value may be left out (--wait, --watch): `--wait=` is a value left empty
      // (`--wait=$LIMIT`, the variable unset), which must not read as --wait alone, waiting for ever.
      if (setting != nullptr && !setting->bare_value.empty() && word.size() == name.size() + 1)
        throw Error(fmt::format("{} has nothing after the '=': write {}=VALUE, or {} alone (as {}={})", word, name,
                                name, name, setting->bare_value));
      if (option != nullptr && option->get_items_expected_min() > 0) {
        if (word.size() == name.size() + 1) throw missing_value(name);  // `--image=`: nothing after the '='
        if (word.size() == name.size() && ++i == words.size()) throw missing_value(word);
      }
      continue;
    }
    const std::string shown = text::printable(word);
    if (is_docker_run_option(word)) {
      // Its value is the next word as typed (which gpurun took for N or an option of its own).
      const auto at = std::find(args.begin(), args.end(), word);
      const bool takes_value = word.starts_with("--") && word.find('=') == std::string::npos &&
                               !docker_boolean(name.substr(2)) && at != args.end() && at + 1 != args.end();
      const std::string joined = takes_value ? fmt::format("{}={}", shown, text::printable(*(at + 1))) : shown;
      throw Error(
          fmt::format("{} is an option of docker run, not of gpurun: pass it as --docker-opt={}", shown, joined));
    }
    throw Error(fmt::format("unknown option {}{}; `gpurun --help` lists them", shown,
                            word.starts_with("--") ? suggestion(name, option_names()) : ""));
  }
}

void check_refused_flags(const std::vector<std::pair<std::string, nlohmann::json>>& given, const Verb& verb) {
  for (const auto& [key, value] : given)
    for (const auto& [refused, instead] : verb.refused_flags)
      if (key == refused)
        throw Error(fmt::format("{} does not go with `gpurun {}`: {}", find_setting(key)->flag, verb.name, instead));
}

// A verb's own flag (logs -f, stop -t) with another verb: said, never ignored.
void check_verb_flags(const std::vector<std::pair<std::string, nlohmann::json>>& given, const Verb& verb) {
  check_refused_flags(given, verb);
  for (const auto& [key, value] : given) {
    if (key == "json" && verb.name.empty())
      throw Error(
          "--json is for pick, status, ps, config, history, usage and report; a launch prints the docker "
          "command with --dry-run, or runs it");
    if (contains(verb.own_flags, key)) continue;
    for (const Verb& owner : verb_table()) {
      if (!contains(owner.own_flags, key)) continue;
      const Setting& setting = *find_setting(key);
      const std::string names = setting.short_flag.empty() ? std::string(setting.flag)
                                                           : fmt::format("{}/{}", setting.short_flag, setting.flag);
      // A long flag docker has too (--user), else the short one (-t): with its value where docker takes one.
      const std::string_view docker_option =
          is_docker_run_option(setting.flag) || setting.short_flag.empty() ? setting.flag : setting.short_flag;
      if (verb.name.empty() && is_docker_run_option(docker_option)) {
        const std::string typed = value.is_string() ? value.get<std::string>() : value.dump();
        // docker's own reading of it: --user takes a value, -a (--attach) too, -t (--tty) none.
        const std::vector<DockerArg> read = docker_args({std::string(docker_option)});
        const bool takes_value = !read.empty() && !docker_boolean(read.front().name);
        const std::string value_shown = setting.type == ValueType::boolean ? "VALUE" : text::printable(typed);
        throw Error(fmt::format("{} is an option of `gpurun {}` here; for docker run, pass it as --docker-opt={}{}",
                                names, owner.name, takes_value ? "--" + read.front().name : std::string(docker_option),
                                takes_value ? "=" + value_shown : ""));
      }
      throw Error(fmt::format("{} is an option of `gpurun {}`, not of `gpurun{}{}`", names, owner.name,
                              verb.name.empty() ? "" : " ", verb.name));
    }
  }
}

}  // namespace gpurun::cli
