#include "nvml/nvml_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

template <class Fn>
Fn as(void* address) {
  return reinterpret_cast<Fn>(address);  // POSIX: a dlsym'ed address is the function's
}

}  // namespace

std::string nvml_hint(nvml::Return code) {
  switch (code) {
    case nvml::kDriverNotLoaded:
      return "Is the NVIDIA driver installed and loaded (lsmod | grep nvidia)?";
    case nvml::kLibRmVersionMismatch:
      return "The driver and its library differ in version, usually after a driver upgrade: reboot, or "
             "reload the nvidia kernel modules.";
    case nvml::kNoPermission:
      return "This user may not open the NVIDIA devices (/dev/nvidia*): ask for access, or use "
             "--gpu-source nvidia-smi.";
    case nvml::kGpuIsLost:
    case nvml::kResetRequired:
      return "A GPU fell off the bus or needs a reset: see dmesg, reset it (nvidia-smi -r) or reboot.";
    default:
      return "Try --gpu-source nvidia-smi, or see the driver's logs (dmesg).";
  }
}

NvmlLibrary::NvmlLibrary(const std::string& path) : path_(path.empty() ? kDefaultNvmlLibrary : path) {
  // A path names a file, which must be a regular one: dlopen would wait on a FIFO for ever. (A
  // bare name is searched by the loader in its own places.)
  if (path_.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw Error(
          fmt::format("cannot load the NVML library {}: it is not a regular file; set nvml_library (or "
                      "GPURUN_NVML_LIBRARY) to libnvidia-ml.so.1's path, or use --gpu-source nvidia-smi",
                      text::printable(path_, 200)));
  }
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace; RTLD_NOW: a broken library
  // fails here, not at the first call.
  handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    throw Error(
        fmt::format("cannot load the NVML library {}: {}. It comes with the NVIDIA driver; "
                    "set nvml_library (or GPURUN_NVML_LIBRARY) to its path, or use "
                    "--gpu-source nvidia-smi",
                    path_, why != nullptr ? why : "unknown error"));
  }
  try {
    const auto init = as<nvml::InitFn>(required("nvmlInit_v2"));
    shutdown_ = as<nvml::ShutdownFn>(required("nvmlShutdown"));
    error_string = as<nvml::ErrorStringFn>(required("nvmlErrorString"));
    device_get_count = as<nvml::DeviceGetCountFn>(required("nvmlDeviceGetCount_v2"));
    device_get_handle_by_index = as<nvml::DeviceGetHandleByIndexFn>(required("nvmlDeviceGetHandleByIndex_v2"));
    device_get_uuid = as<nvml::DeviceGetStringFn>(required("nvmlDeviceGetUUID"));
    device_get_name = as<nvml::DeviceGetStringFn>(required("nvmlDeviceGetName"));
    device_get_memory_info = as<nvml::DeviceGetMemoryInfoFn>(required("nvmlDeviceGetMemoryInfo"));
    device_get_utilization_rates = as<nvml::DeviceGetUtilizationRatesFn>(required("nvmlDeviceGetUtilizationRates"));
    device_get_pci_info = as<nvml::DeviceGetPciInfoFn>(required("nvmlDeviceGetPciInfo_v3"));

    const std::pair<const char*, int> process_calls[] = {{"nvmlDeviceGetComputeRunningProcesses_v3", 3},
                                                         {"nvmlDeviceGetComputeRunningProcesses_v2", 2},
                                                         {"nvmlDeviceGetComputeRunningProcesses", 1}};
    for (const auto& [name, version] : process_calls) {
      if (void* address = symbol(name)) {
        device_get_compute_running_processes = as<nvml::DeviceGetComputeRunningProcessesFn>(address);
        compute_processes_version = version;
        break;
      }
    }
    if (device_get_compute_running_processes == nullptr)
      throw Error(
          fmt::format("the NVML library {} has no nvmlDeviceGetComputeRunningProcesses (_v3, _v2 or v1): "
                      "it is not a driver's libnvidia-ml; use --gpu-source nvidia-smi",
                      path_));

    device_get_memory_info_v2 = as<nvml::DeviceGetMemoryInfo_v2Fn>(symbol("nvmlDeviceGetMemoryInfo_v2"));
    device_get_mig_mode = as<nvml::DeviceGetMigModeFn>(symbol("nvmlDeviceGetMigMode"));
    device_get_max_mig_device_count = as<nvml::DeviceGetMaxMigDeviceCountFn>(symbol("nvmlDeviceGetMaxMigDeviceCount"));
    device_get_mig_device_handle_by_index =
        as<nvml::DeviceGetMigDeviceHandleByIndexFn>(symbol("nvmlDeviceGetMigDeviceHandleByIndex"));
    device_get_gpu_instance_id = as<nvml::DeviceGetInstanceIdFn>(symbol("nvmlDeviceGetGpuInstanceId"));
    device_get_compute_instance_id = as<nvml::DeviceGetInstanceIdFn>(symbol("nvmlDeviceGetComputeInstanceId"));
    device_get_device_handle_from_mig_device_handle =
        as<nvml::DeviceGetDeviceHandleFromMigDeviceHandleFn>(symbol("nvmlDeviceGetDeviceHandleFromMigDeviceHandle"));
    device_get_attributes = as<nvml::DeviceGetAttributesFn>(symbol("nvmlDeviceGetAttributes_v2"));
    device_get_samples = as<nvml::DeviceGetSamplesFn>(symbol("nvmlDeviceGetSamples"));
    device_get_numa_node_id = as<nvml::DeviceGetNumaNodeIdFn>(symbol("nvmlDeviceGetNumaNodeId"));
    device_get_topology_common_ancestor =
        as<nvml::DeviceGetTopologyCommonAncestorFn>(symbol("nvmlDeviceGetTopologyCommonAncestor"));
    device_get_power_usage = as<nvml::DeviceGetPowerUsageFn>(symbol("nvmlDeviceGetPowerUsage"));
    device_get_temperature = as<nvml::DeviceGetTemperatureFn>(symbol("nvmlDeviceGetTemperature"));

    const nvml::Return status = init();
    if (status != nvml::kSuccess)
      throw Error(fmt::format("NVML ({}) did not initialise: {}. {}", path_, describe(status), nvml_hint(status)));
    initialised_ = true;
  } catch (...) {
    dlclose(handle_);
    throw;
  }
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_) shutdown_();
  dlclose(handle_);
}

std::string NvmlLibrary::describe(nvml::Return code) const {
  const char* words = error_string != nullptr ? error_string(code) : nullptr;
  return fmt::format("{} (NVML error {})", words != nullptr ? words : "unknown error", code);
}

void* NvmlLibrary::symbol(const char* name) const { return dlsym(handle_, name); }

void* NvmlLibrary::required(const char* name) const {
  void* address = symbol(name);
  if (address == nullptr)
    throw Error(
        fmt::format("the NVML library {} lacks {}: the driver is too old for gpurun's NVML source; "
                    "use --gpu-source nvidia-smi",
                    path_, name));
  return address;
}

}  // namespace gpurun
