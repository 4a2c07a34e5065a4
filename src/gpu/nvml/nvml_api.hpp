#pragma once
// The part of NVML's C API that gpurun calls, declared by hand: nvml.h is not in Debian main, and
// the library is dlopen'ed (nvml/nvml_library.hpp), so only these types and prototypes are needed.
// Layouts follow the public nvml.h (driver R550+); the static_asserts pin the x86-64/aarch64 ABI.
#include <cstdint>

namespace gpurun::nvml {

using Return = int;  // nvmlReturn_t, an enum of int size
struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t

// nvmlReturn_t values gpurun tells apart.
inline constexpr Return kSuccess = 0;
inline constexpr Return kUninitialized = 1;
inline constexpr Return kInvalidArgument = 2;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kNoPermission = 4;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;
inline constexpr Return kDriverNotLoaded = 9;
inline constexpr Return kLibraryNotFound = 12;
inline constexpr Return kFunctionNotFound = 13;
inline constexpr Return kGpuIsLost = 15;
inline constexpr Return kResetRequired = 16;
inline constexpr Return kLibRmVersionMismatch = 18;
inline constexpr Return kArgumentVersionMismatch = 25;
inline constexpr Return kUnknown = 999;

inline constexpr unsigned kDeviceUuidBufferSize = 96;            // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kDeviceNameBufferSize = 96;            // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kMigEnabled = 1;                       // NVML_DEVICE_MIG_ENABLE
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE for usedGpuMemory
inline constexpr unsigned kGpuUtilizationSamples = 1;            // NVML_GPU_UTILIZATION_SAMPLES
inline constexpr unsigned kTemperatureGpu = 0;                   // NVML_TEMPERATURE_GPU

struct Memory {  // nvmlMemory_t (v1): "used" includes reserved memory
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24);

struct Memory_v2 {  // nvmlMemory_v2_t: "used" as nvidia-smi shows it
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory_v2) == 40);
// NVML_STRUCT_VERSION(Memory, 2): the struct size, and the version in the top byte.
inline constexpr unsigned kMemory_v2Version = sizeof(Memory_v2) | (2U << 24U);
static_assert(kMemory_v2Version == 0x02000028);

struct Utilization {  // nvmlUtilization_t, percent over the last sample period
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(Utilization) == 8);

struct PciInfo {  // nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
static_assert(sizeof(PciInfo) == 68);

struct ProcessInfo_v1 {  // nvmlProcessInfo_v1_t: nvmlDeviceGetComputeRunningProcesses
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
static_assert(sizeof(ProcessInfo_v1) == 16);

// nvmlProcessInfo_v2_t, and nvmlProcessInfo_t (v3) in today's nvml.h: the same 24 bytes.
struct ProcessInfo_v2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;  // 0xFFFFFFFF without MIG
  unsigned int computeInstanceId;
};
static_assert(sizeof(ProcessInfo_v2) == 24);

// The record some drivers (the R530/early R535 nvml.h) wrote for _v3: usedGpuCcProtectedMemory
// appended. Only its size matters: the first 24 bytes are laid out as in ProcessInfo_v2.
struct ProcessInfo_v3_cc {
  ProcessInfo_v2 base;
  unsigned long long usedGpuCcProtectedMemory;
};
static_assert(sizeof(ProcessInfo_v3_cc) == 32);

struct DeviceAttributes {  // nvmlDeviceAttributes_t (nvmlDeviceGetAttributes_v2)
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};
static_assert(sizeof(DeviceAttributes) == 40);

union Value {  // nvmlValue_t
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};
static_assert(sizeof(Value) == 8);

struct Sample {  // nvmlSample_t (nvmlDeviceGetSamples)
  unsigned long long timeStamp;
  Value sampleValue;
};
static_assert(sizeof(Sample) == 16);

// Function types, named after the symbols.
extern "C" {
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using DeviceGetCountFn = Return (*)(unsigned int* count);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int index, Device* device);
using DeviceGetStringFn = Return (*)(Device device, char* buffer, unsigned int length);  // UUID, name
using DeviceGetMemoryInfoFn = Return (*)(Device device, Memory* memory);
using DeviceGetMemoryInfo_v2Fn = Return (*)(Device device, Memory_v2* memory);
using DeviceGetUtilizationRatesFn = Return (*)(Device device, Utilization* utilization);
using DeviceGetPciInfoFn = Return (*)(Device device, PciInfo* pci);
// _v3, _v2 and v1 take records of different sizes; the caller knows which it called.
using DeviceGetComputeRunningProcessesFn = Return (*)(Device device, unsigned int* count, void* infos);
using DeviceGetMigModeFn = Return (*)(Device device, unsigned int* current, unsigned int* pending);
using DeviceGetMaxMigDeviceCountFn = Return (*)(Device device, unsigned int* count);
using DeviceGetMigDeviceHandleByIndexFn = Return (*)(Device device, unsigned int index, Device* mig);
using DeviceGetInstanceIdFn = Return (*)(Device mig, unsigned int* id);  // GPU or compute instance id
using DeviceGetDeviceHandleFromMigDeviceHandleFn = Return (*)(Device mig, Device* parent);
using DeviceGetAttributesFn = Return (*)(Device device, DeviceAttributes* attributes);
using DeviceGetSamplesFn = Return (*)(Device device, unsigned int type, unsigned long long last_seen,
                                      unsigned int* value_type, unsigned int* count, Sample* samples);
using DeviceGetNumaNodeIdFn = Return (*)(Device device, unsigned int* node);
using DeviceGetPowerUsageFn = Return (*)(Device device, unsigned int* milliwatts);
using DeviceGetTemperatureFn = Return (*)(Device device, unsigned int sensor, unsigned int* celsius);
using DeviceGetTopologyCommonAncestorFn = Return (*)(Device a, Device b, int* level);
}

}  // namespace gpurun::nvml
