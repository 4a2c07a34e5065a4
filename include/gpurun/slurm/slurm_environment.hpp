#pragma once
// Where this gpurun runs in Slurm, from the variables Slurm sets: inside a job's allocation (a
// batch script, an salloc shell) and inside one of its steps (srun).
#include <string>

namespace gpurun {

// A variable Slurm sets (SLURM_STEP_GPUS, SLURMD_NODENAME, ...); empty when unset.
std::string slurm_variable(const char* name);

// The job whose allocation this process runs in (SLURM_JOB_ID); empty outside any.
std::string enclosing_slurm_job();

// True inside a job step (srun sets SLURM_STEP_ID; a batch script has none).
bool inside_slurm_step();

}  // namespace gpurun
