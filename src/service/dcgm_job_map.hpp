#pragma once
// DCGM's HPC job mapping (dcgm-exporter --hpc-job-mapping-dir, the service setting
// dcgm_job_mapping_dir): one file per GPU, named by its index, holding the jobs on it one a line;
// an existing dcgm-exporter labels that GPU's metrics hpc_job with them. gpurund writes each held
// GPU's file with its holders' hpc_job names (as its own /metrics labels them) and removes the
// files of GPUs nobody holds.
#include <map>
#include <string>
#include <vector>

#include "gpurun/history/run_tracker.hpp"
#include "gpurun/util/fd.hpp"

namespace gpurun {

class DcgmJobMap {
 public:
  // Opens `dir` (creating it 0755 when missing; a symlink is refused). Throws Error saying why.
  explicit DcgmJobMap(const std::string& dir);

  // Brings the files up to date with one sample: GPUs in `gpus` held by `holders` get a file, the
  // others lose theirs. Only files that change are written, each whole (a rename), so a reader
  // never sees half of one. Throws Error when one cannot be written.
  void update(const std::vector<int>& gpus, const std::vector<HolderSample>& holders);

  // Removes every file it wrote (the service stops: nobody holds anything it can vouch for).
  void clear();

 private:
  void write(int gpu, const std::string& jobs);
  void remove(int gpu);

  std::string dir_;
  Fd dir_fd_;
  std::map<int, std::string> written_;  // each GPU's file as last written; absent: none
  bool first_ = true;                   // the first update removes what an earlier service left
};

}  // namespace gpurun
