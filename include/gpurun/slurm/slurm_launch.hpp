#pragma once
// The launch on a Slurm cluster (backend "slurm"): the same Options as a local launch become an
// srun (attached) or sbatch (--detach) job. Slurm picks the GPUs and keeps the queue.
#include <iosfwd>

#include "gpurun/config/options.hpp"
#include "gpurun/slurm/slurm_command.hpp"

namespace gpurun {

// The SlurmJob the Options ask for, given the fair CPUs per GPU already decided. Throws Error for
// what cannot be carried over to Slurm (published ports, docker options).
SlurmJob slurm_job_from(const Options& options, int cpus_per_gpu, const std::string& workdir, bool tty);

// Execs srun (never returns then), submits with sbatch (--detach: prints the job id), or prints
// the command (--dry-run).
int run_slurm_launch(const Options& options, std::ostream& out);

}  // namespace gpurun
