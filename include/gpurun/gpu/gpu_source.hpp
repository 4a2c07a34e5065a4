#pragma once
// The GPU-source seam: where a Snapshot comes from. nvidia-smi and a recorded CSV snapshot are
// the implementations here; NVML is another. Tests can pass an in-process fake.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/util/choices.hpp"

namespace gpurun {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  GpuSource() = default;
  GpuSource(const GpuSource&) = delete;
  GpuSource& operator=(const GpuSource&) = delete;

  // One look at every GPU; throws Error (exit 125) with a message saying what to do.
  virtual Snapshot read(std::chrono::milliseconds timeout) = 0;
  // The same look in two halves: begun now, finished by calling what it returns (which throws
  // what read() would). A source that asks programs (nvidia-smi) starts them here, so that the
  // calling thread can ask something else while they work (take_inventory asks the container
  // engine). One that reads in-process (NVML, a snapshot) reads when called.
  virtual std::function<Snapshot()> begin_read(std::chrono::milliseconds timeout) {
    return [this, timeout] { return read(timeout); };
  }
  // Whether begin_read leaves the work to other processes (else: to the thread that calls).
  virtual bool works_in_other_processes() const { return false; }
  // "nvidia-smi", "nvml", "snapshot FILE": for --verbose and `status`.
  virtual std::string name() const = 0;
};

// Which source to use: a recorded snapshot when `csv` is given, else the one `kind` names.
struct GpuSourceSpec {
  std::string nvidia_smi = "nvidia-smi";
  std::optional<std::string> csv;                        // a recorded --query-gpu CSV ("-" for stdin)
  std::optional<std::string> apps_csv;                   // with it, a recorded --query-compute-apps CSV
  GpuSourceSetting kind = GpuSourceSetting::nvidia_smi;  // automatic: NVML when it loads and initialises
  std::string nvml_library;                              // "": libnvidia-ml.so.1 on the loader's path
  bool sensors = false;  // also power draw and temperature (gpurund's metrics; a launch has no use for them)
  // gpurund: nvidia-smi kept running in loop mode at this period, read as it prints, rather than two
  // processes per read (NVML, where it answers, needs neither).
  std::optional<std::chrono::milliseconds> stream_every{};
};

// The source the spec names; throws Error (exit 125) for an apps CSV without a GPU CSV. `auto` loads NVML now and says
// at debug level (--verbose) which source answers and why NVML does not; `nvml` loads it at the first read (an Error
// saying what to do).
std::unique_ptr<GpuSource> make_gpu_source(const GpuSourceSpec& spec);

}  // namespace gpurun
