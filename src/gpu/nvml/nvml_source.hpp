#pragma once
// The NVML source: a Snapshot straight from libnvidia-ml (dlopen'ed on first use), without
// running nvidia-smi. GPUs NVML may not open or has lost are left out with a warning.
#include <memory>
#include <string>

#include "gpurun/gpu/gpu_source.hpp"
#include "nvml/nvml_library.hpp"

namespace gpurun {

class NvmlSource : public GpuSource {
 public:
  // `library_path`: "" for libnvidia-ml.so.1 on the loader's path. Loaded at the first read().
  // `sensors`: read power draw and temperature too.
  explicit NvmlSource(std::string library_path, bool sensors = false);
  explicit NvmlSource(std::unique_ptr<NvmlLibrary> loaded, bool sensors = false);

  // Throws Error (exit 125) when the library cannot be loaded or NVML fails as a whole (driver
  // not loaded, version mismatch, no GPU). The timeout is not used: NVML calls do not hang
  // the way nvidia-smi can (no process to wait for).
  Snapshot read(std::chrono::milliseconds timeout) override;
  std::string name() const override { return "nvml"; }

 private:
  NvmlLibrary& library();

  std::string library_path_;
  std::unique_ptr<NvmlLibrary> library_;
  bool sensors_ = false;
};

// For `gpu_source: nvml`: loads lazily, so a missing library is an error at the first read.
std::unique_ptr<GpuSource> make_nvml_source(std::string library_path, bool sensors = false);

// For `gpu_source: auto`: loads and initialises NVML now. Either `source` is set, or `failure`
// says why NVML cannot answer (for --verbose), and the caller falls back to nvidia-smi.
struct NvmlProbe {
  std::unique_ptr<GpuSource> source;
  std::string failure;
};
NvmlProbe probe_nvml_source(const std::string& library_path, bool sensors = false);

}  // namespace gpurun
