#pragma once
// What gpurun asks a Slurm cluster (sinfo, squeue), each answer parsed by a pure function so
// that the parsing is tested on recorded output and the asking against a real Slurm.
#include <chrono>
#include <string>
#include <vector>

namespace gpurun {

// "0,2-3" -> {0, 2, 3}, as Slurm writes index lists (SLURM_STEP_GPUS, IDX:...); empty when the
// text is not such a list (UUIDs, say).
std::vector<int> parse_index_ranges(const std::string& text);

// The GPUs in a GRES string: "gpu:4", "gpu:a100:2(S:0-1)", "gpu:2(IDX:0-1),shard:8" -> 4, 2, 2.
int gres_gpu_count(const std::string& gres);

struct SlurmPartition {
  std::string name;
  bool is_default = false;
  int cpus_per_node = 0;
  int gpus_per_node = 0;       // of its smallest GPU node: the CPU share must fit any of them
  int most_gpus_per_node = 0;  // of its largest: the most GPUs one job of gpurun's can ask for
};

// `sinfo -h -o %P|%c|%G`: one line per partition and node configuration. A partition with nodes
// of different sizes keeps its smallest GPU node (the fair share must fit any of them).
std::vector<SlurmPartition> parse_partitions(const std::string& sinfo_out);

// The partition a job goes to: `name`, or the default one; Error naming the choices otherwise.
SlurmPartition choose_partition(const std::vector<SlurmPartition>& partitions, const std::string& name);

struct SlurmNode {
  std::string name, partition, state;
  int cpus_allocated = 0, cpus_total = 0;
  int gpus_total = 0, gpus_allocated = 0;
};

// `sinfo -h -N -O NodeHost:|,Partition:|,StateLong:|,CPUsState:|,Gres:|,GresUsed:|`.
std::vector<SlurmNode> parse_nodes(const std::string& sinfo_out);

struct SlurmJobInfo {
  std::string id, user, name, state, time_used, time_limit, gres, nodes, reason;
  int gpus = 0;
};

// `squeue -h -O JobID:|,UserName:|,State:|,TimeUsed:|,TimeLimit:|,tres-per-node:|,tres-per-job:|,
// tres-per-task:|,NumTasks:|,NodeList:|,Reason:|,Name:|`: the jobs that ask for GPUs, per node,
// per job (--gpus) or per task (the name last: it may hold a |). `gres` is the request counted.
std::vector<SlurmJobInfo> parse_jobs(const std::string& squeue_out);

// The queries themselves (run with gpurun/util/process.hpp; Error when Slurm does not answer).
std::vector<SlurmPartition> query_partitions(std::chrono::milliseconds timeout);
std::vector<SlurmNode> query_nodes(std::chrono::milliseconds timeout);
std::vector<SlurmJobInfo> query_jobs(std::chrono::milliseconds timeout);

}  // namespace gpurun
