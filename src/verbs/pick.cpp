#include <ostream>

#include "select/inventory.hpp"
#include "render/report.hpp"
#include "verbs/verbs.hpp"

namespace gpurun {

int run_pick(const Options& options, std::ostream& out) {
  const auto engine = make_container_engine(options.docker);
  const std::vector<GpuAssessment> chosen =
      pick(take_inventory(options, lock_dir_for_reading(options), engine.get()).assessed, options.gpus, options.allow_busy);
  if (options.json) {
    out << pick_json(chosen).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else {
    out << index_list(chosen) << '\n';
  }
  return 0;
}

}  // namespace gpurun
