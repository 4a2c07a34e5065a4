#pragma once
// The GPU-source seam: where a Snapshot comes from. nvidia-smi and a recorded CSV snapshot are
// the implementations here; NVML is another. Tests can pass an in-process fake.
#include <chrono>
#include <memory>
#include <string>

#include "gpu/snapshot.hpp"

namespace gpurun {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  GpuSource() = default;
  GpuSource(const GpuSource&) = delete;
  GpuSource& operator=(const GpuSource&) = delete;

  // One look at every GPU; throws Error (exit 125) with a message saying what to do.
  virtual Snapshot read(std::chrono::milliseconds timeout) = 0;
  // "nvidia-smi", "nvml", "snapshot FILE": for --verbose and `status`.
  virtual std::string name() const = 0;
};

}  // namespace gpurun
