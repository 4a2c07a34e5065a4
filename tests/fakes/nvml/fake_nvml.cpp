// Stand-in libnvidia-ml.so for gpurun's tests: answers NVML calls from the scenario JSON named in
// $FAKE_NVML_SCENARIO (read by nvmlInit_v2). Built in three variants (tests/CMakeLists.txt):
//   FAKE_NVML_VARIANT 0: full            (_v3/_v2/v1 processes, MemoryInfo_v2, MIG calls)
//   FAKE_NVML_VARIANT 1: no _v3          (as full, without nvmlDeviceGetComputeRunningProcesses_v3)
//   FAKE_NVML_VARIANT 2: required only   (the symbols gpurun requires, processes through v1)
// Only the exported functions are visible (-fvisibility=hidden).
//
// Scenario (memory in MiB; every key optional):
//   {"init_error": "DRIVER_NOT_LOADED",            nvmlInit_v2 fails with it
//    "v3_record_bytes": 32,                        _v3 writes 32-byte records (early R535), else 24
//    "gpus": [{"uuid": "GPU-...", "name": "...", "pci_bus_id": "00000000:07:00.0",
//              "memory_total": 81920, "memory_used": 4, "memory_reserved": 0,
//                  (nvmlDeviceGetMemoryInfo, v1, reports used + reserved; _v2 reports used)
//              "utilization": 0,                    null: NOT_SUPPORTED
//              "power_w": 97.74, "temperature_c": 39,  absent: NOT_SUPPORTED
//              "mig_mode": 1,                       absent: NOT_SUPPORTED
//              "processes": [{"pid": 1, "used_memory": 10, (null: NVML_VALUE_NOT_AVAILABLE)}],
//              "handle_error": "NO_PERMISSION",     nvmlDeviceGetHandleByIndex_v2 fails with it
//              "errors": {"nvmlDeviceGetMemoryInfo": "GPU_IS_LOST"},   one call fails with it
//              "insufficient_size_calls": 2,        the first N process calls answer INSUFFICIENT_SIZE
//                                                   even with room (processes started meanwhile)
//              "samples": [30, 50],                 nvmlDeviceGetSamples: each call gives the next
//                                                   value, stamped now (none: NOT_FOUND, no samples)
//              "max_mig_devices": 7,
//              "mig_devices": [{"slot": 0, "uuid": "MIG-...", "name": "... MIG 3g.40gb",
//                               "gpu_instance_id": 1, "compute_instance_id": 0,
//                               "gi_slices": 3, "ci_slices": 3, (nvmlDeviceGetAttributes_v2)
//                               "memory_total": 40192, "memory_used": 0, "processes": [...],
//                               "errors": {...}}]}]}
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#ifndef FAKE_NVML_VARIANT
#define FAKE_NVML_VARIANT 0
#endif
#define FAKE_NVML_HAS_OPTIONAL (FAKE_NVML_VARIANT != 2)
#define FAKE_NVML_HAS_V3 (FAKE_NVML_VARIANT == 0)
#define FAKE_NVML_HAS_V2 (FAKE_NVML_VARIANT != 2)
#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Return = int;
constexpr unsigned kNoInstance = 0xFFFFFFFFU;
constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

const std::map<std::string, Return> kCodes{
    {"SUCCESS", 0},       {"UNINITIALIZED", 1},   {"INVALID_ARGUMENT", 2},         {"NOT_SUPPORTED", 3},
    {"NO_PERMISSION", 4}, {"NOT_FOUND", 6},       {"INSUFFICIENT_SIZE", 7},        {"DRIVER_NOT_LOADED", 9},
    {"GPU_IS_LOST", 15},  {"RESET_REQUIRED", 16}, {"LIB_RM_VERSION_MISMATCH", 18}, {"ARGUMENT_VERSION_MISMATCH", 25},
    {"UNKNOWN", 999}};

struct Process {
  unsigned pid = 0;
  unsigned long long used = 0;  // bytes, or ~0 for "not available"
};

struct Device {
  std::string uuid, name, bus_id;
  unsigned long long total = 0, used = 0, reserved = 0;  // bytes
  std::optional<unsigned> utilization;
  std::optional<double> power_w;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> mig_mode;
  std::vector<Process> processes;
  std::map<std::string, Return> errors;
  Return handle_error = 0;
  int insufficient_size_calls = 0;
  unsigned gpu_instance_id = kNoInstance, compute_instance_id = kNoInstance, gi_slices = 0, ci_slices = 0;
  Device* parent = nullptr;
  unsigned max_mig_devices = 0;
  std::vector<unsigned> samples;  // utilization samples, handed out one per call, in a cycle
  std::size_t next_sample = 0;
  std::map<unsigned, std::unique_ptr<Device>> mig_devices;  // by slot

  Return error(const char* call) const {
    const auto found = errors.find(call);
    return found == errors.end() ? 0 : found->second;
  }
};

struct State {
  int references = 0;
  unsigned v3_record_bytes = 24;
  std::vector<std::unique_ptr<Device>> gpus;
} state;

Return code(const nlohmann::json& name) {
  const auto found = kCodes.find(name.get<std::string>());
  if (found == kCodes.end()) {
    std::fprintf(stderr, "fake NVML: unknown error name %s\n", name.dump().c_str());
    return 999;
  }
  return found->second;
}

unsigned long long mib(const nlohmann::json& value) {
  return static_cast<unsigned long long>(value.get<double>() * static_cast<double>(kMiB));
}

void read_common(Device& device, const nlohmann::json& in) {
  device.uuid = in.value("uuid", "");
  device.name = in.value("name", "");
  device.total = mib(in.value("memory_total", nlohmann::json(0)));
  device.used = mib(in.value("memory_used", nlohmann::json(0)));
  device.reserved = mib(in.value("memory_reserved", nlohmann::json(0)));
  for (const auto& p : in.value("processes", nlohmann::json::array())) {
    const auto& used = p.at("used_memory");
    device.processes.push_back({p.at("pid").get<unsigned>(), used.is_null() ? ~0ULL : mib(used)});
  }
  const nlohmann::json errors = in.value("errors", nlohmann::json::object());
  for (const auto& [call, name] : errors.items()) device.errors[call] = code(name);
}

std::unique_ptr<Device> read_gpu(const nlohmann::json& in) {
  auto gpu = std::make_unique<Device>();
  read_common(*gpu, in);
  gpu->bus_id = in.value("pci_bus_id", "00000000:00:00.0");
  if (in.contains("utilization") && !in.at("utilization").is_null())
    gpu->utilization = in.at("utilization").get<unsigned>();
  if (in.contains("power_w")) gpu->power_w = in.at("power_w").get<double>();
  if (in.contains("temperature_c")) gpu->temperature_c = in.at("temperature_c").get<unsigned>();
  if (in.contains("mig_mode")) gpu->mig_mode = in.at("mig_mode").get<unsigned>();
  if (in.contains("handle_error")) gpu->handle_error = code(in.at("handle_error"));
  gpu->insufficient_size_calls = in.value("insufficient_size_calls", 0);
  gpu->max_mig_devices = in.value("max_mig_devices", 0U);
  gpu->samples = in.value("samples", std::vector<unsigned>{});
  for (const auto& m : in.value("mig_devices", nlohmann::json::array())) {
    auto mig = std::make_unique<Device>();
    read_common(*mig, m);
    mig->gpu_instance_id = m.at("gpu_instance_id").get<unsigned>();
    mig->compute_instance_id = m.at("compute_instance_id").get<unsigned>();
    mig->gi_slices = m.value("gi_slices", 0U);
    mig->ci_slices = m.value("ci_slices", mig->gi_slices);
    mig->parent = gpu.get();
    gpu->mig_devices[m.at("slot").get<unsigned>()] = std::move(mig);
  }
  return gpu;
}

Return load_scenario() {
  const char* path = std::getenv("FAKE_NVML_SCENARIO");
  if (path == nullptr) {
    std::fprintf(stderr, "fake NVML: FAKE_NVML_SCENARIO is not set\n");
    return 999;
  }
  try {
    std::ifstream file(path);
    const nlohmann::json scenario = nlohmann::json::parse(file);
    if (scenario.contains("init_error")) return code(scenario.at("init_error"));
    state.v3_record_bytes = scenario.value("v3_record_bytes", 24U);
    state.gpus.clear();
    for (const auto& gpu : scenario.value("gpus", nlohmann::json::array())) state.gpus.push_back(read_gpu(gpu));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake NVML: bad scenario %s: %s\n", path, e.what());
    return 999;
  }
  return 0;
}

Device* as_device(void* handle) { return static_cast<Device*>(handle); }

// The checks every device call starts with.
#define FAKE_NVML_DEVICE_CALL(handle, call) \
  if (state.references == 0) return 1;      \
  if ((handle) == nullptr) return 2;        \
  if (Return e = as_device(handle)->error(call)) return e

Return copy_text(const std::string& text, char* buffer, unsigned length) {
  if (buffer == nullptr) return 2;
  if (text.size() + 1 > length) return 7;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return 0;
}

// The processes a call on `device` lists: a MIG GPU's are those of its instances.
std::vector<std::pair<Process, const Device*>> processes_of(const Device* device) {
  std::vector<std::pair<Process, const Device*>> out;
  if (device->mig_mode.value_or(0) == 1 && device->parent == nullptr) {
    for (const auto& [slot, mig] : device->mig_devices)
      for (const Process& p : mig->processes) out.emplace_back(p, mig.get());
  } else {
    for (const Process& p : device->processes) out.emplace_back(p, device);
  }
  return out;
}

Return running_processes(void* handle, unsigned* count, void* infos, unsigned record_bytes, const char* call) {
  FAKE_NVML_DEVICE_CALL(handle, call);
  if (count == nullptr) return 2;
  Device* device = as_device(handle);
  const auto processes = processes_of(device);
  const auto n = static_cast<unsigned>(processes.size());
  if (*count < n || (n > 0 && device->insufficient_size_calls > 0)) {
    if (*count >= n) --device->insufficient_size_calls;
    // Started meanwhile: the driver now counts more than the caller made room for.
    *count = *count >= n ? *count + 1 : n;
    return 7;
  }
  if (n > 0 && infos == nullptr) return 2;
  auto* out = static_cast<unsigned char*>(infos);
  for (unsigned i = 0; i < n; ++i) {
    unsigned char* record = out + std::size_t{i} * record_bytes;
    std::memset(record, 0, record_bytes);
    std::memcpy(record, &processes[i].first.pid, 4);
    std::memcpy(record + 8, &processes[i].first.used, 8);
    if (record_bytes >= 24) {
      std::memcpy(record + 16, &processes[i].second->gpu_instance_id, 4);
      std::memcpy(record + 20, &processes[i].second->compute_instance_id, 4);
    }
  }
  *count = n;
  return 0;
}

}  // namespace

// ---- Required symbols ----

EXPORT Return nvmlInit_v2() {
  if (state.references == 0)
    if (Return e = load_scenario()) return e;
  ++state.references;
  return 0;
}

EXPORT Return nvmlShutdown() {
  if (state.references == 0) return 1;
  if (--state.references == 0) state.gpus.clear();
  return 0;
}

EXPORT const char* nvmlErrorString(Return result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 9:
      return "Driver Not Loaded";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires reset";
    case 18:
      return "RM has detected an NVML/RM version mismatch.";
    case 25:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

EXPORT Return nvmlDeviceGetCount_v2(unsigned* count) {
  if (state.references == 0) return 1;
  if (count == nullptr) return 2;
  *count = static_cast<unsigned>(state.gpus.size());
  return 0;
}

EXPORT Return nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (state.references == 0) return 1;
  if (device == nullptr || index >= state.gpus.size()) return 2;
  if (state.gpus[index]->handle_error != 0) return state.gpus[index]->handle_error;
  *device = state.gpus[index].get();
  return 0;
}

EXPORT Return nvmlDeviceGetUUID(void* handle, char* uuid, unsigned length) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetUUID");
  return copy_text(as_device(handle)->uuid, uuid, length);
}

EXPORT Return nvmlDeviceGetName(void* handle, char* name, unsigned length) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetName");
  return copy_text(as_device(handle)->name, name, length);
}

struct FakeMemory {
  unsigned long long total, free, used;
};

EXPORT Return nvmlDeviceGetMemoryInfo(void* handle, FakeMemory* memory) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetMemoryInfo");
  if (memory == nullptr) return 2;
  const Device* d = as_device(handle);
  memory->total = d->total;
  memory->used = d->used + d->reserved;  // v1 counts the driver's reserve as used
  memory->free = d->total - memory->used;
  return 0;
}

struct FakeUtilization {
  unsigned gpu, memory;
};

EXPORT Return nvmlDeviceGetUtilizationRates(void* handle, FakeUtilization* utilization) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetUtilizationRates");
  if (utilization == nullptr) return 2;
  const Device* d = as_device(handle);
  if (!d->utilization) return 3;
  utilization->gpu = *d->utilization;
  utilization->memory = 0;
  return 0;
}

#if FAKE_NVML_HAS_OPTIONAL
EXPORT Return nvmlDeviceGetPowerUsage(void* handle, unsigned* milliwatts) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetPowerUsage");
  if (milliwatts == nullptr) return 2;
  const Device* d = as_device(handle);
  if (!d->power_w) return 3;
  *milliwatts = static_cast<unsigned>(*d->power_w * 1000.0 + 0.5);
  return 0;
}

EXPORT Return nvmlDeviceGetTemperature(void* handle, unsigned sensor, unsigned* celsius) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetTemperature");
  if (celsius == nullptr || sensor != 0) return 2;
  const Device* d = as_device(handle);
  if (!d->temperature_c) return 3;
  *celsius = *d->temperature_c;
  return 0;
}
#endif

struct FakePciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

EXPORT Return nvmlDeviceGetPciInfo_v3(void* handle, FakePciInfo* pci) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetPciInfo_v3");
  if (pci == nullptr) return 2;
  std::memset(pci, 0, sizeof *pci);
  return copy_text(as_device(handle)->bus_id, pci->busId, sizeof pci->busId);
}

EXPORT Return nvmlDeviceGetComputeRunningProcesses(void* handle, unsigned* count, void* infos) {
  return running_processes(handle, count, infos, 16, "nvmlDeviceGetComputeRunningProcesses");
}

// ---- Optional symbols ----

#if FAKE_NVML_HAS_V2
EXPORT Return nvmlDeviceGetComputeRunningProcesses_v2(void* handle, unsigned* count, void* infos) {
  return running_processes(handle, count, infos, 24, "nvmlDeviceGetComputeRunningProcesses_v2");
}
#endif

#if FAKE_NVML_HAS_V3
EXPORT Return nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned* count, void* infos) {
  return running_processes(handle, count, infos, state.v3_record_bytes, "nvmlDeviceGetComputeRunningProcesses_v3");
}
#endif

#if FAKE_NVML_HAS_OPTIONAL
struct FakeMemory_v2 {
  unsigned version;
  unsigned long long total, reserved, free, used;
};

EXPORT Return nvmlDeviceGetMemoryInfo_v2(void* handle, FakeMemory_v2* memory) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetMemoryInfo_v2");
  if (memory == nullptr) return 2;
  if (memory->version != (sizeof(FakeMemory_v2) | (2U << 24U))) return 25;  // 0x02000028
  const Device* d = as_device(handle);
  memory->total = d->total;
  memory->reserved = d->reserved;
  memory->used = d->used;
  memory->free = d->total - d->used - d->reserved;
  return 0;
}

EXPORT Return nvmlDeviceGetMigMode(void* handle, unsigned* current, unsigned* pending) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetMigMode");
  if (current == nullptr || pending == nullptr) return 2;
  const Device* d = as_device(handle);
  if (!d->mig_mode || d->parent != nullptr) return 3;
  *current = *pending = *d->mig_mode;
  return 0;
}

EXPORT Return nvmlDeviceGetMaxMigDeviceCount(void* handle, unsigned* count) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetMaxMigDeviceCount");
  if (count == nullptr) return 2;
  *count = as_device(handle)->max_mig_devices;
  return 0;
}

EXPORT Return nvmlDeviceGetMigDeviceHandleByIndex(void* handle, unsigned index, void** mig) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetMigDeviceHandleByIndex");
  const Device* d = as_device(handle);
  if (mig == nullptr || index >= d->max_mig_devices) return 2;
  const auto found = d->mig_devices.find(index);
  if (found == d->mig_devices.end()) return 6;
  *mig = found->second.get();
  return 0;
}

EXPORT Return nvmlDeviceGetGpuInstanceId(void* handle, unsigned* id) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetGpuInstanceId");
  if (id == nullptr || as_device(handle)->parent == nullptr) return 2;
  *id = as_device(handle)->gpu_instance_id;
  return 0;
}

EXPORT Return nvmlDeviceGetComputeInstanceId(void* handle, unsigned* id) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetComputeInstanceId");
  if (id == nullptr || as_device(handle)->parent == nullptr) return 2;
  *id = as_device(handle)->compute_instance_id;
  return 0;
}

EXPORT Return nvmlDeviceGetDeviceHandleFromMigDeviceHandle(void* handle, void** parent) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
  if (parent == nullptr || as_device(handle)->parent == nullptr) return 2;
  *parent = as_device(handle)->parent;
  return 0;
}

struct FakeAttributes {
  unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount, sharedJpegCount,
      sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

EXPORT Return nvmlDeviceGetAttributes_v2(void* handle, FakeAttributes* attributes) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetAttributes_v2");
  if (attributes == nullptr) return 2;
  const Device* d = as_device(handle);
  if (d->parent == nullptr) return 3;
  std::memset(attributes, 0, sizeof *attributes);
  attributes->gpuInstanceSliceCount = d->gi_slices;
  attributes->computeInstanceSliceCount = d->ci_slices;
  attributes->memorySizeMB = d->total / kMiB;
  return 0;
}
#endif

#if FAKE_NVML_HAS_OPTIONAL
struct FakeSample {
  unsigned long long timeStamp;
  unsigned long long value;  // nvmlValue_t; uiVal in its low half (little-endian)
};

// One new utilization sample per call, stamped with the CPU clock in microseconds as NVML's are.
EXPORT Return nvmlDeviceGetSamples(void* handle, unsigned type, unsigned long long last_seen, unsigned* value_type,
                                   unsigned* count, FakeSample* samples) {
  FAKE_NVML_DEVICE_CALL(handle, "nvmlDeviceGetSamples");
  if (count == nullptr || value_type == nullptr || type != 1) return 2;
  Device* d = as_device(handle);
  if (d->samples.empty()) return 6;
  *value_type = 1;  // NVML_VALUE_TYPE_UNSIGNED_INT
  if (samples == nullptr) {
    *count = 1;
    return 0;
  }
  if (*count < 1) return 7;
  const auto now = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  if (now <= last_seen) return 6;
  samples[0].timeStamp = now;
  samples[0].value = d->samples[d->next_sample++ % d->samples.size()];
  *count = 1;
  return 0;
}
#endif
