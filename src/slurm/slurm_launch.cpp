#include "gpurun/slurm/slurm_launch.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <ostream>

#include "gpurun/config/audit_log.hpp"
#include "gpurun/config/policy.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/engine/docker_command.hpp"
#include "gpurun/select/cpu_quota.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/slurm/slurm_environment.hpp"
#include "gpurun/slurm/slurm_query.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/text.hpp"
#include "slurm_oci.hpp"
#include "slurm_report.hpp"

namespace gpurun {
namespace {

// Settings that steer gpurun's own picking on one server: Slurm picks on a cluster, so each one
// that is set is named as ignored rather than dropped without a word.
void warn_local_only(const Options& options) {
  const Options defaults;
  std::vector<std::string> ignored;
  if (options.max_util.value != defaults.max_util.value) ignored.emplace_back("--max-util");
  if (options.max_memory.kind != defaults.max_memory.kind || options.max_memory.value != defaults.max_memory.value)
    ignored.emplace_back("--max-memory");
  if (options.allow_busy) ignored.emplace_back("--allow-busy");
  if (options.min_free_memory_mib) ignored.emplace_back("--min-free-memory");
  if (options.ignore_containers) ignored.emplace_back("--ignore-containers");
  if (options.lock_dir != defaults.lock_dir) ignored.emplace_back("--lock-dir");
  if (options.host_cpus) ignored.emplace_back("--host-cpus");
  if (options.notify)
    spdlog::warn(
        "--notify is ignored under Slurm: the gpurun service watches this server, not the cluster; "
        "ask Slurm itself with --slurm-opt=--mail-type=END");
  if (ignored.empty()) return;
  spdlog::warn("{} {} ignored under Slurm: Slurm picks the GPUs and the CPUs per GPU come from the partition",
               fmt::join(ignored, ", "), ignored.size() == 1 ? "is" : "are");
}

// The fair share: the partition's CPUs per GPU, within 8..24, unless --cpus-per-gpu says.
int cpus_per_gpu(const Options& options) {
  if (options.cpus_per_gpu)
    return plan_cpus(options.gpus, options.gpus, options.gpus * *options.cpus_per_gpu, options.cpus_per_gpu).per_gpu;
  SlurmPartition partition;
  try {
    partition = choose_partition(query_partitions(smi_timeout(options)), options.slurm.partition);
  } catch (const Error& e) {
    throw Error(fmt::format("{} (or pass --cpus-per-gpu K to skip asking for the partition's CPUs per GPU)", e.what()));
  }
  if (options.gpus > partition.most_gpus_per_node)
    throw Error(
        fmt::format("{} GPUs asked, but the nodes of partition {} have {} at most: gpurun runs a job on one node",
                    options.gpus, partition.name, partition.most_gpus_per_node));
  // The share of the smallest GPU node, fitting any; a job larger than that node, of the larger ones.
  const int node_gpus = std::max(partition.gpus_per_node, options.gpus);
  const CpuPlan plan = plan_cpus(options.gpus, node_gpus, partition.cpus_per_node, std::nullopt);
  spdlog::debug("partition {}: {} CPUs and {} GPUs per node; {} CPUs per GPU", partition.name, partition.cpus_per_node,
                partition.gpus_per_node, plan.per_gpu);
  return std::max(1, plan.total / options.gpus);
}

// -d: sbatch returns at once with the job id; say how to reach the job.
int submit(const std::vector<std::string>& argv, const std::string& output, bool report, std::ostream& out) {
  const auto timeout = std::chrono::minutes(2);
  std::vector<std::string> resolved = argv;
  resolved.front() = locate_program(argv.front());  // 126/127 as for an attached launch
  const ProcessResult result = run_process({resolved, {}}, timeout);
  std::cerr << result.err;
  if (!result.succeeded()) {
    if (result.end == ProcessResult::End::exited) return result.exit_code;
    throw Error(fmt::format("sbatch {}", describe_end(result, timeout)));
  }
  const std::string id = parse_sbatch_job_id(result.out);
  std::string log = output;
  if (const auto at = log.find("%j"); at != std::string::npos) log.replace(at, 2, id);
  out << id << '\n';
  std::cerr << fmt::format(
      "gpurun: Slurm job {} is queued\n"
      "  its state:         squeue -j {}\n"
      "  follow its output: tail -f {}\n"
      "  attach to it:      sattach {}.0\n"
      "  cancel it:         scancel {}\n"
      "{}",
      id, id, shell_quote(log), id, id, report ? "  its --report is written to its output when it ends\n" : "");
  return 0;
}

// --report: the step runs gpurun itself, which runs the command as its child and samples the
// step's GPUs. In a pyxis container that child is the container step (`srun --container-image=...
// COMMAND`, started from the first step, which overlaps it): gpurun is not in the image.
SlurmJob report_job(const Options& options, SlurmJob job) {
  std::vector<std::string> command = options.command;
  if (job.container == SlurmContainer::pyxis) {
    command = build_step_argv(job);
    job.container = SlurmContainer::none;
    job.volumes.clear();  // the container step mounts them
    job.overlap = true;
  }
  job.command = report_step_command(options, own_path(), command);
  return job;
}

// What gpurun itself asks of the allocation, and what to pass instead: a --slurm-opt after it
// would win (srun's last option does), past the site's max_runtime or GPU count. `gres_only`:
// what gpurun sets only with slurm_gres (its CPUs are per task there).
struct SetByGpurun {
  std::string_view option;
  std::string_view instead;
  bool gres_only = false;
};
constexpr SetByGpurun kSetByGpurun[] = {
    {"--time", "--time-limit (or slurm_time)"},
    {"--gpus", "the GPU count"},
    {"--gpus-per-node", "the GPU count"},
    {"--gpus-per-task", "the GPU count"},
    {"--gpus-per-socket", "the GPU count"},
    {"--tres-per-task", "the GPU count"},
    {"--gres", "the GPU count (slurm_gres for the --gres form)"},
    {"--nodes", "nothing: gpurun runs one job on one node"},
    {"--cpus-per-gpu", "--cpus-per-gpu to gpurun"},
    {"--cpus-per-task", "--cpus-per-gpu to gpurun"},
    {"--ntasks", "one task (with slurm_gres the CPUs are the task's)", true},
};

// Refuses a --slurm-opt that sets what gpurun sets: a long option by its name or any prefix
// srun would take for it (getopt takes "--gpus-per-n"), a short one (-t, -G, -c, -N; -n with
// slurm_gres) anywhere in a group of letters; --gres only where it names GPUs (in its value, or
// in the next item, which srun reads as its value).
void refuse_srun_opts_gpurun_sets(const std::vector<std::string>& opts, bool gres) {
  const std::string_view letters = gres ? "tGcNn" : "tGcN";
  for (std::size_t i = 0; i < opts.size(); ++i) {
    const std::string_view item = opts[i];
    if (item.starts_with("--")) {
      const std::size_t equals = item.find('=');
      const std::string_view name = item.substr(0, equals);
      if (name.size() < 4) continue;  // "--", "--t": too short to be taken for one
      for (const SetByGpurun& set : kSetByGpurun) {
        if (!set.option.starts_with(name) || (set.gres_only && !gres)) continue;
        const std::string_view value = equals != std::string_view::npos
                                           ? item.substr(equals + 1)
                                           : (i + 1 < opts.size() ? std::string_view(opts[i + 1]) : "");
        if (set.option == "--gres" && name == "--gres" && value.find("gpu") == std::string_view::npos) continue;
        throw Refusal(fmt::format("--slurm-opt {}: gpurun sets srun's {} itself; pass {} instead",
                                  text::printable(opts[i]), set.option, set.instead));
      }
    } else if (item.starts_with('-') && item.find_first_of(letters) != std::string_view::npos) {
      throw Refusal(
          fmt::format("--slurm-opt {}: may set srun's -t, -G, -c or -N{}, which gpurun sets itself; give "
                      "srun's option in its long form (--constraint=tesla, not -Ctesla)",
                      text::printable(opts[i]), gres ? " (or -n, with slurm_gres)" : ""));
    }
  }
}

}  // namespace

SlurmJob slurm_job_from(const Options& options, int cpus_per_gpu, const std::string& workdir, bool tty) {
  if (!options.publish.empty())
    throw Error(
        fmt::format("--publish {}: Slurm has no port publishing; reach the node's ports directly "
                    "(e.g. ssh -L) and drop --publish for the Slurm backend",
                    options.publish.front()));
  if (!options.docker_opts.empty())
    throw Error(
        fmt::format("--docker-opt {}: docker options mean nothing to srun; give srun's own with "
                    "--slurm-opt (slurm_srun_opts)",
                    options.docker_opts.front()));
  SlurmJob job;
  job.gpus = options.gpus;
  job.cpus_per_gpu = cpus_per_gpu;
  job.gres = options.slurm.gres;
  job.name = options.name.empty() ? "gpurun" : options.name;
  job.partition = options.slurm.partition;
  job.account = options.slurm.account;
  // --time-limit is Slurm's own --time; else slurm_time as written, unless the site's max_runtime
  // is shorter (or slurm_time is not a duration this can compare, such as UNLIMITED).
  const auto limit = launch_time_limit(options.policy, options);
  const auto asked = parse_slurm_duration(options.slurm.time_limit);
  // slurm_time 0 is Slurm's "no limit": never within max_runtime.
  if (!options.time_limit && !options.slurm.time_limit.empty() &&
      (!limit || (asked && *asked > std::chrono::seconds::zero() && *asked <= *limit)))
    job.time_limit = options.slurm.time_limit;
  else
    job.time_limit = limit ? slurm_duration(*limit) : "";
  job.qos = options.slurm.qos;
  refuse_srun_opts_gpurun_sets(options.slurm.srun_opts, options.slurm.gres);
  job.extra = options.slurm.srun_opts;
  job.queue = options.wait.enabled;
  job.queue_limit = options.wait.limit;
  job.pty = tty && !options.detach;
  job.container = options.slurm.container;
  job.image = options.image;
  job.workdir = workdir;
  job.env = options.env;
  job.volumes = options.volumes;
  job.command = options.command;
  return job;
}

int run_slurm_launch(const Options& options, std::ostream& out) {
  enforce_policy(options);                         // whoever calls the library: the site policy holds
  enforce_caller_rules(options, options.dry_run);  // under sudo: refused (the job would run as root)
  if (options.from_csv) throw Error("--from-csv describes one server's GPUs; it cannot go with the Slurm backend");
  if (options.mig)  // Slurm would give whole GPUs: the job would hold more than it asked for
    throw Error(
        "--mig picks MIG instances on this server; under Slurm ask the cluster's MIG type itself, e.g. "
        "--slurm-opt=--gres=gpu:1g.10gb:1 (the names are the site's gres.conf), or use --backend local");
  const bool report = options.report;
  if (report && inside_report_step()) return run_step_report(options);  // the inner gpurun, on the node
  warn_local_only(options);
  const SlurmContainer container = options.slurm.container;
  if (container == SlurmContainer::none && !options.image.empty())
    spdlog::info("slurm_container none: the image {} is not used; the command runs on the node itself", options.image);

  const bool tty = ::isatty(STDIN_FILENO) != 0 && ::isatty(STDOUT_FILENO) != 0;
  const std::string workdir = current_workdir();
  if (container != SlurmContainer::none) check_workdir_mount(workdir);  // pyxis and oci mount it too
  SlurmJob job = slurm_job_from(options, cpus_per_gpu(options), workdir, tty);
  // Slurm picks the GPUs: the log names how many.
  if (!options.dry_run) log_launch(options, fmt::format("{} (Slurm)", options.gpus), job.name);
  if (container == SlurmContainer::oci) {
    // The bundle is written once the job holds its GPUs: by this gpurun (slurm/slurm_oci.cpp), or
    // with -d by the gpurun the batch script runs on the node.
    if (!options.detach) return run_oci_job(options, job, out);
    job = oci_batch_job(options, job, own_path());
  } else if (report) {
    job = report_job(options, job);
  }
  const std::vector<std::string> argv = options.detach ? build_sbatch_argv(job) : build_srun_argv(job);
  if (options.dry_run) {
    out << shell_join(argv) << '\n';
    return 0;
  }
  if (options.detach) return submit(argv, job.workdir + "/gpurun-%j.out", report, out);
  if (!options.wait.enabled)
    spdlog::debug("srun --immediate: the job fails at once when Slurm has no free GPUs for it (--wait queues it)");
  out.flush();
  exec_program(argv);  // srun's exit status is the job's
}

}  // namespace gpurun
