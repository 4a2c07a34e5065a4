#include "gpurun/gpu/gpu_source.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpurun/util/error.hpp"
#include "nvml/nvml_source.hpp"
#include "smi/csv_snapshot_source.hpp"
#include "smi/nvidia_smi_source.hpp"
#include "smi/nvidia_smi_stream_source.hpp"

namespace gpurun {

std::unique_ptr<GpuSource> make_gpu_source(const GpuSourceSpec& spec) {
  if (spec.csv) return std::make_unique<CsvSnapshotSource>(*spec.csv, spec.apps_csv);
  if (spec.apps_csv)
    throw Error(
        "--from-apps-csv is the process list of a recorded snapshot: give the snapshot with --from-csv FILE too");
  if (spec.kind == GpuSourceSetting::nvml) return make_nvml_source(spec.nvml_library, spec.sensors);
  if (spec.kind == GpuSourceSetting::automatic) {
    // Most hosts have NVML; where it does not load (no driver, a container without it), the
    // nvidia-smi program may still answer, so the fallback is silent unless asked (--verbose).
    NvmlProbe probe = probe_nvml_source(spec.nvml_library, spec.sensors);
    if (probe.source) {
      spdlog::debug("GPU source: NVML ({})", spec.nvml_library.empty() ? kDefaultNvmlLibrary : spec.nvml_library);
      return std::move(probe.source);
    }
    spdlog::debug("GPU source: {} (NVML not used: {})", spec.nvidia_smi, probe.failure);
  }
  if (spec.stream_every) return make_nvidia_smi_stream_source(spec.nvidia_smi, spec.sensors, *spec.stream_every);
  return std::make_unique<NvidiaSmiSource>(spec.nvidia_smi, spec.sensors);
}

}  // namespace gpurun
