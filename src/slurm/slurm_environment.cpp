#include "gpurun/slurm/slurm_environment.hpp"

#include <cstdlib>

namespace gpurun {
std::string slurm_variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string enclosing_slurm_job() { return slurm_variable("SLURM_JOB_ID"); }

bool inside_slurm_step() { return !slurm_variable("SLURM_STEP_ID").empty() && !enclosing_slurm_job().empty(); }

}  // namespace gpurun
