#include "gpurun/verbs/backends.hpp"

#include <fmt/format.h>

#include "gpurun/config/policy.hpp"
#include "gpurun/job/launch.hpp"
#include "gpurun/slurm/slurm_launch.hpp"
#include "gpurun/slurm/slurm_views.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/verbs/verbs.hpp"

namespace gpurun {
namespace {

// On a cluster the GPUs are Slurm's to give, when the job starts.
int slurm_pick(const Options& options, std::ostream& /*out*/) {
  enforce_policy(options);
  throw Error(
      "pick names GPUs of this server; with the Slurm backend Slurm picks them when the job starts "
      "(see `gpurun status`)");
}

// Slurm's jobs are reached through Slurm's own tools.
int slurm_manage(const std::string& verb, const std::string& name, const Options& /*options*/, std::ostream& /*out*/) {
  const std::string job = name.empty() ? "JOBID" : text::printable(name);
  if (verb == "logs")
    throw Error(
        fmt::format("with the Slurm backend, a job's output is its file: sattach {}.0 or the job's --output", job));
  if (verb == "attach")
    throw Error(fmt::format("with the Slurm backend, attach with Slurm's own tool: sattach {}.0", job));
  if (verb == "rm")
    throw Error(
        fmt::format("with the Slurm backend, a job leaves no container to remove: its output is its file "
                    "(the job's --output; sacct -j {} shows how it ended)",
                    job));
  throw Error(fmt::format("with the Slurm backend, stop a job with Slurm's own tool: scancel {}", job));
}

const BackendTable kLocal{"local", run_launch, run_pick, run_status, run_ps, run_manage};
const BackendTable kSlurm{"slurm", run_slurm_launch, slurm_pick, run_slurm_status, run_slurm_ps, slurm_manage};

}  // namespace

const BackendTable& backend_table(Backend backend) { return backend == Backend::slurm ? kSlurm : kLocal; }

}  // namespace gpurun
