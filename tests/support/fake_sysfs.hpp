#pragma once
// Fake sysfs trees for placement tests (GPURUN_SYSFS_ROOT points at one): each GPU's
// sys/bus/pci/devices/<bus id>/{numa_node,local_cpulist}, each node's cpulist and each CPU's
// physical_package_id, as the kernel lays them out. The three hosts of issue 14, with NVIDIA's
// published GPU affinity (NVIDIA/gpu_affinity) and the CPU numbering of their processors.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gpurun::test {

struct FakeHost {
  struct Gpu {
    std::string bus_id;  // as nvidia-smi prints it: "00000000:07:00.0"
    int node = -1;       // -1: the kernel knows no node (single-node hosts)
  };
  std::vector<Gpu> gpus;             // by nvidia-smi index
  std::map<int, std::string> nodes;  // NUMA node -> its CPUs ("48-63,176-191")
  std::map<int, int> sockets;        // NUMA node -> physical package
};

// DGX A100: 2 x EPYC 7742 (NPS4, 8 nodes of 16 cores + SMT); GPUs 0,1 -> node 3; 2,3 -> 1;
// 4,5 -> 7; 6,7 -> 5. Nodes 0-3 are socket 0, 4-7 socket 1.
FakeHost dgx_a100();
// DGX H100: 2 x Xeon 8480C (56 cores + SMT each); GPUs 0-3 -> node 0, 4-7 -> node 1.
FakeHost dgx_h100();
// A 2-socket PCIe box (the 5-GPU machine of tests/data/topology/pcie_2socket.txt): GPU 0 on
// node 1 (CPUs 8-15,24-31), GPUs 1-4 on node 0 (CPUs 0-7,16-23).
FakeHost pcie_2socket();
// A single-socket workstation with NVLink bridges (workstation_nv4.txt): numa_node -1 everywhere.
FakeHost workstation_nv4();

// Writes `host` under `root` (created); returns root, for GPURUN_SYSFS_ROOT.
std::string write_fake_sysfs(const std::filesystem::path& root, const FakeHost& host);

}  // namespace gpurun::test
