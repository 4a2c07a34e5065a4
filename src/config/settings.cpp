#include "gpurun/config/settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "gpurun/config/options.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;
using T = ValueType;
using H = CompletionHint;

constexpr std::string_view kSource = "Where GPU data comes from";
constexpr std::string_view kSelection = "Which GPUs are free";
constexpr std::string_view kLaunch = "The docker run command";
constexpr std::string_view kReport = "Job report (--report)";
constexpr std::string_view kWatch = "status --watch";
constexpr std::string_view kOutput = "Output";
constexpr std::string_view kSlurm = "On a Slurm cluster (backend slurm)";

std::vector<std::string> strings(const json& v) { return v.get<std::vector<std::string>>(); }

// A text setting with a fixed set of words: anything else is an error that lists them.
std::string one_of(const json& v, std::string_view key, std::initializer_list<std::string_view> words) {
  std::string word = v.get<std::string>();
  for (std::string_view w : words)
    if (word == w) return word;
  std::string list;
  for (std::string_view w : words) list += (list.empty() ? "" : ", ") + std::string(w);
  throw Error(fmt::format("{} \"{}\": expected one of {}", key, word, list));
}

// Each entry names only the fields it sets; the rest keep Setting's defaults. GCC 12 warns about
// every designated initializer that leaves a field out, which is the point here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
std::vector<Setting> make_settings() {
  return {
      // Where GPU data comes from.
      {.key = "nvidia_smi",
       .flag = "--nvidia-smi",
       .help = "nvidia-smi program to run",
       .group = kSource,
       .fallback = R"("nvidia-smi")",
       .example = R"("nvidia-smi")",
       .completion = H::program,
       .program = true,
       .root_only = true,
       .apply = [](const json& v, Options& o) { o.nvidia_smi = v.get<std::string>(); }},
      {.key = "gpu_source",
       .flag = "--gpu-source",
       .help = "where GPU data comes from: auto (NVML when it loads, else nvidia-smi), nvml or nvidia-smi",
       .group = kSource,
       .fallback = R"("auto")",
       .example = R"("auto")",
       .completion = H::word,
       .apply =
           [](const json& v, Options& o) {
             o.gpu_source = v.get<std::string>();
             if (o.gpu_source != "auto" && o.gpu_source != "nvml" && o.gpu_source != "nvidia-smi")
               throw Error(fmt::format("gpu_source \"{}\": expected auto, nvml or nvidia-smi", o.gpu_source));
           }},
      {.key = "nvml_library",
       .flag = "--nvml-library",
       .help = "the NVML library to load (default libnvidia-ml.so.1 on the loader's path)",
       .group = kSource,
       .fallback = "null",
       .example = R"("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")",
       .completion = H::file,
       .program = true,
       .root_only = true,
       .apply = [](const json& v, Options& o) { o.nvml_library = text_or_empty(v); }},
      {.key = "smi_timeout",
       .type = T::seconds,
       .flag = "--smi-timeout",
       .help = "seconds nvidia-smi (and the engine) may take before it is killed (default 10)",
       .group = kSource,
       .fallback = "10",
       .example = "10",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.smi_timeout = milliseconds_value(v); }},
      {.key = "from_csv",
       .scope = Scope::invocation,
       .flag = "--from-csv",
       .help = "read a recorded `nvidia-smi --query-gpu` CSV instead ('-' = stdin)",
       .group = kSource,
       .fallback = "null",
       .completion = H::file,
       .apply = [](const json& v, Options& o) { o.from_csv = v.get<std::string>(); }},
      {.key = "from_apps_csv",
       .scope = Scope::invocation,
       .flag = "--from-apps-csv",
       .help = "with --from-csv: the recorded `nvidia-smi --query-compute-apps` CSV of the same moment",
       .group = kSource,
       .fallback = "null",
       .completion = H::file,
       .apply = [](const json& v, Options& o) { o.from_apps_csv = v.get<std::string>(); }},

      // Which GPUs are free.
      {.key = "max_util",
       .type = T::percent,
       .flag = "--max-util",
       .help = "busiest utilization still counted free (default 10%)",
       .group = kSelection,
       .fallback = R"("10%")",
       .example = R"("10%")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.max_util = percent_value(v, "--max-util"); }},
      {.key = "max_memory",
       .type = T::memory,
       .flag = "--max-memory",
       .help = "most memory used still counted free: 15%, 500MiB, 2GiB (default 10%)",
       .group = kSelection,
       .fallback = R"("10%")",
       .example = R"("10%")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.max_memory = memory_value(v); }},
      {.key = "allow_busy",
       .type = T::boolean,
       .flag = "--allow-busy",
       .help = "rank all GPUs, busy ones too, and take the lowest scores",
       .group = kSelection,
       .fallback = "false",
       .example = "false",
       .apply = [](const json& v, Options& o) { o.allow_busy = v.get<bool>(); }},
      {.key = "mig",
       .flag = "--mig",
       .bare_value = "any",
       .help = "hand out MIG instances instead of GPUs: --mig (any profile) or --mig PROFILE (1g.10gb); needs NVML",
       .group = kSelection,
       .fallback = "null",
       .example = R"("1g.10gb")",
       .completion = H::optional_word,
       .apply =
           [](const json& v, Options& o) {
             o.mig = v.is_null() || text_or_empty(v).empty() ? std::nullopt : std::optional(text_or_empty(v));
           }},
      {.key = "mig_allow_larger",
       .type = T::boolean,
       .flag = "--mig-allow-larger",
       .help = "with --mig PROFILE: a larger instance may serve when too few of that profile are free",
       .group = kSelection,
       .fallback = "false",
       .example = "false",
       .apply = [](const json& v, Options& o) { o.mig_allow_larger = v.get<bool>(); }},
      {.key = "ignore_containers",
       .type = T::boolean,
       .flag = "--ignore-containers",
       .help = "do not ask the container engine which containers hold GPUs, nor trace GPU processes to theirs",
       .group = kSelection,
       .fallback = "false",
       .example = "false",
       .apply = [](const json& v, Options& o) { o.ignore_containers = v.get<bool>(); }},
      {.key = "lock_dir",
       .flag = "--lock-dir",
       .help = "directory of the GPU reservations, one per machine",
       .group = kSelection,
       .fallback = R"("/run/lock/gpurun")",
       .example = R"("/run/lock/gpurun")",
       .completion = H::directory,
       .root_only = true,
       .apply = [](const json& v, Options& o) { o.lock_dir = text_or_empty(v); }},
      {.key = "lock_group",
       .flag = "--lock-group",
       .help = "group whose members may launch directly and so write the lock directory (default docker: the "
               "engine makes them root's equals already)",
       .group = kSelection,
       .fallback = R"("docker")",
       .example = R"("docker")",
       .completion = H::word,
       .root_only = true,
       .apply = [](const json& v, Options& o) { o.lock_group = text_or_empty(v); }},

      // The docker run command.
      {.key = "image",
       .flag = "--image",
       .help = "image to run",
       .group = kLaunch,
       .fallback = "null",
       .example = R"("nvcr.io/nvidia/pytorch:24.05-py3")",
       .completion = H::image,
       .apply = [](const json& v, Options& o) { o.image = text_or_empty(v); }},
      {.key = "gpus",
       .type = T::count,
       .flag = "N",
       .help = "how many GPUs to take",
       .group = kLaunch,
       .fallback = "1",
       .example = "1",
       .apply = [](const json& v, Options& o) { o.gpus = v.get<int>(); }},
      {.key = "command",
       .type = T::list,
       .flag = "COMMAND",
       .help = "command to run in the container (when none is given)",
       .group = kLaunch,
       .fallback = "[]",
       .example = R"(["python", "train.py"])",
       .apply = [](const json& v, Options& o) { o.command = strings(v); }},
      {.key = "docker",
       .flag = "--docker",
       .help = "docker client to exec",
       .group = kLaunch,
       .fallback = R"("docker")",
       .example = R"("docker")",
       .completion = H::program,
       .program = true,
       .root_only = true,
       .apply = [](const json& v, Options& o) { o.docker = v.get<std::string>(); }},
      {.key = "engine",
       .flag = "--engine",
       .help = "container engine: auto (docker when its client is found, else podman), docker or podman",
       .group = kLaunch,
       .fallback = R"("auto")",
       .example = R"("auto")",
       .completion = H::word,
       .root_only = true,  // it chooses the program root runs under sudo
       .apply =
           [](const json& v, Options& o) {
             o.engine = one_of(v, "engine", {"auto", "docker", "podman"});
           }},
      {.key = "podman",
       .flag = "--podman",
       .help = "podman client to exec (engine podman)",
       .group = kLaunch,
       .fallback = R"("podman")",
       .example = R"("podman")",
       .completion = H::program,
       .program = true,
       .root_only = true,
       .apply = [](const json& v, Options& o) { o.podman = v.get<std::string>(); }},
      {.key = "gpu_request",
       .flag = "--gpu-request",
       .help = "how the container asks for its GPUs: auto (CDI where the engine has it, else --gpus), gpus, "
               "cdi (--device nvidia.com/gpu=UUID) or runtime (--runtime=nvidia, NVIDIA_VISIBLE_DEVICES)",
       .group = kLaunch,
       .fallback = R"("auto")",
       .example = R"("auto")",
       .completion = H::word,
       .apply =
           [](const json& v, Options& o) {
             o.gpu_request = one_of(v, "gpu_request", {"auto", "gpus", "cdi", "runtime"});
           }},
      {.key = "dry_run",
       .type = T::boolean,
       .scope = Scope::invocation,
       .flag = "--dry-run",
       .help = "print the docker command instead of running it",
       .group = kLaunch,
       .fallback = "false",
       .apply = [](const json& v, Options& o) { o.dry_run = v.get<bool>(); }},
      {.key = "wait",
       .type = T::wait,
       .flag = "--wait",
       .bare_value = "forever",
       .help = "when too few GPUs are free, wait for them (--wait=30s, 5m, 2h; bare: no limit)",
       .group = kLaunch,
       .fallback = "false",
       .example = R"("30m")",
       .completion = H::optional_word,
       .apply = [](const json& v, Options& o) { o.wait = wait_value(v); }},
      {.key = "detach",
       .type = T::boolean,
       .flag = "--detach",
       .short_flag = "-d",
       .help = "run the container in the background; print its name",
       .group = kLaunch,
       .fallback = "false",
       .example = "false",
       .apply = [](const json& v, Options& o) { o.detach = v.get<bool>(); }},
      {.key = "numa_affinity",
       .type = T::boolean,
       .flag = "--numa-affinity",
       .help = "give the container the CPUs and memory of its GPUs' NUMA nodes (--numa-affinity=false: "
               "any CPU)",
       .group = kLaunch,
       .fallback = "true",
       .example = "true",
       .apply = [](const json& v, Options& o) { o.numa_affinity = v.get<bool>(); }},
      {.key = "cpus_per_gpu",
       .type = T::count,
       .flag = "--cpus-per-gpu",
       .help = "CPUs per GPU, 8..24 (default: host CPUs / GPUs, within 8..24)",
       .group = kLaunch,
       .fallback = "null",
       .example = "16",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.cpus_per_gpu = optional_int(v); }},
      {.key = "host_cpus",
       .type = T::count,
       .flag = "--host-cpus",
       .help = "CPUs of the docker host (default: this machine's)",
       .group = kLaunch,
       .fallback = "null",
       .example = "64",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.host_cpus = optional_int(v); }},
      {.key = "name",
       .flag = "--name",
       .help = "container name (default: LOGIN_gpuN-M_RANDOM)",
       .group = kLaunch,
       .fallback = "null",
       .example = R"("my-job")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.name = text_or_empty(v); }},
      {.key = "env",
       .type = T::appended_list,
       .flag = "--env",
       .short_flag = "-e",
       .help = "set an environment variable in the container (repeatable)",
       .group = kLaunch,
       .fallback = "[]",
       .example = R"(["WANDB_MODE=offline"])",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.env = strings(v); }},
      {.key = "volumes",
       .type = T::appended_list,
       .flag = "--volume",
       .short_flag = "-v",
       .help = "bind-mount a volume, as docker's -v (repeatable)",
       .group = kLaunch,
       .fallback = "[]",
       .example = R"(["/data:/data:ro"])",
       .completion = H::file,
       .apply = [](const json& v, Options& o) { o.volumes = strings(v); }},
      {.key = "publish",
       .type = T::appended_list,
       .flag = "--publish",
       .short_flag = "-p",
       .help = "publish a port, as docker's -p (repeatable)",
       .group = kLaunch,
       .fallback = "[]",
       .example = R"(["6006:6006"])",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.publish = strings(v); }},
      {.key = "docker_opts",
       .type = T::appended_list,
       .flag = "--docker-opt",
       .help = "pass one more argument to docker run verbatim (repeatable)",
       .group = kLaunch,
       .fallback = "[]",
       .example = R"(["--ipc=host"])",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.docker_opts = strings(v); }},

      // Where the job runs.
      {.key = "backend",
       .flag = "--backend",
       .help = "where the job runs: local (docker here) or slurm (srun/sbatch)",
       .group = kSlurm,
       .fallback = R"("local")",
       .example = R"("local")",
       .completion = H::word,
       .apply =
           [](const json& v, Options& o) {
             o.backend = one_of(v, "backend", {"local", "slurm"});
           }},
      {.key = "slurm_partition",
       .flag = "--slurm-partition",
       .help = "Slurm partition (default: the cluster's)",
       .group = kSlurm,
       .fallback = "null",
       .example = R"("gpu")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.slurm.partition = text_or_empty(v); }},
      {.key = "slurm_account",
       .flag = "--slurm-account",
       .help = "Slurm account to charge",
       .group = kSlurm,
       .fallback = "null",
       .example = R"("mylab")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.slurm.account = text_or_empty(v); }},
      {.key = "slurm_time",
       .flag = "--slurm-time",
       .help = "Slurm time limit, as Slurm writes it (4:00:00, 1-00:00:00)",
       .group = kSlurm,
       .fallback = "null",
       .example = R"("4:00:00")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.slurm.time_limit = text_or_empty(v); }},
      {.key = "slurm_qos",
       .flag = "--slurm-qos",
       .help = "Slurm quality of service",
       .group = kSlurm,
       .fallback = "null",
       .example = R"("normal")",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.slurm.qos = text_or_empty(v); }},
      {.key = "slurm_srun_opts",
       .type = T::appended_list,
       .flag = "--slurm-opt",
       .help = "pass one more argument to srun/sbatch verbatim (repeatable)",
       .group = kSlurm,
       .fallback = "[]",
       .example = R"(["--constraint=h100"])",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.slurm.srun_opts = strings(v); }},
      {.key = "slurm_container",
       .flag = "--slurm-container",
       .help = "how the image runs under Slurm: pyxis, oci (srun --container) or none",
       .group = kSlurm,
       .fallback = R"("pyxis")",
       .example = R"("pyxis")",
       .completion = H::word,
       .apply =
           [](const json& v, Options& o) {
             o.slurm.container = one_of(v, "slurm_container", {"pyxis", "oci", "none"});
           }},
      {.key = "slurm_gres",
       .type = T::boolean,
       .flag = "--slurm-gres",
       .help = "ask for GPUs as --gres=gpu:N instead of --gpus-per-node=N",
       .group = kSlurm,
       .fallback = "false",
       .example = "false",
       .apply = [](const json& v, Options& o) { o.slurm.gres = v.get<bool>(); }},
      {.key = "slurm_oci_cache",
       .flag = "--slurm-oci-cache",
       .help = "slurm_container oci: where bundles are built (default ~/.cache/gpurun/oci)",
       .group = kSlurm,
       .fallback = "null",
       .example = R"("/scratch/me/gpurun-oci")",
       .completion = H::directory,
       .apply = [](const json& v, Options& o) { o.slurm.oci_cache = text_or_empty(v); }},

      // Job report.
      {.key = "report",
       .type = T::boolean,
       .flag = "--report",
       .help = "run the job as a child and report its GPU utilization when it ends",
       .group = kReport,
       .fallback = "false",
       .example = "true",
       .apply = [](const json& v, Options& o) { o.report = v.get<bool>(); }},
      {.key = "report_json",
       .scope = Scope::invocation,
       .flag = "--report-json",
       .help = "also write the report as JSON to this file",
       .group = kReport,
       .fallback = "null",
       .completion = H::file,
       .apply = [](const json& v, Options& o) { o.report_json = text_or_empty(v); }},
      {.key = "report_threshold",
       .type = T::percent,
       .scope = Scope::invocation,
       .flag = "--report-threshold",
       .help = "below this GPU efficiency (%) give hints (default 80)",
       .group = kReport,
       .fallback = "80",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.report_threshold = percent_value(v, "--report-threshold").value; }},
      {.key = "report_interval",
       .type = T::seconds,
       .scope = Scope::invocation,
       .flag = "--report-interval",
       .help = "seconds between samples (default 1)",
       .group = kReport,
       .fallback = "1",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.report_interval_s = v.get<double>(); }},

      // status --watch.
      {.key = "watch",
       .type = T::interval,
       .scope = Scope::invocation,
       .flag = "--watch",
       .bare_value = "2",
       .help = "status: redraw every SECONDS (default 2) until Ctrl-C",
       .group = kWatch,
       .fallback = "null",
       .completion = H::optional_word,
       .apply = [](const json& v,
                   Options& o) { o.watch_s = v.is_null() ? std::nullopt : std::optional(v.get<double>()); }},
      {.key = "count",
       .type = T::whole,
       .scope = Scope::invocation,
       .flag = "--count",
       .help = "status --watch: stop after this many frames",
       .group = kWatch,
       .fallback = "0",
       .completion = H::word,
       .apply = [](const json& v, Options& o) { o.watch_count = v.get<int>(); }},

      // Output.
      {.key = "json",
       .type = T::boolean,
       .scope = Scope::invocation,
       .flag = "--json",
       .help = "machine-readable output for pick, status, ps and config",
       .group = kOutput,
       .fallback = "false",
       .apply = [](const json& v, Options& o) { o.json = v.get<bool>(); }},

      {.key = "topology",
       .type = T::boolean,
       .scope = Scope::invocation,
       .flag = "--topology",
       .help = "status: show the links between the GPUs and their NUMA nodes",
       .group = kOutput,
       .fallback = "false",
       .apply = [](const json& v, Options& o) { o.topology = v.get<bool>(); }},

      // Site policy: the system file only (gpurun/config/policy.hpp).
      {.key = "allowed_gpus",
       .type = T::gpu_indices,
       .scope = Scope::policy,
       .help = "GPUs gpurun may hand out",
       .fallback = "null"},
      {.key = "max_gpus_per_launch",
       .type = T::count,
       .scope = Scope::policy,
       .help = "most GPUs one launch may take",
       .fallback = "null"},
      {.key = "refused_docker_options",
       .type = T::list,
       .scope = Scope::policy,
       .help = "docker options that are refused",
       .fallback = "null"},
      {.key = "allowed_images",
       .type = T::list,
       .scope = Scope::policy,
       .help = "image patterns a launch may run (shell wildcards: \"nvcr.io/nvidia/*\")",
       .fallback = "null"},
      {.key = "allowed_docker_options",
       .type = T::list,
       .scope = Scope::policy,
       .help = "under sudo: docker options allowed beyond the built-in list (\"--ulimit\", \"--network=mynet\")",
       .fallback = "null"},
      {.key = "admin_group",
       .scope = Scope::policy,
       .help = "under sudo: members of this group may stop, attach to and read the logs of any gpurun container",
       .fallback = "null"},
  };
}
#pragma GCC diagnostic pop

}  // namespace

std::string Setting::env() const { return scope == Scope::option ? "GPURUN_" + text::to_upper(key) : ""; }

json Setting::default_value() const { return json::parse(fallback); }

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = make_settings();
  return table;
}

const Setting* find_setting(std::string_view key) {
  const auto& table = settings();
  const auto it = std::find_if(table.begin(), table.end(), [&](const Setting& s) { return s.key == key; });
  return it == table.end() ? nullptr : &*it;
}

const Setting* find_flag(std::string_view flag) {
  const auto& table = settings();
  const auto it = std::find_if(table.begin(), table.end(), [&](const Setting& s) {
    return !flag.empty() && (s.flag == flag || s.short_flag == flag);
  });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace gpurun
