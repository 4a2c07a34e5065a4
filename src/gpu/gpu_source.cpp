#include "gpu/gpu_source.hpp"

#include "gpu/csv_snapshot_source.hpp"
#include "gpu/nvidia_smi_source.hpp"
#include "util/error.hpp"

namespace gpurun {

std::unique_ptr<GpuSource> make_gpu_source(const GpuSourceSpec& spec) {
  if (spec.csv) return std::make_unique<CsvSnapshotSource>(*spec.csv, spec.apps_csv);
  if (spec.apps_csv)
    throw Error("--from-apps-csv is the process list of a recorded snapshot: give the snapshot with --from-csv FILE too");
  return std::make_unique<NvidiaSmiSource>(spec.nvidia_smi);
}

}  // namespace gpurun
