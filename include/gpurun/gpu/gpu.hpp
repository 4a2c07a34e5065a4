#pragma once
// What gpurun knows about one GPU, as read from nvidia-smi. Optional values are ones the driver
// reported as unavailable ([N/A], [Not Supported], ...): they are missing, never zero.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpurun {

struct GpuProcess {
  std::string gpu_uuid;
  long pid = 0;
  std::optional<double> used_memory_mib;
  std::string user;  // its owner's login name, where this host's /proc shows it; empty elsewhere
};

// Where a MIG instance handed out as a unit of its own lives (--mig).
struct MigPlace {
  int gpu_index = 0;  // the parent GPU
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  std::string profile;  // "1g.10gb"
  // How a container may name it besides its MIG UUID: "GPU:N", N its place among its GPU's MIG
  // devices as the NVIDIA toolkit counts them; or by its parent (index, UUID, /dev/nvidiaN).
  int device_index = 0;
  std::string parent_uuid;
};

struct Gpu {
  int index = 0;
  std::string uuid;
  std::string name;
  std::optional<double> memory_used_mib;
  std::optional<double> memory_total_mib;
  std::optional<double> utilization_percent;
  // Read only when the source is asked for sensors (gpurund's metrics): missing elsewhere.
  std::optional<double> power_draw_w;
  std::optional<double> temperature_c;
  bool mig_enabled = false;
  std::vector<GpuProcess> processes;
  std::optional<MigPlace> mig;  // set: a MIG instance as a unit (index: its place among the units)
  // Where it sits on the host (gpurun/gpu/topology.hpp): empty where the source or sysfs does not say.
  std::string pci_bus_id;        // as the source printed it: "00000000:07:00.0"
  std::optional<int> numa_node;  // sysfs numa_node; none on single-node hosts (-1 there)
  std::string local_cpus;        // sysfs local_cpulist: "48-63,176-191"
  std::optional<int> socket;     // physical package of its local CPUs
};

// A GPU the driver could not reach, named only by its PCI bus id, as nvidia-smi reports it between
// the rows: "Unable to determine the device handle for GPU0000:34:00.0: Unknown Error".
struct LostGpu {
  std::string pci_bus_id;  // "0000:34:00.0"
  std::string error;       // "Unknown Error"
};

// Someone holding a GPU that the driver cannot show: a gpurun reservation or a container.
struct Holder {
  enum class Kind { reservation, container };
  Kind kind = Kind::container;
  std::string user;  // login name; empty when unknown
  std::string name;  // the container's name, or the reserving process's command
};

// A reason a GPU is busy that the driver cannot show, and who holds it where that is known.
struct Claim {
  std::string reason;
  std::optional<Holder> holder;
};

// The claims on GPUs (reservations, containers, the site policy), by GPU index.
using ExternalClaims = std::map<int, std::vector<Claim>>;

}  // namespace gpurun
