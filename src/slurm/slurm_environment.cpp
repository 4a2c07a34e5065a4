#include "slurm/slurm_environment.hpp"

#include <cstdlib>

namespace gpurun {
namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

std::string enclosing_slurm_job() { return variable("SLURM_JOB_ID"); }

bool inside_slurm_step() { return !variable("SLURM_STEP_ID").empty() && !enclosing_slurm_job().empty(); }

}  // namespace gpurun
