#include "slurm_report.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>

#include "gpurun/job/job_report.hpp"
#include "gpurun/job/supervise.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/slurm/slurm_environment.hpp"
#include "gpurun/slurm/slurm_query.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/rounding.hpp"

namespace gpurun {
namespace {

std::vector<int> step_gpu_indices() {
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"})
    if (auto indices = parse_index_ranges(slurm_variable(name)); !indices.empty()) return indices;
  throw Error(
      "--report inside a Slurm step: Slurm gave the step no GPUs (no SLURM_STEP_GPUS, SLURM_JOB_GPUS "
      "or CUDA_VISIBLE_DEVICES)");
}

}  // namespace

std::string own_path() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) throw Error("--report with Slurm: cannot find gpurun's own path (/proc/self/exe) to run it in the step");
  path.resize(static_cast<std::size_t>(n));
  return path;
}

std::vector<std::string> report_flags(const Options& options) {
  std::vector<std::string> argv{"--report",
                                "--nvidia-smi",
                                options.nvidia_smi,
                                "--report-interval",
                                fmt::format("{:g}", options.report_interval_s),
                                "--report-threshold",
                                fmt::format("{:g}", options.report_threshold),
                                "--gpu-source",
                                std::string(word_of(options.gpu_source))};
  if (!options.nvml_library.empty()) argv.insert(argv.end(), {"--nvml-library", options.nvml_library});
  if (!options.report_json.empty()) argv.insert(argv.end(), {"--report-json", options.report_json});
  return argv;
}

std::vector<std::string> report_step_command(const Options& options, const std::string& self,
                                             const std::vector<std::string>& command) {
  // --no-config: the inner gpurun must do what this one decided, whatever the node's files say.
  std::vector<std::string> argv{"/usr/bin/env",
                                fmt::format("{}=1", kReportStepVariable),
                                self,
                                "--no-config",
                                "--backend",
                                "slurm",
                                "--slurm-container",
                                "none"};
  const auto flags = report_flags(options);
  argv.insert(argv.end(), flags.begin(), flags.end());
  // N before the "--": a command whose first word is a number (a program named 2) is the
  // command, as on the outer command line.
  argv.push_back(std::to_string(options.gpus));
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

bool inside_report_step() { return inside_slurm_step() && slurm_variable(kReportStepVariable) == "1"; }

int run_step_report(const Options& options) {
  ::unsetenv(kReportStepVariable);  // the command's own gpurun, if it runs one, is a launch
  if (options.command.empty()) throw Error("--report inside a Slurm step: no command to run");
  if (!options.report_json.empty()) check_report_destination(options.report_json);  // as the node sees it
  const std::vector<int> indices = step_gpu_indices();
  JobReport report;
  report.threshold_percent = options.report_threshold;
  // The step's GPUs as the node's GPU source shows them; without it, the indices alone.
  std::string source_name;
  try {
    const auto source = make_gpu_source(gpu_source_spec(options));
    source_name = source->name();
    for (const Gpu& g : source->read(smi_timeout(options)).gpus)
      if (std::find(indices.begin(), indices.end(), g.index) != indices.end()) report.gpus.push_back(g);
  } catch (const Error& e) {
    spdlog::warn("--report: cannot read the node's GPUs: {}", e.what());
  }
  if (report.gpus.empty())
    for (int i : indices) {
      Gpu gpu;
      gpu.index = i;
      report.gpus.push_back(gpu);
    }
  const std::string cpus = slurm_variable("SLURM_CPUS_ON_NODE");
  (void)std::from_chars(cpus.data(), cpus.data() + cpus.size(), report.cpus);  // stays 0 when unset
  SupervisedRun run{
      options.command, options.nvidia_smi,
      std::chrono::milliseconds(std::max<long long>(100, round_to_integer(options.report_interval_s * 1000))),
      source_name == "nvml", options.nvml_library};
  const int status = run_supervised(run, report);
  std::cerr << fmt::format("gpurun: Slurm job {} step {} on {}\n", slurm_variable("SLURM_JOB_ID"),
                           slurm_variable("SLURM_STEP_ID"), slurm_variable("SLURMD_NODENAME"))
            << format_job_report(report) << std::flush;
  return write_report_json(options.report_json, report, status);
}

}  // namespace gpurun
