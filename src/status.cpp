#include <ostream>

#include "gpurun/inventory.hpp"
#include "gpurun/report.hpp"
#include "gpurun/verbs.hpp"

namespace gpurun {

int run_status(const Options& options, std::ostream& out) {
  const std::vector<GpuAssessment> gpus = take_inventory(options, lock_dir_for_reading(options)).assessed;
  if (options.json) {
    out << status_json(gpus).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else {
    out << format_gpu_table(gpus);
  }
  return 0;
}

}  // namespace gpurun
