#pragma once
// Where GPUs sit on the host: each GPU's NUMA node, local CPUs and socket from sysfs (found by its
// PCI bus id), and the links between GPUs from `nvidia-smi topo -m`. Tests point the sysfs
// reads at a tree of their own with GPURUN_SYSFS_ROOT.
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/gpu/gpu.hpp"
#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/util/process.hpp"

namespace gpurun {

// The directory sysfs paths are read under: $GPURUN_SYSFS_ROOT, or "/".
std::string sysfs_root();

// Whether `root`/sys/bus/pci/devices exists: only then is a GPU's bus id worth asking for.
bool pci_sysfs_readable(const std::string& root);

// A PCI bus id as sysfs names its directory: nvidia-smi's "00000000:07:00.0" (and NVML's, and a
// bare "07:00.0") become "0000:07:00.0"; "" when it is not a bus id.
std::string sysfs_pci_bus_id(std::string_view bus_id);

// A kernel CPU list ("0-15,128-143") as CPU numbers; nullopt when malformed.
std::optional<std::set<int>> parse_cpulist(std::string_view list);
// CPU numbers as a kernel CPU list, ranges joined: {0,1,2,5} -> "0-2,5".
std::string format_cpulist(const std::set<int>& cpus);

// Fills numa_node, local_cpus and socket of each GPU with a pci_bus_id, from sysfs under `root`.
// What sysfs does not say stays unknown (numa_node -1, as single-node hosts report, is unknown).
void locate_gpus(std::vector<Gpu>& gpus, const std::string& root);

// The minor number of the GPU's device node (/dev/nvidiaN), as the driver gives it in
// /proc/driver/nvidia/gpus/BUS/information ("Device Minor: N") under `root`; nullopt where it does
// not say (no bus id, another driver, a tree without it). Usually the index, but not always.
std::optional<int> nvidia_device_minor(const Gpu& gpu, const std::string& root);

// The capability minors that reach one MIG instance (/dev/nvidia-caps/nvidia-capN): its GPU
// instance's and its compute instance's, as the driver lists them in
// /proc/driver/nvidia-caps/mig-minors under `root` ("gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13",
// gpuN by the GPU's minor number); nullopt where it does not say.
struct MigCapMinors {
  int gpu_instance = 0;
  int compute_instance = 0;
};
std::optional<MigCapMinors> mig_cap_minors(int gpu_minor, int gpu_instance_id, int compute_instance_id,
                                           const std::string& root);

// The links between GPUs in `nvidia-smi topo -m` output: one per pair (a < b), by GPU index.
// NIC columns, the CPU/NUMA affinity columns, the legend and terminal escapes are ignored.
std::vector<GpuLink> parse_topo_matrix(std::string_view output);

// How good a link is, higher better: NV<n> (n bonded NVLinks) above PIX > PXB > PHB > NODE >
// SYS/SOC; 0 for anything else.
int link_rank(std::string_view kind);

// `nvidia-smi topo -m`.
ProcessSpec topo_query(const std::string& nvidia_smi);

// Runs `nvidia-smi topo -m` and parses it; empty (with a debug message) when it fails: the
// links only order sets that are equal otherwise.
std::vector<GpuLink> read_gpu_links(const std::string& nvidia_smi, std::chrono::milliseconds timeout);

}  // namespace gpurun
