#include <set>
#include <ostream>

#include <spdlog/spdlog.h>

#include "config/policy.hpp"
#include "select/inventory.hpp"
#include "render/report.hpp"
#include "verbs/verbs.hpp"

namespace gpurun {

int run_pick(const Options& options, std::ostream& out) {
  enforce_policy(options);
  const auto source = make_gpu_source(gpu_source_spec(options));
  const Inventory inventory = take_inventory(options, lock_dir_for_reading(options), *source);
  std::set<std::string> told;
  warn_once(inventory.warnings, told);
  if (const std::string warning = unchecked_processes_warning(inventory); !warning.empty()) spdlog::warn("{}", warning);
  const std::vector<GpuAssessment> chosen =
      pick(inventory.assessed, options.gpus, options.allow_busy, placement_hints(options, inventory)).gpus_or_throw();
  if (options.json) {
    out << pick_json(chosen).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  } else {
    out << index_list(chosen) << '\n';
  }
  return 0;
}

}  // namespace gpurun
