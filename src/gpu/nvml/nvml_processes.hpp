#pragma once
// Reads a device's compute processes through whichever of nvmlDeviceGetComputeRunningProcesses
// _v3/_v2/v1 the library has, minding the traps: the list may grow between the sizing call and
// the reading one (INSUFFICIENT_SIZE: grow and retry), and some drivers' _v3 wrote 32-byte
// records where nvml.h declares 24.
#include <optional>
#include <vector>

#include "nvml/nvml_library.hpp"

namespace gpurun {

struct NvmlProcess {
  long pid = 0;
  std::optional<double> used_memory_mib;  // missing: NVML_VALUE_NOT_AVAILABLE (no permission, WDDM)
};

// Fills `out` and returns NVML_SUCCESS, or returns the call's error.
nvml::Return read_nvml_processes(const NvmlLibrary& library, nvml::Device device, std::vector<NvmlProcess>& out);

// Bytes to whole MiB, rounded as nvidia-smi shows them.
double nvml_mib(unsigned long long bytes);

}  // namespace gpurun
