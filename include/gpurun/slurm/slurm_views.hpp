#pragma once
// `status` and `ps` with the Slurm backend: the cluster's nodes and GPU jobs, from sinfo and squeue.
#include <iosfwd>

#include "gpurun/config/options.hpp"

namespace gpurun {

// Every node with its partition, state and GPUs total/allocated (a table, or JSON).
int run_slurm_status(const Options& options, std::ostream& out);

// Every job that asks for GPUs, whoever's: id, user, name, state, time, GPUs, node (or JSON).
int run_slurm_ps(const Options& options, std::ostream& out);

}  // namespace gpurun
