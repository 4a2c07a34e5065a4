#include "cli.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "command_line.hpp"
#include "gpurun/config/audit_log.hpp"
#include "gpurun/config/caller.hpp"
#include "gpurun/config/config.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/config/values.hpp"
#include "gpurun/render/completion.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/terminal.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/version.hpp"
#include "gpurun/verbs/verb_table.hpp"
#include "help_formatter.hpp"
#include "option_binding.hpp"
#include "option_checks.hpp"
#include "plain_options.hpp"

namespace gpurun::cli {
namespace {

// The verbs as the completion scripts show them: the rows of the verb table that have a name.
std::vector<CompletionVerb> completion_verbs() {
  std::vector<CompletionVerb> verbs;
  for (const Verb& verb : verb_table())
    if (!verb.name.empty())
      verbs.push_back({std::string(verb.name), std::string(verb.help), verb.words, verb.takes_count});
  return verbs;
}

bool is_verb(std::string_view word) { return !word.empty() && find_verb(word) != nullptr; }

std::string footer(std::size_t width) {
  std::string verb_lines;
  for (const Verb& verb : verb_table())
    verb_lines += fmt::format("\n  {:<10}  {}", verb.name.empty() ? "(none)" : verb.name,
                              wrapped(std::string(verb.help), width - 14, 14));
  return fmt::format(R"(Full form: gpurun [OPTIONS] [VERB] [OPTIONS] [N] [--] [COMMAND [ARGS...]]
Options stop at the first word after N; the rest is the job's command, as given.

Verbs:{}

Examples:
  gpurun --image me/pytorch:24.05 2 -- python train.py
  gpurun --dry-run --image me/pytorch:24.05 2 python train.py --lr 0.1
  gpurun status --json
  alias trainrun='gpurun --image me/pytorch:24.05 2'

Exit status: the job's own once docker runs; 125 when gpurun fails (usage errors
included); 126 docker cannot be executed; 127 docker not found. See gpurun(1).)",
                     verb_lines);
}

struct Parsed {
  Options options;
  std::string verb;
  std::string subverb;  // `config init`, `completion bash`
  ConfigInputs config_inputs;
  int verbosity = 0;                  // --verbose count minus --quiet count
  std::vector<std::string> warnings;  // for once logging is set up
};

bool contains(const auto& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

constexpr const char* kDescription = "gpurun picks the freest GPUs of this machine and runs a Docker job on them.";

Parsed parse(int argc, char** argv) {
  Parsed parsed;
  Bindings b;
  const std::vector<std::string> args(argv + 1, argv + argc);
  CommandLine line = split_command_line(args, option_takes_value, is_verb, is_option_name);

  // Read off the settings table where every option is of a plain form; CLI11 reads the rest (and
  // says what is wrong), with the options it mentions bound (completion lists them all).
  std::optional<Names> given = line.verb == "completion" ? std::nullopt : read_plain_options(line.options, b);
  std::optional<CLI::App> app;
  if (!given) {
    b = {};
    app.emplace(kDescription, "gpurun");
    bind_options(*app, b, mentioned_names(args));
    check_known_options(line.options, args, *app);
  }
  // A word where N goes that is no number but nearly a verb: `gpurun statsu`.
  if (line.verb.empty() && line.count && !text::parse_integer(*line.count)) {
    std::vector<std::string> verb_names;
    for (const Verb& verb : verb_table())
      if (!verb.name.empty()) verb_names.emplace_back(verb.name);
    if (const std::string near = suggestion(*line.count, verb_names); !near.empty())
      throw Error(fmt::format("unknown verb \"{}\"{}; `gpurun --help` lists them", text::printable(*line.count), near));
  }
  // `alias trainrun='gpurun 2 --'` then `trainrun --dry-run ...`: the job would get the option.
  if (!line.command.empty() && line.command.front().starts_with("-") &&
      is_option_name(std::string_view(line.command.front()).substr(0, line.command.front().find('='))))
    parsed.warnings.push_back(fmt::format(
        "the job's command starts with {}, which is a gpurun option: the job gets it as its first word. For gpurun, "
        "put it before N and the command (an alias that ends in -- hands everything after it to the job)",
        text::printable(line.command.front())));

  if (app) {
    std::vector<std::string> reversed(line.options.rbegin(), line.options.rend());  // CLI11 takes them backwards
    app->parse(reversed);
    given = filled_names(*app);
  }

  // `status --watch 5`: the word after the verb is the interval.
  const bool bare_watch = contains(line.options, "--watch");
  if (line.verb == "status" && bare_watch && line.count) {
    b.words["watch"] = *line.count;
    line.count.reset();
  }
  const Verb& verb = *find_verb(line.verb);
  if (verb.takes_argument || (line.count && contains(verb.words, *line.count))) {  // `stop NAME`, `config init`
    parsed.subverb = line.count.value_or("");
    line.count.reset();
  }
  if (!verb.takes_count && line.count) {
    // `gpurun history alice`: a user's runs, most likely.
    const bool by_user = line.verb == "history" || line.verb == "usage";
    throw Error(
        fmt::format("gpurun {} takes no N, but got \"{}\"{}", line.verb, text::printable(*line.count),
                    by_user ? fmt::format("; for a user's runs write --user {}", text::printable(*line.count)) : ""));
  }
  parsed.verb = line.verb;
  parsed.verbosity = b.verbose - b.quiet;

  // The configuration layers: files, then GPURUN_* variables, then the flags given here.
  ConfigInputs& in = parsed.config_inputs;
  const auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
  };
  in.user_file = default_user_config_path(env("XDG_CONFIG_HOME"), env("HOME"));
  std::error_code cwd_error;
  in.cwd = std::filesystem::current_path(cwd_error).string();
  in.extra_files = b.config_files;
  in.no_config = b.no_config;
  in.environment = gpurun_environment(environ);
  // Under sudo: act for the caller from here on, before any file of theirs is read.
  in.caller = sudo_caller(::geteuid(), environ);
  // Tests (and an admin trying a new file) name another system file; under sudo the admin's holds.
  if (const auto system = env("GPURUN_SYSTEM_CONFIG"); system && !system->empty() && !in.caller)
    in.system_file = *system;
  if (in.caller) act_for(*in.caller);
  if (!b.profile.empty()) in.profile = b.profile;
  in.flags = flags_given(*given, b, Scope::option);
  in.invocation = flags_given(*given, b, Scope::invocation);
  check_verb_flags(in.invocation, verb);
  check_refused_flags(in.flags, verb);
  if (line.count) in.flags.emplace_back("gpus", parse_gpu_count(*line.count));
  if (!line.command.empty()) in.flags.emplace_back("command", line.command);
  return parsed;
}

// The verbs and options as the completion scripts see them: names and repeatability read off the
// parser itself, what each value is from the settings registry.
CompletionSpec completion_spec() {
  CLI::App app{kDescription, "gpurun"};
  Bindings unused;
  bind_options(app, unused, std::nullopt);
  static const std::map<std::string, CompletionValue> kMeta{{"--profile", CompletionValue::profile},
                                                            {"--config", CompletionValue::file}};
  CompletionSpec spec;
  spec.verbs = completion_verbs();
  for (const CLI::Option* option : app.get_options()) {
    CompletionOption described;
    for (const auto& name : option->get_snames()) described.names.push_back("-" + name);
    for (const auto& name : option->get_lnames()) described.names.push_back("--" + name);
    const Setting* setting = find_flag(described.names.back());
    const auto meta = kMeta.find(described.names.back());
    if (setting != nullptr) {
      described.value = setting->completion;
      described.choices.assign(setting->words.begin(), setting->words.end());
    } else if (meta != kMeta.end())
      described.value = meta->second;
    else if (option->get_items_expected_min() > 0)
      described.value = CompletionValue::word;
    described.help = option->get_description();
    described.repeatable = option->get_items_expected_max() > 1 ||  // -e VAR -e VAR, --verbose --verbose
                           option->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
    spec.options.push_back(std::move(described));
  }
  return spec;
}

void configure_logging(int verbosity) {
  // Coloured as gpurun's own tables are: on a terminal, never with NO_COLOR.
  auto logger = spdlog::stderr_color_mt(
      "gpurun", colour_wanted(STDERR_FILENO) ? spdlog::color_mode::always : spdlog::color_mode::never);
  logger->set_pattern("gpurun: %^%l%$: %v");
  static constexpr std::array levels{spdlog::level::off,  spdlog::level::err,   spdlog::level::warn,
                                     spdlog::level::info, spdlog::level::debug, spdlog::level::trace};
  logger->set_level(levels[static_cast<std::size_t>(std::clamp(verbosity + 3, 0, 5))]);
  spdlog::set_default_logger(logger);
}

// The verb of a command line that asks for help (`gpurun status --help`): the first word before
// "--" that names one; nullptr for the launch.
const Verb* verb_of(int argc, char** argv) {
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i)
    if (const Verb* verb = find_verb(argv[i]); verb != nullptr && !verb->name.empty()) return verb;
  return nullptr;
}

// `gpurun --help`: the synopsis first, then the description, every option and the footer (built
// here, not on every start: a launch never shows it).
std::string main_help() {
  CLI::App app{kDescription, "gpurun"};
  Bindings unused;
  bind_options(app, unused, std::nullopt);
  const std::size_t width = terminal_width(STDOUT_FILENO);
  app.formatter(std::make_shared<HelpFormatter>(width));
  app.footer(footer(width));
  std::string full = app.help("", CLI::AppFormatMode::Normal);
  // CLI11 opens with the description and its own one-line usage; the synopsis says more.
  for (int line = 0; line < 2 && full.find('\n') != std::string::npos; ++line) full.erase(0, full.find('\n') + 1);
  return fmt::format("Usage: gpurun {}\n       gpurun VERB ...   (gpurun VERB --help)\n{}\n{}", find_verb("")->synopsis,
                     app.get_description(), full);
}

// `gpurun VERB --help`: its synopsis, what it does and its own options; the rest in `gpurun --help`.
std::string verb_help(const Verb& verb) {
  std::string text = fmt::format("Usage: gpurun {}\n{}\n", verb.synopsis, verb.help);
  if (!verb.own_flags.empty()) {
    text += "\nIts own options:\n";
    for (const std::string_view key : verb.own_flags) {
      const Setting* setting = find_setting(key);
      if (setting == nullptr) continue;
      const std::string names = setting->short_flag.empty() ? std::string(setting->flag)
                                                            : fmt::format("{},{}", setting->short_flag, setting->flag);
      const std::size_t width = terminal_width(STDOUT_FILENO);
      text += fmt::format("  {:<18}  {}\n", names, wrapped(std::string(setting->help), width - 22, 22));
    }
  }
  return text +
         "\nThe options of `gpurun --help` (where GPU data comes from, which GPUs are free, output) apply too.\n";
}

void report_error(std::string_view message) {
  // Each line terminal-safe: a path, a key or a name the message quotes may hold escape sequences.
  std::string shown;
  for (std::size_t start = 0; start <= message.size();) {
    const std::size_t end = std::min(message.find('\n', start), message.size());
    shown += text::terminal_safe(message.substr(start, end - start));
    if (end < message.size()) shown += '\n';
    start = end + 1;
  }
  std::cerr << "gpurun: " << coloured("error", Colour::bold_red, colour_wanted(STDERR_FILENO)) << ": " << shown << '\n'
            << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  // An ignored SIGCHLD survives exec, and with it no child of ours could be reaped: every
  // nvidia-smi would look hung until its timeout.
  (void)::signal(SIGCHLD, SIG_DFL);
  Parsed parsed;  // outside the try: a refusal's log line names what was asked
  try {
    try {
      parsed = parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      const Verb* verb = verb_of(argc, argv);
      std::cout << (verb != nullptr ? verb_help(*verb) : main_help());
      return exit_code::ok;
    } catch (const CLI::CallForVersion&) {
      std::cout << "gpurun " << kVersion << '\n';
      return exit_code::ok;
    } catch (const CLI::ParseError& e) {
      report_error(fmt::format("{}\nRun `gpurun --help` for usage.", e.what()));
      return exit_code::failure;
    }
    configure_logging(parsed.verbosity);
    for (const std::string& warning : parsed.warnings) spdlog::warn("{}", warning);
    const Verb& verb = *find_verb(parsed.verb);
    Invocation invocation{parsed.options, nullptr, parsed.config_inputs, parsed.subverb, completion_spec};
    const bool unconfigured =
        !verb.configured ||
        std::any_of(
            parsed.config_inputs.invocation.begin(), parsed.config_inputs.invocation.end(),
            [&](const auto& flag) { return !verb.unconfigured_with.empty() && flag.first == verb.unconfigured_with; });
    if (unconfigured) {
      for (const auto& [key, value] : parsed.config_inputs.invocation) find_setting(key)->apply(value, parsed.options);
      return verb.run(invocation, std::cout);
    }
    const Config config = configure(parsed.config_inputs, parsed.options);
    for (const auto& warning : config.warnings) spdlog::warn("{}", warning);
    invocation.config = &config;
    return verb.run(invocation, std::cout);
  } catch (const SudoIdRefusal& e) {
    log_sudo_id_refusal(e.claimed_uid, e.what());
    report_error(e.what());
    return e.exit_code();
  } catch (const Refusal& e) {
    log_refusal(parsed.options, parsed.config_inputs.caller, e.what());
    report_error(e.what());
    return e.exit_code();
  } catch (const Error& e) {
    report_error(e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    report_error(fmt::format("unexpected failure: {}", e.what()));
    return exit_code::failure;
  }
}

}  // namespace gpurun::cli
