#pragma once
// libnvidia-ml, dlopen'ed on demand (never linked: gpurun starts without it) and initialised.
// Required symbols must be there; the rest are looked up and left null when missing.
#include <string>

#include "nvml/nvml_api.hpp"

namespace gpurun {

inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";

class NvmlLibrary {
 public:
  // Loads `path` ("" for libnvidia-ml.so.1 on the loader's path) and calls nvmlInit_v2. Throws
  // Error (exit 125) saying what to do when it cannot be loaded, lacks a required symbol, or
  // NVML does not initialise (driver not loaded, driver/library version mismatch, ...).
  explicit NvmlLibrary(const std::string& path);
  ~NvmlLibrary();  // nvmlShutdown, dlclose
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& path() const { return path_; }
  // nvmlErrorString's words for `code`, with the code itself.
  std::string describe(nvml::Return code) const;

  // Required.
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DeviceGetCountFn device_get_count = nullptr;
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nvml::DeviceGetStringFn device_get_uuid = nullptr;
  nvml::DeviceGetStringFn device_get_name = nullptr;
  nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  nvml::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
  nvml::DeviceGetPciInfoFn device_get_pci_info = nullptr;
  // The newest of _v3, _v2 and v1 that the library has, and the version it is (3, 2 or 1).
  nvml::DeviceGetComputeRunningProcessesFn device_get_compute_running_processes = nullptr;
  int compute_processes_version = 0;

  // Optional: null when the library lacks them.
  nvml::DeviceGetMemoryInfo_v2Fn device_get_memory_info_v2 = nullptr;
  nvml::DeviceGetMigModeFn device_get_mig_mode = nullptr;
  nvml::DeviceGetMaxMigDeviceCountFn device_get_max_mig_device_count = nullptr;
  nvml::DeviceGetMigDeviceHandleByIndexFn device_get_mig_device_handle_by_index = nullptr;
  nvml::DeviceGetInstanceIdFn device_get_gpu_instance_id = nullptr;
  nvml::DeviceGetInstanceIdFn device_get_compute_instance_id = nullptr;
  nvml::DeviceGetDeviceHandleFromMigDeviceHandleFn device_get_device_handle_from_mig_device_handle = nullptr;
  nvml::DeviceGetAttributesFn device_get_attributes = nullptr;
  nvml::DeviceGetSamplesFn device_get_samples = nullptr;
  nvml::DeviceGetNumaNodeIdFn device_get_numa_node_id = nullptr;
  nvml::DeviceGetTopologyCommonAncestorFn device_get_topology_common_ancestor = nullptr;
  nvml::DeviceGetPowerUsageFn device_get_power_usage = nullptr;
  nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;

 private:
  void* symbol(const char* name) const;    // null when missing
  void* required(const char* name) const;  // throws when missing

  std::string path_;
  void* handle_ = nullptr;
  nvml::ShutdownFn shutdown_ = nullptr;
  bool initialised_ = false;
};

// The message and hint for an NVML failure that ends gpurun (init, device count): what to do.
std::string nvml_hint(nvml::Return code);

}  // namespace gpurun
