#include "cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/command_line.hpp"
#include "render/completion.hpp"
#include "config/config.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "job/launch.hpp"
#include "verbs/verbs.hpp"
#include "util/version.hpp"

namespace gpurun::cli {
namespace {

// The verbs, as the help footer and the completion scripts show them.
const std::vector<CompletionVerb>& verbs() {
  static const std::vector<CompletionVerb> list{
      {"pick", "print the N chosen GPUs' indices, e.g. CUDA_VISIBLE_DEVICES=$(gpurun pick 2)", {}, true},
      {"status", "show every GPU: memory, utilization, processes, score, free or busy and why", {}, false},
      {"ps", "list the running containers that hold GPUs, whoever started them", {}, false},
      {"config", "show every setting and where it comes from; `config init` writes a starter user file", {"init"}, false},
      {"completion", "print the bash or zsh completion script: `completion bash`", {"bash", "zsh"}, false},
  };
  return list;
}

const CompletionVerb* find_verb(std::string_view word) {
  const auto verb = std::find_if(verbs().begin(), verbs().end(), [&](const CompletionVerb& v) { return v.name == word; });
  return verb != verbs().end() ? &*verb : nullptr;
}

bool is_verb(std::string_view word) { return find_verb(word) != nullptr; }

std::string footer() {
  std::string verb_lines;
  for (const CompletionVerb& verb : verbs()) verb_lines += fmt::format("\n  {:<10}  {}", verb.name, verb.help);
  return fmt::format(R"(Full form: gpurun [OPTIONS] [VERB] [OPTIONS] [N] [--] [COMMAND [ARGS...]]
Options stop at the first word after N; the rest is the job's command, passed as given.

Verbs:
  (none)      pick N GPUs and run IMAGE [COMMAND...] on them with docker run{}

Examples:
  gpurun --image me/pytorch:24.05 2 -- python train.py
  gpurun --dry-run --image me/pytorch:24.05 2 python train.py --lr 0.1
  gpurun status --json
  alias trainrun='gpurun --image me/pytorch:24.05 2 --'

Exit status: the job's own once docker runs; 125 when gpurun fails (usage errors included);
126 docker cannot be executed; 127 docker not found. See gpurun(1).)",
                     verb_lines);
}

struct Parsed {
  Options options;
  std::string verb;
  std::string subverb;   // `config init`, `completion bash`
  ConfigInputs config_inputs;
  int verbosity = 0;  // --verbose count minus --quiet count
};

struct Bindings {
  std::string from_csv;
  std::string from_apps_csv;
  int cpus_per_gpu = 0;
  int host_cpus = 0;
  int verbose = 0;
  int quiet = 0;
  std::string wait;
  std::string watch;
  std::string profile;
  std::vector<std::string> config_files;
  bool no_config = false;
};

void bind(CLI::App& app, Options& o, Bindings& b) {
  app.set_version_flag("--version", std::string(kVersion));
  const auto group = [&](const char* name) { return name; };
  auto* source = group("Where GPU data comes from");
  app.add_option("--nvidia-smi", o.nvidia_smi, "nvidia-smi program to run")->group(source);
  app.add_option("--smi-timeout", o.smi_timeout_s, "seconds nvidia-smi may take before it is killed (default 10)")
      ->group(source);
  app.add_option("--from-csv", b.from_csv, "read a recorded `nvidia-smi --query-gpu` CSV instead ('-' = stdin)")
      ->group(source);
  app.add_option("--from-apps-csv", b.from_apps_csv,
                 "with --from-csv: the recorded `nvidia-smi --query-compute-apps` CSV of the same moment")
      ->group(source);

  auto* selection = group("Which GPUs are free");
  app.add_option("--max-util", o.max_util, "busiest utilization still counted free (default 10%)")->group(selection);
  app.add_option("--max-memory", o.max_memory, "most memory used still counted free: 15%, 500MiB, 2GiB (default 10%)")
      ->group(selection);
  app.add_flag("--allow-busy", o.allow_busy, "rank all GPUs, busy ones too, and take the lowest scores")
      ->group(selection);
  app.add_flag("--ignore-containers{false}", o.container_awareness,
               "do not ask the Docker engine which containers hold GPUs")->group(selection);
  app.add_option("--lock-dir", o.lock_dir, "directory of the GPU reservations (default /run/lock/gpurun)")->group(selection);

  auto* launch = group("The docker run command");
  app.add_option("--image", o.image, "image to run")->group(launch);
  app.add_option("--docker", o.docker, "docker client to exec")
      ->group(launch);
  app.add_flag("--dry-run", o.dry_run, "print the docker command instead of running it")->group(launch);
  app.add_flag("--wait{forever}", b.wait,
               "when too few GPUs are free, wait for them (--wait=30s, 5m, 2h; bare: no limit)")->group(launch);
  app.add_flag("-d,--detach", o.detach, "run the container in the background; print its name")->group(launch);
  app.add_option("--cpus-per-gpu", b.cpus_per_gpu, "CPUs per GPU, 8..24 (default: host CPUs / GPUs, within 8..24)")
      ->group(launch);
  app.add_option("--host-cpus", b.host_cpus, "CPUs of the docker host (default: this machine's)")->group(launch);
  app.add_option("--name", o.name, "container name (default: LOGIN_gpuN-M_RANDOM)")->group(launch);
  app.add_option("-e,--env", o.env, "set an environment variable in the container (repeatable)")
      ->allow_extra_args(false)->group(launch);
  app.add_option("-v,--volume", o.volumes, "bind-mount a volume, as docker's -v (repeatable)")
      ->allow_extra_args(false)->group(launch);
  app.add_option("-p,--publish", o.publish, "publish a port, as docker's -p (repeatable)")
      ->allow_extra_args(false)->group(launch);
  app.add_option("--docker-opt", o.docker_opts, "pass one more argument to docker run verbatim (repeatable)")
      ->allow_extra_args(false)->group(launch);

  auto* report = group("Job report (--report)");
  app.add_flag("--report", o.report, "run the job as a child and report its GPU utilization when it ends")
      ->group(report);
  app.add_option("--report-json", o.report_json, "also write the report as JSON to this file")->group(report);
  app.add_option("--report-threshold", o.report_threshold, "below this GPU efficiency (%) give hints (default 80)")
      ->check(CLI::Range(0.0, 100.0))->group(report);
  app.add_option("--report-interval", o.report_interval_s, "seconds between samples (default 1)")
      ->check(CLI::Range(0.1, 3600.0))->group(report);

  auto* watching = group("status --watch");
  app.add_flag("--watch{2}", b.watch, "status: redraw every SECONDS (default 2) until Ctrl-C")->group(watching);
  app.add_option("--count", o.watch_count, "status --watch: stop after this many frames")
      ->check(CLI::NonNegativeNumber)->group(watching);

  auto* configuration = group("Configuration");
  app.add_option("-P,--profile", b.profile, "use this profile of the config files [env GPURUN_PROFILE]")
      ->group(configuration);
  app.add_option("--config", b.config_files, "read this config file too, above the others (repeatable)")
      ->allow_extra_args(false)->group(configuration);
  app.add_flag("--no-config", b.no_config, "ignore the option values of the system, user and project files")
      ->group(configuration);

  auto* output = group("Output");
  app.add_flag("--json", o.json, "machine-readable output for pick and status")->group(output);
  app.add_flag("--verbose", b.verbose, "more diagnostics on stderr (repeatable)")->group(output);
  app.add_flag("-q,--quiet", b.quiet, "fewer diagnostics on stderr (repeatable)")->group(output);
}

bool contains(const auto& list, std::string_view word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// The flags given on this command line, as the top configuration layer (key -> value).
std::vector<std::pair<std::string, nlohmann::json>> given_flags(const CLI::App& app, const Options& o, const Bindings& b,
                                                                bool count_given) {
  const std::map<std::string, nlohmann::json> values{
      {"nvidia_smi", o.nvidia_smi},     {"smi_timeout", o.smi_timeout_s}, {"max_util", o.max_util},
      {"max_memory", o.max_memory},     {"allow_busy", true},             {"ignore_containers", true},
      {"lock_dir", o.lock_dir},         {"docker", o.docker},             {"image", o.image},
      {"cpus_per_gpu", b.cpus_per_gpu}, {"host_cpus", b.host_cpus},       {"name", o.name},
      {"env", o.env},                   {"volumes", o.volumes},           {"publish", o.publish},
      {"docker_opts", o.docker_opts},   {"detach", true},                 {"wait", b.wait},
      {"report", true}};
  std::vector<std::pair<std::string, nlohmann::json>> flags;
  for (const ConfigKey& key : config_keys()) {
    const auto value = values.find(key.name);
    if (value != values.end() && key.flag.starts_with("--") && app.count(key.flag) > 0) flags.emplace_back(*value);
  }
  if (count_given) flags.emplace_back("gpus", o.gpus);
  if (!o.command.empty()) flags.emplace_back("command", o.command);
  return flags;
}

Parsed parse(int argc, char** argv, CLI::App& app) {
  Parsed parsed;
  Bindings b;
  bind(app, parsed.options, b);

  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto takes_value = [&](std::string_view name) {
    const CLI::Option* option = app.get_option_no_throw(std::string(name));
    return option != nullptr && option->get_items_expected_min() > 0;
  };
  CommandLine line = split_command_line(args, takes_value, is_verb);

  std::vector<std::string> reversed(line.options.rbegin(), line.options.rend());  // CLI11 takes them backwards
  app.parse(reversed);

  // `status --watch 5`: the word after the verb is the interval.
  const bool bare_watch = contains(line.options, "--watch");
  if (line.verb == "status" && bare_watch && line.count) {
    b.watch = *line.count;
    line.count.reset();
  }
  if ((line.verb == "config" && line.count == "init") || line.verb == "completion") {
    parsed.subverb = line.count.value_or("");
    line.count.reset();
  }
  if (!line.verb.empty() && !find_verb(line.verb)->takes_count && line.count)
    throw Error(fmt::format("gpurun {} takes no N, but got \"{}\"", line.verb, *line.count));
  if (app.count("--watch") > 0) {
    const auto seconds = text::parse_double(b.watch);
    if (!seconds) throw Error(fmt::format("--watch \"{}\": expected seconds, such as 2 or 0.5", text::printable(b.watch)));
    parsed.options.watch_s = *seconds;
  }
  parsed.verb = line.verb;
  if (line.count) parsed.options.gpus = parse_gpu_count(*line.count);
  parsed.options.command = std::move(line.command);
  if (app.count("--from-csv") > 0) parsed.options.from_csv = b.from_csv;  // the rest reach Options through configure()
  if (app.count("--from-apps-csv") > 0) parsed.options.from_apps_csv = b.from_apps_csv;
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
  if (!b.profile.empty()) in.profile = b.profile;
  in.flags = given_flags(app, parsed.options, b, line.count.has_value());
  return parsed;
}

// The verbs and options as the completion scripts see them, read off the parser itself.
CompletionSpec completion_spec(const CLI::App& app) {
  static const std::map<std::string, CompletionValue> kValues{
      {"--nvidia-smi", CompletionValue::program}, {"--docker", CompletionValue::program},
      {"--from-csv", CompletionValue::file},      {"--from-apps-csv", CompletionValue::file}, {"--config", CompletionValue::file},
      {"--report-json", CompletionValue::file},   {"--volume", CompletionValue::file},
      {"--lock-dir", CompletionValue::directory}, {"--profile", CompletionValue::profile},
      {"--image", CompletionValue::image},        {"--wait", CompletionValue::optional_word},
      {"--watch", CompletionValue::optional_word}};
  CompletionSpec spec;
  spec.verbs = verbs();
  for (const CLI::Option* option : app.get_options()) {
    CompletionOption described;
    for (const auto& name : option->get_snames()) described.names.push_back("-" + name);
    for (const auto& name : option->get_lnames()) described.names.push_back("--" + name);
    const auto value = kValues.find(described.names.back());
    if (value != kValues.end()) described.value = value->second;
    else if (option->get_items_expected_min() > 0) described.value = CompletionValue::word;
    described.help = option->get_description();
    described.repeatable = option->get_items_expected_max() > 1 ||  // -e VAR -e VAR, --verbose --verbose
                           option->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
    spec.options.push_back(std::move(described));
  }
  return spec;
}

void configure_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("gpurun");
  logger->set_pattern("gpurun: %^%l%$: %v");
  static constexpr std::array levels{spdlog::level::off, spdlog::level::err, spdlog::level::warn,
                                     spdlog::level::info, spdlog::level::debug, spdlog::level::trace};
  logger->set_level(levels[static_cast<std::size_t>(std::clamp(verbosity + 3, 0, 5))]);
  spdlog::set_default_logger(logger);
}

void report_error(std::string_view message) { std::cerr << "gpurun: error: " << message << '\n' << std::flush; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpurun picks the freest GPUs of this machine and runs a Docker job on them.", "gpurun"};
  app.footer(footer());
  try {
    Parsed parsed;
    try {
      parsed = parse(argc, argv, app);
    } catch (const CLI::CallForHelp&) {
      std::cout << app.help("", CLI::AppFormatMode::Normal);
      return exit_code::ok;
    } catch (const CLI::CallForVersion&) {
      std::cout << "gpurun " << kVersion << '\n';
      return exit_code::ok;
    } catch (const CLI::ParseError& e) {
      report_error(fmt::format("{}\nRun `gpurun --help` for usage.", e.what()));
      return exit_code::failure;
    }
    configure_logging(parsed.verbosity);
    if (parsed.verb == "completion") return run_completion(parsed.subverb, completion_spec(app), parsed.config_inputs, std::cout);
    const Config config = configure(parsed.config_inputs, parsed.options);
    for (const auto& warning : config.warnings) spdlog::warn("{}", warning);
    if (parsed.verb == "config") return run_config(config, parsed.config_inputs, parsed.subverb == "init", parsed.options.json, std::cout);
    if (parsed.verb.empty() || parsed.verb == "pick") check_policy(config, parsed.options);
    if (parsed.verb == "pick") return run_pick(parsed.options, std::cout);
    if (parsed.verb == "status") return run_status(parsed.options, std::cout);
    if (parsed.verb == "ps") return run_ps(parsed.options, std::cout);
    return run_launch(parsed.options, std::cout);
  } catch (const Error& e) {
    report_error(e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    report_error(fmt::format("unexpected failure: {}", e.what()));
    return exit_code::failure;
  }
}

}  // namespace gpurun::cli
