// libFuzzer target: `nvidia-smi --query-gpu` CSV, as parse_gpu_csv reads it (from nvidia-smi or a
// --from-csv snapshot anyone can hand over), and everything a verb then does with the table.
//
// gpurun::Error is the documented answer to malformed text and is expected. Any other exception
// escaping, a crash, a sanitizer report or a violated property below is a finding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/select/selection.hpp"
#include "gpurun/util/error.hpp"
#include "smi/smi_csv.hpp"

namespace {

bool valid_amount(const std::optional<double>& value) { return !value || (std::isfinite(*value) && *value >= 0); }

void check_table(const std::vector<gpurun::Gpu>& gpus) {
  std::set<int> indices;
  for (const gpurun::Gpu& gpu : gpus) {
    GPURUN_FUZZ_CHECK(gpu.index >= 0);
    GPURUN_FUZZ_CHECK(indices.insert(gpu.index).second);  // an index appears once
    GPURUN_FUZZ_CHECK(valid_amount(gpu.memory_used_mib));
    GPURUN_FUZZ_CHECK(valid_amount(gpu.memory_total_mib));
    GPURUN_FUZZ_CHECK(valid_amount(gpu.utilization_percent));
    GPURUN_FUZZ_CHECK(gpu.processes.empty());
  }
}

// What `gpurun status` and `gpurun pick` do with a table; none of it may fail on a parsed one.
void use_table(const std::vector<gpurun::Gpu>& gpus) {
  const std::vector<gpurun::GpuAssessment> assessed = gpurun::assess(gpus, gpurun::Thresholds{});
  GPURUN_FUZZ_CHECK(assessed.size() == gpus.size());
  for (const gpurun::GpuAssessment& a : assessed) {
    GPURUN_FUZZ_CHECK(a.score >= 0.0 && a.score <= 100.0);
    GPURUN_FUZZ_CHECK(a.free == a.reasons.empty());
  }
  GPURUN_FUZZ_CHECK(gpurun::ranked(assessed).size() == assessed.size());
  (void)gpurun::format_gpu_table(assessed);
  (void)gpurun::status_json(assessed).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (!assessed.empty()) {
    const auto result = gpurun::pick(assessed, 1, /*allow_busy=*/true);
    // Only MIG-enabled GPUs (never handed out whole) leave nothing to pick.
    const bool whole = std::any_of(assessed.begin(), assessed.end(), [](const auto& a) { return !a.gpu.mig_enabled; });
    GPURUN_FUZZ_CHECK(result.ok() == whole);
    GPURUN_FUZZ_CHECK(result.ok() ? result.chosen.size() == 1 : result.available == 0);
    (void)gpurun::pick_json(result.chosen).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    const auto strict = gpurun::pick(assessed, 1, /*allow_busy=*/false);  // a shortfall when none is free
    GPURUN_FUZZ_CHECK(strict.ok() || strict.available == 0);
  }
}

}  // namespace

GPURUN_FUZZ_TARGET(gpu_csv) {
  std::vector<gpurun::Gpu> gpus;
  try {
    gpus = gpurun::parse_gpu_csv(gpurun::fuzz::as_text(data, size));
  } catch (const gpurun::Error& e) {
    GPURUN_FUZZ_CHECK(e.exit_code() == gpurun::exit_code::failure);
    return 0;  // malformed text, reported as such
  }
  check_table(gpus);
  use_table(gpus);
  return 0;
}
