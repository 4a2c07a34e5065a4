#pragma once
// slurm_container oci: Slurm's own `srun --container=BUNDLE`. The bundle is made from the image
// with skopeo and umoci into a cache; since Slurm passes neither mounts nor the GPU variables into
// the container, each job gets its own config.json with the working directory, the volumes, the
// user and the device nodes of exactly the GPUs Slurm allocated. Those are known only once the
// job holds them, so the launch is: salloc --no-shell, read the GPUs (scontrol), write the
// bundle, srun --jobid --container, scancel; with -d, the batch script runs gpurun on the node
// to do the same inside its job.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpurun/config/options.hpp"
#include "gpurun/slurm/slurm_command.hpp"

namespace gpurun {

// What a job's config.json says beyond the image's.
struct OciJobSpec {
  std::string workdir;
  unsigned uid = 0, gid = 0;
  std::vector<std::string> volumes;  // docker -v form: SRC:DST[:ro|rw]
  std::vector<int> gpus;             // the allocated GPUs' indices: /dev/nvidiaN, major 195, minor N
  std::vector<std::string> env;      // K=V for the job's process (in the file, not on srun's command line)
};

// The image's config.json (from umoci) made into the job's; Error for a volume it cannot mount.
nlohmann::json oci_job_config(nlohmann::json config, const OciJobSpec& spec);

// The image's directory name in the bundle cache: one name for one reference, and no two
// references one name ("a/my_img" and "a/my/img" were both "a_my_img"): letters, digits, '.'
// and '-' as they are, any other byte as "_XX" (hex), behind "img-" (never "." or ".."); a long
// reference cut, with a 64-bit FNV-1a hash of the whole behind it.
std::string oci_cache_key(const std::string& image);

// The skopeo source of an image: "docker://IMAGE" unless it names a transport (oci:, docker-archive:, ...).
std::string skopeo_source(const std::string& image);

// The GPU indices in `scontrol show job -d` output ("GRES=gpu:2(IDX:0-1)"); empty when none.
std::vector<int> scontrol_gpu_indices(const std::string& out);

// The job id in salloc's "Granted job allocation N"; Error when there is none.
std::string parse_salloc_job_id(const std::string& err);

// Runs the job the OCI way (see above); returns its exit status. With dry_run, prints the steps.
// Inside an allocation (a batch script, an salloc shell) it uses that job instead of allocating.
// With --report the container step is the child of a gpurun step that samples its GPUs.
int run_oci_job(const Options& options, const SlurmJob& job, std::ostream& out);

// -d: the batch job, whose script runs gpurun on the node (`SELF --no-config ... --slurm-container
// oci ... N -- COMMAND`): that gpurun writes the bundle with the GPUs the job holds, then runs the
// container step. Error for a volume the bundle cannot mount, before anything is queued.
SlurmJob oci_batch_job(const Options& options, SlurmJob job, const std::string& self);

}  // namespace gpurun
