#pragma once
// --report with the Slurm backend: gpurun runs itself as the step's command, and that inner
// gpurun runs the job as its child on the node, sampling the GPUs Slurm gave the step, so the
// seff-like summary includes GPU efficiency (which seff itself does not).
#include <string>
#include <vector>

#include "config/options.hpp"

namespace gpurun {

// True inside a Slurm job step (srun sets SLURM_STEP_ID): where the inner gpurun runs.
bool inside_slurm_step();

// The step's command for the outer gpurun: `SELF --no-config --backend slurm --report ... -- COMMAND`.
std::vector<std::string> report_step_command(const Options& options, const std::string& self);

// The inner gpurun: runs options.command as a child on the step's GPUs (SLURM_STEP_GPUS, else
// SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES) and prints the report; returns the command's status.
int run_step_report(const Options& options);

// This program's own path (/proc/self/exe), for the step to run it on the node.
std::string own_path();

}  // namespace gpurun
