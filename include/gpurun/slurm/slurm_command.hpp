#pragma once
// The srun and sbatch command lines of a gpurun job on a Slurm cluster, built as pure functions
// of a SlurmJob, so that --dry-run prints exactly what a launch runs.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/util/choices.hpp"

namespace gpurun {

struct SlurmJob {
  int gpus = 1;
  int cpus_per_gpu = 0;
  bool gres = false;  // --gres=gpu:N instead of --gpus-per-node=N
  std::string name;   // --job-name
  std::string partition, account, time_limit, qos;
  std::vector<std::string> extra;  // slurm_srun_opts, verbatim
  // Waiting: queue = false means fail at once when the GPUs are busy (srun --immediate);
  // queue with a limit means give up after it (srun --immediate=SECONDS).
  bool queue = false;
  std::optional<std::chrono::seconds> queue_limit;
  bool pty = false;
  // --overlap: the step shares the job's GPUs and CPUs with the steps its command starts (the
  // --report sampler runs the container step as its child, itself a step of the same job).
  bool overlap = false;
  // sbatch: the batch script runs the command itself (it starts its own steps), not `srun COMMAND`.
  bool batch_runs_command = false;

  SlurmContainer container = SlurmContainer::none;
  std::string image;                 // pyxis: a docker-style reference
  std::string oci_bundle;            // oci: the bundle directory
  std::string workdir;               // the caller's directory: mounted and entered in a container
  std::vector<std::string> env;      // KEY=VALUE or KEY (from our environment)
  std::vector<std::string> volumes;  // docker -v form: SRC:DST[:ro|rw]
  std::vector<std::string> command;
  std::string output;  // sbatch --output; empty: gpurun-%j.out in workdir
};

// A duration as Slurm's --time writes it: "8:00:00", "2-00:00:00" (seconds kept; Slurm rounds up
// to the minute).
std::string slurm_duration(std::chrono::seconds duration);
// A time as Slurm's --time reads it ("30", "30:00", "4:00:00", "2-12", "2-12:30", "2-12:30:00");
// nullopt for anything else ("UNLIMITED" included).
std::optional<std::chrono::seconds> parse_slurm_duration(std::string_view text);

// `[env K=V...] srun OPTIONS [CONTAINER OPTIONS] COMMAND`: attached, the exit status is the job's.
// Throws Error for what cannot be mapped (a named volume, a comma in a pyxis mount, ...).
std::vector<std::string> build_srun_argv(const SlurmJob& job);

// `salloc --no-shell OPTIONS`: the allocation alone, for a launch that starts its own steps in it
// (slurm_container oci). Throws Error when there is no command to run there.
std::vector<std::string> build_salloc_argv(const SlurmJob& job);

// `srun [--overlap] [CONTAINER OPTIONS] COMMAND`: a step inside the job's allocation (no allocation options).
std::vector<std::string> build_step_argv(const SlurmJob& job);

// `[env K=V...] sbatch --parsable OPTIONS --wrap 'srun [CONTAINER OPTIONS] COMMAND'`
// (--wrap 'COMMAND' with batch_runs_command).
std::vector<std::string> build_sbatch_argv(const SlurmJob& job);

// A docker-style image reference as pyxis/enroot spell it: the registry is separated by '#'
// ("nvcr.io/nvidia/pytorch:24.05-py3" -> "nvcr.io#nvidia/pytorch:24.05-py3"); a path to a
// squashfs file and an image of Docker Hub are kept as they are.
std::string pyxis_image(const std::string& image);

// A docker -v value as a pyxis --container-mounts item (SRC:DST[:ro]); Error when it cannot be one.
std::string pyxis_mount(const std::string& volume);

// The job id in `sbatch --parsable`'s answer ("1234" or "1234;cluster"); Error when there is none.
std::string parse_sbatch_job_id(const std::string& out);

}  // namespace gpurun
