#include "nvml/nvml_source.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include "gpurun/util/error.hpp"
#include "nvml/nvml_processes.hpp"

namespace gpurun {
namespace {

// One GPU could not be read as a whole (no permission, lost): it is left out, with `why`.
struct GpuLeftOut {
  std::string why;
};

class DeviceReader {
 public:
  DeviceReader(const NvmlLibrary& library, int index) : library_(library), index_(index) {}

  // Errors that make this GPU unreadable leave it out; anything else is just a missing value.
  bool ok(nvml::Return status, std::string_view what) const {
    if (status == nvml::kSuccess) return true;
    if (status == nvml::kGpuIsLost || status == nvml::kResetRequired)
      throw GpuLeftOut{fmt::format("GPU {} is unusable: NVML says {} reading its {}; left out. {}", index_,
                                   library_.describe(status), what, nvml_hint(status))};
    if (status == nvml::kNoPermission)
      throw GpuLeftOut{fmt::format("GPU {}: NVML says {} reading its {}; left out (this user may not open it)", index_,
                                   library_.describe(status), what)};
    if (status == nvml::kDriverNotLoaded || status == nvml::kLibRmVersionMismatch || status == nvml::kUninitialized)
      throw Error(fmt::format("NVML ({}) failed reading GPU {}'s {}: {}. {}", library_.path(), index_, what,
                              library_.describe(status), nvml_hint(status)));
    return false;
  }

  std::string text(nvml::DeviceGetStringFn call, nvml::Device device, std::string_view what, bool needed) const {
    char buffer[nvml::kDeviceNameBufferSize] = {};
    const nvml::Return status = call(device, buffer, sizeof buffer);
    if (ok(status, what)) return std::string(buffer, strnlen(buffer, sizeof buffer));
    if (needed)
      throw GpuLeftOut{
          fmt::format("GPU {}: NVML says {} reading its {}; left out", index_, library_.describe(status), what)};
    return {};
  }

  // Power draw (W) and GPU temperature (C), each missing where the library or the GPU does not tell.
  void sensors(nvml::Device device, std::optional<double>& power_w, std::optional<double>& temperature_c) const {
    unsigned value = 0;
    if (library_.device_get_power_usage != nullptr && ok(library_.device_get_power_usage(device, &value), "power"))
      power_w = value / 1000.0;
    if (library_.device_get_temperature != nullptr &&
        ok(library_.device_get_temperature(device, nvml::kTemperatureGpu, &value), "temperature"))
      temperature_c = value;
  }

  // Memory used and total, in MiB; v2 when the library has it ("used" without the driver's reserve).
  void memory(nvml::Device device, std::optional<double>& used, std::optional<double>& total) const {
    if (library_.device_get_memory_info_v2 != nullptr) {
      nvml::Memory_v2 info{};
      info.version = nvml::kMemory_v2Version;
      const nvml::Return status = library_.device_get_memory_info_v2(device, &info);
      if (ok(status, "memory")) {
        used = nvml_mib(info.used);
        total = nvml_mib(info.total);
        return;
      }
      // A library that refuses the struct version (driver 580 answers FUNCTION_NOT_FOUND): v1.
      if (status != nvml::kFunctionNotFound && status != nvml::kNotSupported &&
          status != nvml::kArgumentVersionMismatch)
        return;
    }
    nvml::Memory info{};
    if (ok(library_.device_get_memory_info(device, &info), "memory")) {
      used = nvml_mib(info.used);
      total = nvml_mib(info.total);
    }
  }

  std::vector<GpuProcess> processes(nvml::Device device, const std::string& uuid) const {
    std::vector<NvmlProcess> found;
    const nvml::Return status = read_nvml_processes(library_, device, found);
    // Without the list gpurun could hand out a busy GPU: a GPU whose processes are unknown is left out.
    if (!ok(status, "processes"))
      throw GpuLeftOut{
          fmt::format("GPU {}: NVML says {} listing its processes; left out", index_, library_.describe(status))};
    std::vector<GpuProcess> processes;
    processes.reserve(found.size());
    for (const NvmlProcess& process : found)
      processes.push_back(
          {.gpu_uuid = uuid, .pid = process.pid, .used_memory_mib = process.used_memory_mib, .user = {}});
    return processes;
  }

  bool mig_enabled(nvml::Device device) const {
    if (library_.device_get_mig_mode == nullptr) return false;
    unsigned current = 0;
    unsigned pending = 0;
    return ok(library_.device_get_mig_mode(device, &current, &pending), "MIG mode") && current == nvml::kMigEnabled;
  }

  // `partial` is set where some instance could not be read (its holders unknown, not gone).
  std::vector<MigInstance> mig_instances(nvml::Device device, std::vector<std::string>& warnings, bool& partial) const;

 private:
  std::string profile(nvml::Device mig, const std::string& name) const;

  const NvmlLibrary& library_;
  int index_;
};

// "NVIDIA A100-SXM4-40GB MIG 3g.20gb" -> "3g.20gb"; else from the slice counts and memory.
std::string DeviceReader::profile(nvml::Device mig, const std::string& name) const {
  const auto mark = name.rfind("MIG ");
  if (mark != std::string::npos && mark + 4 < name.size()) return name.substr(mark + 4);
  nvml::DeviceAttributes attributes{};
  if (library_.device_get_attributes == nullptr ||
      !ok(library_.device_get_attributes(mig, &attributes), "MIG attributes"))
    return {};
  // Profiles name memory in whole GB rounded up: 4864 MiB is 1g.5gb, 9984 MiB is 1g.10gb.
  const auto gb = static_cast<unsigned long long>(std::ceil(static_cast<double>(attributes.memorySizeMB) / 1024.0));
  std::string gpu_part = fmt::format("{}g.{}gb", attributes.gpuInstanceSliceCount, gb);
  if (attributes.computeInstanceSliceCount != 0 &&
      attributes.computeInstanceSliceCount < attributes.gpuInstanceSliceCount)
    return fmt::format("{}c.{}", attributes.computeInstanceSliceCount, gpu_part);
  return gpu_part;
}

std::vector<MigInstance> DeviceReader::mig_instances(nvml::Device device, std::vector<std::string>& warnings,
                                                     bool& partial) const {
  std::vector<MigInstance> instances;
  partial = true;  // until the slots are listed
  if (library_.device_get_max_mig_device_count == nullptr ||
      library_.device_get_mig_device_handle_by_index == nullptr) {
    warnings.push_back(fmt::format("GPU {} has MIG enabled, but the NVML library cannot list MIG devices", index_));
    return instances;
  }
  unsigned slots = 0;
  if (!ok(library_.device_get_max_mig_device_count(device, &slots), "MIG device count")) return instances;
  partial = false;
  for (unsigned slot = 0; slot < slots; ++slot) {
    nvml::Device mig = nullptr;
    const nvml::Return status = library_.device_get_mig_device_handle_by_index(device, slot, &mig);
    if (status == nvml::kNotFound || status == nvml::kInvalidArgument) continue;  // an empty slot
    if (!ok(status, "MIG devices")) {
      warnings.push_back(fmt::format("GPU {}: MIG device {}: {}", index_, slot, library_.describe(status)));
      partial = true;
      continue;
    }
    try {
      MigInstance instance;
      instance.gpu_index = index_;
      instance.device_index = static_cast<int>(slot);
      instance.uuid = text(library_.device_get_uuid, mig, "MIG device UUID", true);
      unsigned id = 0;
      if (library_.device_get_gpu_instance_id != nullptr &&
          ok(library_.device_get_gpu_instance_id(mig, &id), "GPU instance id"))
        instance.gpu_instance_id = static_cast<int>(id);
      if (library_.device_get_compute_instance_id != nullptr &&
          ok(library_.device_get_compute_instance_id(mig, &id), "compute instance id"))
        instance.compute_instance_id = static_cast<int>(id);
      instance.profile = profile(mig, text(library_.device_get_name, mig, "MIG device name", false));
      memory(mig, instance.memory_used_mib, instance.memory_total_mib);
      instance.processes = processes(mig, instance.uuid);
      instances.push_back(std::move(instance));
    } catch (const GpuLeftOut& left_out) {
      warnings.push_back(fmt::format("MIG device {} of {}", slot, left_out.why));
      partial = true;
    }
  }
  return instances;
}

}  // namespace

NvmlSource::NvmlSource(std::string library_path, bool sensors)
    : library_path_(std::move(library_path)), sensors_(sensors) {}

NvmlSource::NvmlSource(std::unique_ptr<NvmlLibrary> loaded, bool sensors)
    : library_path_(loaded->path()), library_(std::move(loaded)), sensors_(sensors) {}

NvmlLibrary& NvmlSource::library() {
  if (!library_) library_ = std::make_unique<NvmlLibrary>(library_path_);
  return *library_;
}

Snapshot NvmlSource::read(std::chrono::milliseconds /*timeout*/) {
  const NvmlLibrary& nvml = library();
  Snapshot snapshot;
  snapshot.source = name();
  unsigned count = 0;
  const nvml::Return status = nvml.device_get_count(&count);
  if (status != nvml::kSuccess)
    throw Error(
        fmt::format("NVML ({}) cannot count the GPUs: {}. {}", nvml.path(), nvml.describe(status), nvml_hint(status)));
  if (count == 0) throw Error(fmt::format("NVML ({}) found no GPUs", nvml.path()));

  for (unsigned index = 0; index < count; ++index) {
    DeviceReader reader(nvml, static_cast<int>(index));
    try {
      nvml::Device device = nullptr;
      if (!reader.ok(nvml.device_get_handle_by_index(index, &device), "handle"))
        throw GpuLeftOut{fmt::format("GPU {}: NVML gives no handle for it; left out", index)};
      Gpu gpu;
      gpu.index = static_cast<int>(index);
      gpu.uuid = reader.text(nvml.device_get_uuid, device, "UUID", true);
      gpu.name = reader.text(nvml.device_get_name, device, "name", false);
      reader.memory(device, gpu.memory_used_mib, gpu.memory_total_mib);
      nvml::Utilization utilization{};
      if (reader.ok(nvml.device_get_utilization_rates(device, &utilization), "utilization"))
        gpu.utilization_percent = utilization.gpu;  // NOT_SUPPORTED on MIG GPUs: missing
      if (sensors_) reader.sensors(device, gpu.power_draw_w, gpu.temperature_c);
      gpu.mig_enabled = reader.mig_enabled(device);
      nvml::PciInfo pci{};  // the bus id places the GPU on the host (gpurun/gpu/topology.hpp)
      if (reader.ok(nvml.device_get_pci_info(device, &pci), "PCI bus id"))
        gpu.pci_bus_id = std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId));
      if (gpu.mig_enabled) {
        // The parent's own list needs privileges in MIG mode; its instances' lists do not.
        bool partial = false;
        std::vector<MigInstance> instances = reader.mig_instances(device, snapshot.warnings, partial);
        if (partial) snapshot.partly_read.push_back(gpu.index);
        for (MigInstance& instance : instances) {
          for (const GpuProcess& process : instance.processes)
            gpu.processes.push_back(
                {.gpu_uuid = gpu.uuid, .pid = process.pid, .used_memory_mib = process.used_memory_mib, .user = {}});
          snapshot.mig_instances.push_back(std::move(instance));
        }
      } else {
        gpu.processes = reader.processes(device, gpu.uuid);
      }
      snapshot.gpus.push_back(std::move(gpu));
    } catch (const GpuLeftOut& left_out) {
      snapshot.warnings.push_back(left_out.why);
    }
  }
  if (snapshot.gpus.empty())
    throw Error(fmt::format("NVML ({}) found no usable GPU: {}", nvml.path(), fmt::join(snapshot.warnings, "; ")));
  return snapshot;
}

std::unique_ptr<GpuSource> make_nvml_source(std::string library_path, bool sensors) {
  return std::make_unique<NvmlSource>(std::move(library_path), sensors);
}

NvmlProbe probe_nvml_source(const std::string& library_path, bool sensors) {
  NvmlProbe probe;
  try {
    probe.source = std::make_unique<NvmlSource>(std::make_unique<NvmlLibrary>(library_path), sensors);
  } catch (const Error& e) {
    probe.failure = e.what();
  }
  return probe;
}

}  // namespace gpurun
