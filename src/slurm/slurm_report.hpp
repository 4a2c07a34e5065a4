#pragma once
// --report with the Slurm backend: gpurun runs itself as the step's command, and that inner
// gpurun runs the job as its child on the node, sampling the GPUs Slurm gave the step, so the
// seff-like summary includes GPU efficiency (which seff itself does not).
#include <string>
#include <vector>

#include "gpurun/config/options.hpp"

namespace gpurun {

// --report and the settings the report is made with, as flags for a gpurun on the node.
std::vector<std::string> report_flags(const Options& options);

// Set (to 1) in the environment of the inner gpurun alone, by its step's command: a launch in a
// step of someone's own (`srun --pty bash`, a batch script) is a launch, not the inner gpurun.
inline constexpr const char* kReportStepVariable = "GPURUN_SLURM_REPORT_STEP";
// Whether this gpurun is the inner one: in a Slurm step, and its step's command said so.
bool inside_report_step();

// The step's command for the outer gpurun: `/usr/bin/env GPURUN_SLURM_REPORT_STEP=1 SELF --no-config --backend slurm
// --report ... -- COMMAND`. COMMAND is the job's own, or (in a container) the `srun --container...` of the job's
// container step, which the inner gpurun then runs as its child beside its sampling: gpurun is not in the image.
std::vector<std::string> report_step_command(const Options& options, const std::string& self,
                                             const std::vector<std::string>& command);

// The inner gpurun: runs options.command as a child on the step's GPUs (SLURM_STEP_GPUS, else
// SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES) and prints the report; returns the command's status.
int run_step_report(const Options& options);

// This program's own path (/proc/self/exe), for the step to run it on the node.
std::string own_path();

}  // namespace gpurun
