// gpurund, the gpurun service: watches every holder of every GPU and records its runs
// (gpurun/service/recorder.hpp). Thin: options in, the recorder, errors out.
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "gpurun/config/config.hpp"
#include "gpurun/config/idle_policy.hpp"
#include "gpurun/config/service_section.hpp"
#include "gpurun/service/recorder.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/stop_request.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/version.hpp"

namespace {

std::atomic<gpurun::StopRequest*> stop_request{nullptr};  // set before the handler is installed
extern "C" void on_stop(int signal) {
  if (gpurun::StopRequest* request = stop_request.load()) request->request(signal);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpurun;
  CLI::App app{"gpurund, the gpurun service: records every holder of every GPU (history, usage, report).", "gpurund"};
  RecorderSettings settings;
  std::vector<std::pair<std::string, std::string>> given;  // setting -> value, as gpurun's flags
  bool no_config = false;
  std::vector<std::string> config_files;
  const auto setting = [&](const char* flag, const char* key, const char* help) {
    app.add_option_function<std::string>(
        flag, [&given, key](const std::string& v) { given.emplace_back(key, v); }, help);
  };
  // The service's own settings: a flag wins over the system file's "service" section, which wins
  // over the defaults.
  ServiceSection flags;
  const auto number = [&](const char* flag, std::optional<double> ServiceSection::*field, double low, double high,
                          const char* help) {
    app.add_option_function<double>(
           flag, [&flags, field](double v) { flags.*field = v; }, help)
        // CLI11 reads "nan" and "inf" as numbers, which no range comparison refuses.
        ->check([](const std::string& v) {
          const std::optional<double> read = text::parse_double(v);
          return read && std::isfinite(*read) ? std::string() : "expected a number, got " + text::printable(v, 40);
        })
        ->check(CLI::Range(low, high));
  };
  app.add_option_function<std::string>(
      "--state-dir", [&flags](const std::string& v) { flags.state_dir = v; },
      "where the database lives (default /var/lib/gpurun)");
  std::string socket_path;
  app.add_option("--socket", socket_path,
                 "where gpurun history, usage and report ask (default: the setting service_socket, "
                 "/run/gpurun/gpurund.sock)");
  number("--interval", &ServiceSection::interval_s, 0.1, 3600, "seconds between samples, 0.1 to 3600 (default 10)");
  number("--write-every", &ServiceSection::write_every_s, 0.1, 3600,
         "seconds between writes of the store, 0.1 to 3600 (default 10; a start or end of a run writes at once)");
  number("--keep-samples", &ServiceSection::keep_samples_days, 1, 36500,
         "days to keep each GPU's raw samples, 1 to 36500 (default 14)");
  number("--keep-minutes", &ServiceSection::keep_minutes_days, 1, 36500,
         "days to keep each GPU's one-minute rows, 1 to 36500 (default 400)");
  number("--keep-ended-containers", &ServiceSection::keep_ended_containers_days, 0, 36500,
         "days a detached job's container (and its output) stays after the job ended before it is removed, 0 to "
         "36500 (default 7)");
  number("--idle-threshold", &ServiceSection::idle_threshold_percent, 0, kMostIdlePercent,
         "utilization (percent) at or below which a GPU counts as idle (default 5)");
  app.add_option_function<std::string>(
      "--listen", [&flags](const std::string& v) { flags.listen = v; },
      "serve /metrics for Prometheus on HOST:PORT, such as 127.0.0.1:9400 (default: off)");
  app.add_option_function<std::vector<std::string>>(
         "--web-name", [&flags](const std::vector<std::string>& v) { flags.web_names = v; },
         "one more name the page and /metrics answer to (a DNS alias of this machine), repeatable")
      ->check([](const std::string& v) { return host_name_text(v) ? std::string() : "expected a host name"; });
  app.add_option_function<std::string>(
         "--dcgm-job-mapping-dir", [&flags](const std::string& v) { flags.dcgm_job_mapping_dir = v; },
         "write DCGM's job mapping files there for dcgm-exporter's hpc_job label (default: off)")
      ->check([](const std::string& v) { return v.starts_with('/') ? std::string() : "expected an absolute path"; });
  setting("--nvidia-smi", "nvidia_smi", "nvidia-smi program to run");
  setting("--gpu-source", "gpu_source", "auto, nvml or nvidia-smi");
  setting("--nvml-library", "nvml_library", "the NVML library to load");
  setting("--docker", "docker", "docker client");
  setting("--engine", "engine", "auto, docker or podman");
  setting("--podman", "podman", "podman client");
  app.add_option("--config", config_files, "a configuration file to read too");
  app.add_flag("--no-config", no_config,
               "ignore the system file's option values and service section (its policy holds)");
  app.set_version_flag("--version", std::string("gpurund ") + std::string(kVersion));

  auto logger = spdlog::stderr_color_mt("gpurund");
  logger->set_pattern("gpurund: %l: %v");
  spdlog::set_default_logger(logger);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {  // CLI11's own codes are not gpurun's: a bad option is 125
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? exit_code::ok : exit_code::failure;  // --help, --version
    std::cerr << "gpurund: error: " << e.what() << " (gpurund --help lists the options)\n";
    return exit_code::failure;
  }
  try {
    ConfigInputs inputs;
    inputs.no_config = no_config;
    inputs.extra_files = config_files;
    // The tests' stand-in for /etc/gpurun/config.json, as gpurun's (never the machine's in a test).
    if (const char* system = std::getenv("GPURUN_SYSTEM_CONFIG"); system != nullptr && *system != '\0')
      inputs.system_file = system;
    // As root it runs the docker, nvidia-smi and sendmail the file names: it must be root's alone.
    inputs.root_runs_what_it_names = ::geteuid() == 0;
    for (const auto& [key, value] : given) inputs.flags.emplace_back(key, value);
    Options options;
    const Config config = configure(inputs, options);
    for (const auto& warning : config.warnings) spdlog::warn("{}", warning);
    apply_service_section(config.service, settings);  // defaults < the system file < the flags
    apply_service_section(flags, settings);
    settings.server.socket_path = socket_path.empty() ? options.service_socket : socket_path;
    settings.server.visibility = options.policy.history_visibility;
    settings.server.admin_group = options.policy.admin_group;

    // What it writes is private unless said otherwise (the database holds everyone's commands,
    // whoever started gpurund and whatever its state directory's mode): the socket and the DCGM
    // job map set their modes themselves.
    ::umask(077);
    static StopRequest stop;  // static: the handler may still run as main returns
    stop_request.store(&stop);
    struct sigaction action {};
    action.sa_handler = on_stop;
    sigemptyset(&action.sa_mask);
    for (int s : {SIGTERM, SIGINT}) ::sigaction(s, &action, nullptr);
    // SIGHUP too: a terminal closed on a gpurund in the foreground ends it as a stop does, written
    // and tidy; unless it was started to outlive its terminal (nohup), which ignores it.
    struct sigaction hangup {};
    if (::sigaction(SIGHUP, nullptr, &hangup) == 0 && hangup.sa_handler != SIG_IGN)
      ::sigaction(SIGHUP, &action, nullptr);
    // A peer that hangs up (a webhook, a browser, a scraper) is an error on that write, never the
    // end of the service.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, nullptr);
    (void)::signal(SIGCHLD, SIG_DFL);  // an ignored SIGCHLD (inherited across exec) leaves no child to reap
    // Its children (nvidia-smi, docker, sendmail) lead process groups of their own, killed whole
    // when one overruns or gpurund stops: nothing they start outlives them in a long-running service.
    gpurun::set_children_in_own_groups(true);
    return run_recorder(options, settings, stop);
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    spdlog::error("unexpected failure: {}", e.what());
    return exit_code::failure;
  }
}
