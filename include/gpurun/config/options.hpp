#pragma once
// Everything a gpurun invocation asks for, typed: filled from the settings registry
// (gpurun/config/settings.hpp) by apply_to(), whatever layer set each value. The defaults here are the
// registry's built-in defaults (a unit test keeps them equal).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/config/caller.hpp"
#include "gpurun/config/policy.hpp"
#include "gpurun/util/choices.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {

// The CPUs per GPU NVIDIA's DGX guides recommend: what --cpus-per-gpu may be, and the fair share
// is clamped to (gpurun/select/cpu_quota.hpp).
inline constexpr int kMinCpusPerGpu = 8;
inline constexpr int kMaxCpusPerGpu = 24;

// The Slurm backend's site settings (backend slurm; gpurun/slurm/slurm_launch.hpp).
struct SlurmSettings {
  std::string partition;  // empty: the cluster's default partition
  std::string account;
  std::string time_limit;  // as Slurm writes it: "4:00:00", "1-00:00:00"
  std::string qos;
  std::vector<std::string> srun_opts;  // more srun/sbatch arguments, verbatim
  SlurmContainer container = SlurmContainer::pyxis;
  bool gres = false;      // spell GPUs --gres=gpu:N instead of --gpus-per-node=N
  std::string oci_cache;  // where OCI bundles are built; empty: ~/.cache/gpurun/oci
};

// Grouped by topic for readers, not by size: there is one per process.
struct Options {  // NOLINT(clang-analyzer-optin.performance.Padding)
  // Where the GPU table comes from.
  std::string nvidia_smi = "nvidia-smi";
  std::chrono::milliseconds smi_timeout{10'000};  // every child gpurun asks, nvidia-smi and docker
  std::optional<std::string> from_csv;            // a recorded --query-gpu snapshot ("-" for stdin)
  std::optional<std::string> from_apps_csv;       // with it, a recorded --query-compute-apps snapshot
  GpuSourceSetting gpu_source = GpuSourceSetting::automatic;
  std::string nvml_library;  // "": libnvidia-ml.so.1 on the loader's path

  // What counts as free, and how many to take.
  int gpus = 1;
  Percent max_util{10.0};
  MemoryLimit max_memory{MemoryLimit::Kind::percent, 10.0};
  bool allow_busy = false;
  std::optional<double> min_free_memory_mib;  // a busy GPU with this much memory free is a candidate
  std::optional<std::string> mig;             // --mig: MIG instances are the units; "any" or a profile ("1g.10gb")
  bool mig_allow_larger = false;              // a larger profile may serve a --mig PROFILE request
  bool ignore_containers = false;             // do not ask the engine which containers hold GPUs
  std::string lock_dir = "/run/lock/gpurun";  // reservations (gpurun/locks/reservation.hpp: kDefaultLockDir)
  std::string lock_group = "docker";          // besides root, who may write the lock directory
  bool lock_dir_shared = true;                // lock_dir is the machine's (default, system file), not a user's own

  // The docker run command.
  std::string docker = "docker";
  EngineSetting engine = EngineSetting::automatic;
  std::string podman = "podman";                                 // the podman client (engine podman)
  GpuRequestSetting gpu_request = GpuRequestSetting::automatic;  // gpurun/engine/gpu_request.hpp
  std::string image;
  std::optional<int> cpus_per_gpu;
  std::optional<int> host_cpus;
  std::string name;
  std::vector<std::string> env;
  std::vector<std::string> volumes;
  std::vector<std::string> publish;
  std::vector<std::string> docker_opts;
  std::vector<std::string> command;
  bool dry_run = false;
  bool detach = false;
  WaitLimit wait;
  bool numa_affinity = true;                       // --cpuset-cpus/--cpuset-mems of the chosen GPUs' NUMA nodes
  std::optional<std::chrono::seconds> time_limit;  // --time-limit: the service stops the job then
  bool notify = false;                             // --notify: the service tells the user when it ends

  // Where the job runs: "local" (docker on this server) or "slurm" (srun/sbatch on a cluster).
  Backend backend = Backend::local;
  SlurmSettings slurm;

  // --report: run the job as a child and summarise how well it used its GPUs.
  bool report = false;
  std::string report_json;       // also write the summary as JSON here
  double report_threshold = 80;  // below this GPU efficiency (%), give hints
  double report_interval_s = 1;  // seconds between samples

  // status --watch: redraw every this many seconds; stop after watch_count frames (0: never).
  std::optional<double> watch_s;
  int watch_count = 0;

  // The container verbs, as docker's own flags: logs -f / --tail N, ps -a, stop -t SECONDS.
  bool logs_follow = false;
  std::string logs_tail;              // "" (everything), a number of lines, or "all"
  bool ps_all = false;                // containers that are not running too
  std::optional<int> stop_timeout_s;  // the engine's own default (10 s) when unset

  // config --check FILE; config init --system.
  std::string config_check;
  bool config_system = false;

  // history, usage, report: the gpurun service's socket and what is asked of it.
  std::string service_socket = "/run/gpurun/gpurund.sock";
  std::string history_since;  // --since, as typed ("" for the verb's default)
  std::string history_user;   // --user
  UsageKey usage_by = UsageKey::user;

  // Output.
  bool json = false;
  bool topology = false;  // status: the link matrix between the GPUs

  // The site policy of the system file, which the library enforces (gpurun/config/policy.hpp), and
  // where each item of the list settings came from, for its messages.
  SitePolicy policy;
  ItemOrigins origins;

  // Under sudo, the user gpurun acts for (gpurun/config/caller.hpp); nullopt otherwise.
  std::optional<Caller> caller;
};

}  // namespace gpurun
