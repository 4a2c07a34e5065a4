// libFuzzer target: `nvidia-smi --query-compute-apps` CSV, as parse_compute_apps_csv reads it, and
// the join of the processes onto a GPU table.
//
// gpurun::Error is the documented answer to malformed text and is expected. Any other exception
// escaping, a crash, a sanitizer report or a violated property below is a finding.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_common.hpp"
#include "gpurun/select/selection.hpp"
#include "gpurun/util/error.hpp"
#include "smi/smi_csv.hpp"

namespace {

// Two GPUs whose UUIDs appear in the seed corpus, and one without a UUID.
gpurun::Gpu a100(int index, std::string uuid) {
  gpurun::Gpu gpu;
  gpu.index = index;
  gpu.uuid = std::move(uuid);
  gpu.name = "NVIDIA A100-SXM4-80GB";
  gpu.memory_used_mib = 4.0;
  gpu.memory_total_mib = 81920.0;
  gpu.utilization_percent = 0.0;
  return gpu;
}

std::vector<gpurun::Gpu> machine() {
  return {a100(0, "GPU-d840f893-7c94-aa59-1567-6489f4dd37dd"), a100(1, "GPU-6714c899-a1a8-0818-470b-7a5f11fa781a"),
          a100(2, "")};
}

}  // namespace

GPURUN_FUZZ_TARGET(compute_apps_csv) {
  std::vector<gpurun::GpuProcess> processes;
  try {
    processes = gpurun::parse_compute_apps_csv(gpurun::fuzz::as_text(data, size));
  } catch (const gpurun::Error& e) {
    GPURUN_FUZZ_CHECK(e.exit_code() == gpurun::exit_code::failure);
    return 0;  // malformed text, reported as such
  }
  for (const gpurun::GpuProcess& p : processes) {
    GPURUN_FUZZ_CHECK(p.pid >= 0);
    GPURUN_FUZZ_CHECK(!p.used_memory_mib || (std::isfinite(*p.used_memory_mib) && *p.used_memory_mib >= 0));
  }

  std::vector<gpurun::Gpu> gpus = machine();
  gpurun::attach_processes(gpus, processes);
  std::size_t attached = 0;
  for (const gpurun::Gpu& gpu : gpus) {
    attached += gpu.processes.size();
    for (const gpurun::GpuProcess& p : gpu.processes) GPURUN_FUZZ_CHECK(!gpu.uuid.empty() && p.gpu_uuid == gpu.uuid);
  }
  GPURUN_FUZZ_CHECK(attached <= processes.size());
  GPURUN_FUZZ_CHECK(gpus[2].processes.empty());  // a process with no UUID never lands on a GPU without one

  // A GPU with a process is never free, whatever else it reports.
  for (const gpurun::GpuAssessment& a : gpurun::assess(gpus, gpurun::Thresholds{}))
    GPURUN_FUZZ_CHECK(a.gpu.processes.empty() || !a.free);
  return 0;
}
