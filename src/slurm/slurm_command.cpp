#include "gpurun/slurm/slurm_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "gpurun/util/error.hpp"
#include "gpurun/util/shell_quote.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

bool is_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

std::string env_name(const std::string& item) {
  std::string name = item.substr(0, item.find('='));
  if (!is_env_name(name))
    throw Error(fmt::format("--env \"{}\": \"{}\" is not a variable name, which srun needs", item, name));
  return name;
}

// `env K=V ...` in front of srun/sbatch: they pass their whole environment on to the job
// (--export=ALL is Slurm's default), and values may hold the commas --export cannot.
std::vector<std::string> env_prefix(const SlurmJob& job) {
  std::vector<std::string> argv;
  for (const std::string& item : job.env) {
    const std::string name = env_name(item);
    if (item.find('=') == std::string::npos) continue;  // a bare KEY is already ours
    // Set on srun (sbatch) itself, a value may change what it does rather than the job: its input
    // variables (SLURM_GPUS, SLURM_TASK_PROLOG: the options gpurun sets, programs a project file may
    // not choose), and what loads code into it or chooses the srun that runs (LD_PRELOAD, PATH),
    // from a cloned repository's .gpurun.json as much as from a flag.
    static constexpr std::string_view kSlurmInputs[] = {"SLURM_", "SRUN_", "SBATCH_", "SALLOC_", "LD_"};
    const bool slurm_or_loader = std::any_of(std::begin(kSlurmInputs), std::end(kSlurmInputs),
                                             [&](std::string_view prefix) { return name.starts_with(prefix); });
    static constexpr std::string_view kLibcInputs[] = {"PATH",    "GCONV_PATH",   "GLIBC_TUNABLES", "LOCPATH",
                                                       "NLSPATH", "MALLOC_TRACE", "HOSTALIASES",    "RESOLV_HOST_CONF"};
    if (slurm_or_loader || std::find(std::begin(kLibcInputs), std::end(kLibcInputs), name) != std::end(kLibcInputs))
      throw Error(
          fmt::format("--env {}=…: with the Slurm backend the job's variables are set on srun itself, "
                      "which {} would change; set it in the job's command instead (env {}=… python …){}",
                      name, name, name,
                      slurm_or_loader && !name.starts_with("LD_") ? ", or pass srun's option with --slurm-opt" : ""));
    argv.push_back(item);
  }
  if (!argv.empty()) argv.insert(argv.begin(), "env");
  return argv;
}

// The allocation: the same for srun and sbatch.
std::vector<std::string> allocation_options(const SlurmJob& job) {
  std::vector<std::string> argv{"--nodes=1"};
  // The --gres form is for clusters without cons_tres, which knows no --cpus-per-gpu either: there
  // the job's one task gets the same CPUs.
  if (job.gres) {
    argv.push_back(fmt::format("--gres=gpu:{}", job.gpus));
    argv.push_back(fmt::format("--cpus-per-task={}", job.gpus * job.cpus_per_gpu));
  } else {
    argv.push_back(fmt::format("--gpus-per-node={}", job.gpus));
    argv.push_back(fmt::format("--cpus-per-gpu={}", job.cpus_per_gpu));
  }
  if (!job.name.empty()) argv.push_back("--job-name=" + job.name);
  if (!job.partition.empty()) argv.push_back("--partition=" + job.partition);
  if (!job.account.empty()) argv.push_back("--account=" + job.account);
  if (!job.time_limit.empty()) argv.push_back("--time=" + job.time_limit);
  if (!job.qos.empty()) argv.push_back("--qos=" + job.qos);
  return argv;
}

// Slurm's queue is the wait: srun and salloc queue by default, --immediate refuses to.
std::vector<std::string> queue_options(const SlurmJob& job) {
  if (!job.queue) return {"--immediate"};
  if (job.queue_limit) return {fmt::format("--immediate={}", std::max<long long>(1, job.queue_limit->count()))};
  return {};
}

// What the step needs to run the command: the container's options, then the command.
std::vector<std::string> step_tail(const SlurmJob& job) {
  std::vector<std::string> argv;
  switch (job.container) {
    case SlurmContainer::pyxis: {
      if (job.image.empty()) throw Error("slurm_container pyxis needs an image: pass --image IMAGE");
      argv.push_back(fmt::format("--container-image={}", pyxis_image(job.image)));
      // The working directory as the local launch mounts it, then the volumes; a comma separates items.
      std::string mounts = pyxis_mount(job.workdir + ":" + job.workdir);
      for (const std::string& v : job.volumes) mounts.append(",").append(pyxis_mount(v));
      argv.push_back("--container-mounts=" + mounts);
      argv.push_back("--container-workdir=" + job.workdir);
      // Names whose host value overrides the image's (pyxis takes the values from srun's environment).
      std::string names;
      for (const std::string& item : job.env) names.append(names.empty() ? "" : ",").append(env_name(item));
      if (!names.empty()) argv.push_back("--container-env=" + names);
      break;
    }
    case SlurmContainer::oci:
      if (job.oci_bundle.empty()) throw Error("slurm_container oci needs a bundle (internal error: none was built)");
      argv.push_back("--container=" + job.oci_bundle);
      break;
    case SlurmContainer::none:
      if (!job.volumes.empty())
        throw Error(
            fmt::format("--volume {}: with slurm_container none the job runs on the node itself, with "
                        "nothing to mount into; use slurm_container pyxis or oci, or drop the volume",
                        job.volumes.front()));
      break;
  }
  if (job.command.empty())
    throw Error("no command to run: under Slurm give one after --, e.g. gpurun 2 -- python train.py");
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  return argv;
}

}  // namespace

std::string slurm_duration(std::chrono::seconds duration) {
  const long long total = duration.count();
  const long long days = total / 86400;
  const long long hours = total % 86400 / 3600;
  const long long minutes = total % 3600 / 60;
  const long long seconds = total % 60;
  if (days > 0) return fmt::format("{}-{:02}:{:02}:{:02}", days, hours, minutes, seconds);
  return fmt::format("{}:{:02}:{:02}", hours, minutes, seconds);
}

std::optional<std::chrono::seconds> parse_slurm_duration(std::string_view text) {
  long long days = 0;
  const auto dash = text.find('-');
  if (dash != std::string_view::npos) {
    const auto d = text::parse_integer(text.substr(0, dash));
    if (!d || *d < 0 || *d > 100'000) return std::nullopt;
    days = *d;
    text = text.substr(dash + 1);
  }
  std::vector<long long> parts;
  for (const std::string_view part : text::split(text, ':')) {
    const auto value = text::parse_integer(part);
    if (!value || *value < 0 || *value > 100'000'000) return std::nullopt;  // far past any limit
    parts.push_back(*value);
  }
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  parts.resize(3, 0);
  // With days, or three fields: hours[:minutes[:seconds]]; else minutes[:seconds].
  const long long seconds = dash != std::string_view::npos || text.find(':') != text.rfind(':')
                                ? parts[0] * 3600 + parts[1] * 60 + parts[2]
                                : parts[0] * 60 + parts[1];
  return std::chrono::seconds(days * 86400 + seconds);
}

std::string pyxis_image(const std::string& image) {
  if (image.empty() || image.front() == '/' || image.front() == '.' || image.find('#') != std::string::npos)
    return image;  // a squashfs file, or already in enroot's syntax
  const auto slash = image.find('/');
  if (slash == std::string::npos) return image;
  const std::string first = image.substr(0, slash);
  // Docker's rule: the first part names a registry when it has a '.' or a ':' or is localhost.
  const bool registry = first.find_first_of(".:") != std::string::npos || first == "localhost";
  return registry ? first + "#" + image.substr(slash + 1) : image;
}

std::string pyxis_mount(const std::string& volume) {
  if (volume.find(',') != std::string::npos)
    throw Error(fmt::format("volume \"{}\" holds a ',', which separates pyxis's --container-mounts items", volume));
  const auto colon = volume.find(':');
  const std::string source = volume.substr(0, colon);
  if (source.empty() || source.front() != '/')
    throw Error(
        fmt::format("volume \"{}\": pyxis mounts paths of the node only (no named Docker volumes); "
                    "give an absolute source path",
                    volume));
  if (colon == std::string::npos) return volume + ":" + volume;  // docker's -v /path: the same path inside
  const std::string rest = volume.substr(colon + 1);
  const auto flags_at = rest.find(':');
  const std::string flags = flags_at == std::string::npos ? "" : rest.substr(flags_at + 1);
  if (!flags.empty() && flags != "ro" && flags != "rw")
    throw Error(fmt::format("volume \"{}\": pyxis knows the mount flags ro and rw, not \"{}\"", volume, flags));
  return volume;
}

std::vector<std::string> build_srun_argv(const SlurmJob& job) {
  std::vector<std::string> argv = env_prefix(job);
  argv.emplace_back("srun");
  const auto allocation = allocation_options(job);
  argv.insert(argv.end(), allocation.begin(), allocation.end());
  const auto queue = queue_options(job);
  argv.insert(argv.end(), queue.begin(), queue.end());
  if (job.pty) argv.emplace_back("--pty");
  if (job.overlap) argv.emplace_back("--overlap");
  argv.insert(argv.end(), job.extra.begin(), job.extra.end());
  const auto tail = step_tail(job);
  argv.insert(argv.end(), tail.begin(), tail.end());
  return argv;
}

std::vector<std::string> build_salloc_argv(const SlurmJob& job) {
  if (job.command.empty())
    throw Error("no command to run: under Slurm give one after --, e.g. gpurun 2 -- python train.py");
  std::vector<std::string> argv{"salloc", "--no-shell"};
  for (const auto& part : {allocation_options(job), queue_options(job), job.extra})
    argv.insert(argv.end(), part.begin(), part.end());
  return argv;
}

std::vector<std::string> build_step_argv(const SlurmJob& job) {
  std::vector<std::string> argv{"srun"};
  if (job.pty) argv.emplace_back("--pty");  // the job's own terminal, where the step's command runs
  if (job.overlap) argv.emplace_back("--overlap");
  const auto tail = step_tail(job);
  argv.insert(argv.end(), tail.begin(), tail.end());
  return argv;
}

std::vector<std::string> build_sbatch_argv(const SlurmJob& job) {
  if (job.queue_limit)
    throw Error(
        "--wait with a limit cannot go with --detach under Slurm: sbatch has no --immediate; a batch job "
        "waits in Slurm's queue until it runs or you `scancel` it. Drop the limit (--wait) or --detach");
  std::vector<std::string> argv = env_prefix(job);
  argv.insert(argv.end(), {"sbatch", "--parsable"});
  const auto allocation = allocation_options(job);
  argv.insert(argv.end(), allocation.begin(), allocation.end());
  argv.push_back("--output=" + (job.output.empty() ? job.workdir + "/gpurun-%j.out" : job.output));
  argv.insert(argv.end(), job.extra.begin(), job.extra.end());
  // The one shell string of gpurun: sbatch runs --wrap's text with /bin/sh. It is the step's argv
  // shell-quoted word by word (util/shell_quote), so the shell hands srun exactly that argv.
  if (job.batch_runs_command && job.command.empty()) throw Error("no command for the batch script (internal error)");
  argv.push_back("--wrap=" + shell_join(job.batch_runs_command ? job.command : build_step_argv(job)));
  return argv;
}

std::string parse_sbatch_job_id(const std::string& out) {
  std::string id = out.substr(0, out.find_first_of(";\n"));
  while (!id.empty() && std::isspace(static_cast<unsigned char>(id.back())) != 0) id.pop_back();
  if (id.empty() ||
      !std::all_of(id.begin(), id.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
    throw Error(fmt::format("sbatch answered \"{}\", not a job id", out.substr(0, 200)));
  return id;
}

}  // namespace gpurun
