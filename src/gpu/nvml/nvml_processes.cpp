#include "nvml/nvml_processes.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gpurun {
namespace {

constexpr std::byte kUnwritten{0xA5};  // what the buffer holds where the driver wrote nothing
constexpr std::size_t kWidestRecord = sizeof(nvml::ProcessInfo_v3_cc);
constexpr int kAttempts = 8;  // processes may start between calls; not forever

std::size_t declared_record_size(int version) {
  return version == 1 ? sizeof(nvml::ProcessInfo_v1) : sizeof(nvml::ProcessInfo_v2);
}

// How wide the records the driver wrote are. nvml.h's _v3 record is 24 bytes, but drivers built
// from the R530/early-R535 header wrote 32 (usedGpuCcProtectedMemory appended). The buffer was
// filled with kUnwritten, so 24-byte records leave bytes [24n, 32n) untouched while 32-byte
// ones always write there (at least the last record's 8-byte tail).
std::size_t written_record_size(int version, const std::vector<std::byte>& buffer, unsigned count) {
  const std::size_t declared = declared_record_size(version);
  if (version != 3 || count == 0) return declared;
  const auto begin = buffer.begin() + static_cast<std::ptrdiff_t>(declared * count);
  const auto end = buffer.begin() + static_cast<std::ptrdiff_t>(kWidestRecord * count);
  const bool wider = std::any_of(begin, end, [](std::byte b) { return b != kUnwritten; });
  return wider ? kWidestRecord : declared;
}

NvmlProcess decode(const std::byte* record) {
  // All versions start with pid (offset 0) and usedGpuMemory (offset 8).
  unsigned int pid = 0;
  unsigned long long used = 0;
  std::memcpy(&pid, record + offsetof(nvml::ProcessInfo_v1, pid), sizeof pid);
  std::memcpy(&used, record + offsetof(nvml::ProcessInfo_v1, usedGpuMemory), sizeof used);
  NvmlProcess process;
  process.pid = static_cast<long>(pid);
  if (used != nvml::kValueNotAvailable) process.used_memory_mib = nvml_mib(used);
  return process;
}

}  // namespace

// nvidia-smi rounds to the nearest MiB: on an H100 (driver 580) NVML's 4943839232 bytes used
// (4714.81 MiB) show as "4715 MiB".
double nvml_mib(unsigned long long bytes) {
  constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
  const unsigned long long whole_mib = (bytes + kMiB / 2) / kMiB;  // rounded, as nvidia-smi does
  return static_cast<double>(whole_mib);
}

nvml::Return read_nvml_processes(const NvmlLibrary& library, nvml::Device device, std::vector<NvmlProcess>& out) {
  out.clear();
  const int version = library.compute_processes_version;
  unsigned capacity = 0;  // first call with none: the driver says how many there are
  std::vector<std::byte> buffer;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    // Room for the widest record, whatever the driver writes.
    buffer.assign(std::size_t{capacity} * kWidestRecord, kUnwritten);
    unsigned count = capacity;
    const nvml::Return status =
        library.device_get_compute_running_processes(device, &count, capacity == 0 ? nullptr : buffer.data());
    if (status == nvml::kInsufficientSize) {
      capacity = std::max(count + 8, capacity * 2);  // a few spare: more may start meanwhile
      continue;
    }
    if (status != nvml::kSuccess) return status;
    count = std::min(count, capacity);
    const std::size_t stride = written_record_size(version, buffer, count);
    for (unsigned i = 0; i < count; ++i) out.push_back(decode(buffer.data() + std::size_t{i} * stride));
    return nvml::kSuccess;
  }
  return nvml::kInsufficientSize;
}

}  // namespace gpurun
