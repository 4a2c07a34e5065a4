#pragma once
// One look at the machine's GPUs, whatever answered (nvidia-smi, NVML, a recorded snapshot):
// the GPUs with their processes, and room for what only some sources know (MIG instances,
// topology). Optional values are ones the source could not read: missing, never zero.
#include <optional>
#include <string>
#include <vector>

#include "gpurun/gpu/gpu.hpp"

namespace gpurun {

// A MIG instance (a GPU instance with one compute instance), a unit of its own on a MIG GPU.
struct MigInstance {
  std::string uuid;   // "MIG-..."
  int gpu_index = 0;  // the parent GPU
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  std::string profile;  // "3g.40gb"
  std::optional<double> memory_used_mib;
  std::optional<double> memory_total_mib;
  std::vector<GpuProcess> processes;  // gpu_uuid: the instance's MIG UUID
  // Its slot among its GPU's MIG devices as NVML numbers them (the NVIDIA toolkit's "GPU:N");
  // -1 where the source does not say (then its place among its GPU's instances read).
  int device_index = -1;
};

// How two GPUs are connected, as `nvidia-smi topo -m` names it: "NV12", "SYS", "PIX", ...
struct GpuLink {
  int a = 0;
  int b = 0;
  std::string kind;
};

struct Snapshot {
  std::vector<Gpu> gpus;        // in index order
  bool processes_known = true;  // false: no process list was read (a CSV snapshot)
  std::vector<MigInstance> mig_instances;
  std::vector<GpuLink> links;         // empty: topology unknown
  std::vector<LostGpu> lost;          // GPUs the driver named but could not reach
  std::vector<int> partly_read;       // GPUs some of whose MIG instances could not be read
  std::string source;                 // which source answered: "nvidia-smi", "nvml", "snapshot FILE"
  std::vector<std::string> warnings;  // worth telling the user (a lost GPU, a corrupted infoROM)
};

}  // namespace gpurun
