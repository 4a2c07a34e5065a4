#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <ostream>

#include "gpurun/cpu_quota.hpp"
#include "gpurun/docker_command.hpp"
#include "gpurun/error.hpp"
#include "gpurun/exec.hpp"
#include "gpurun/inventory.hpp"
#include "gpurun/report.hpp"
#include "gpurun/shell_quote.hpp"
#include "gpurun/verbs.hpp"

namespace gpurun {
namespace {

void check_image(const std::string& image) {
  if (image.empty())
    throw Error("no image to run: pass --image IMAGE (e.g. --image nvcr.io/nvidia/pytorch:24.05-py3) or set GPURUN_IMAGE");
  if (image.front() == '-') throw Error(fmt::format("--image \"{}\" starts with '-': that is not an image name", image));
}

}  // namespace

int run_launch(const Options& options, std::ostream& out) {
  check_image(options.image);  // before asking nvidia-smi anything: fail fast

  const std::vector<GpuAssessment> assessed = assess_machine(options);
  const std::vector<GpuAssessment> chosen = pick(assessed, options.gpus, options.allow_busy);
  const CpuPlan cpus = plan_cpus(options.gpus, static_cast<int>(assessed.size()),
                                 options.host_cpus.value_or(host_cpu_count()), options.cpus_per_gpu);

  // The ranking is shown for a dry run; a real launch keeps stderr quiet unless asked (-v).
  const auto ranking_level = options.dry_run ? spdlog::level::info : spdlog::level::debug;
  if (spdlog::should_log(ranking_level)) std::cerr << format_gpu_table(ranked(assessed)) << std::flush;
  if (cpus.warning) spdlog::warn("{}", *cpus.warning);
  spdlog::log(ranking_level, "picked GPU{} {} of {}; --cpus {} ({} per GPU)", chosen.size() == 1 ? "" : "s",
              index_list(chosen), assessed.size(), cpus.total, cpus.per_gpu);

  DockerRunRequest request;
  request.docker = options.docker;
  request.image = options.image;
  for (const auto& a : chosen) {
    request.gpu_indices.push_back(a.gpu.index);
    request.gpu_uuids.push_back(a.gpu.uuid);
  }
  request.cpus = cpus.total;
  request.identity = current_identity();
  request.tty = ::isatty(STDIN_FILENO) != 0 && ::isatty(STDOUT_FILENO) != 0;
  request.name = options.name;
  request.name_suffix = random_suffix();
  request.env = options.env;
  request.volumes = options.volumes;
  request.publish = options.publish;
  request.docker_opts = options.docker_opts;
  request.command = options.command;
  const std::vector<std::string> argv = build_docker_argv(request);

  if (options.dry_run) {
    out << shell_join(argv) << '\n';
    return 0;
  }
  out.flush();
  exec_program(argv);
}

}  // namespace gpurun
