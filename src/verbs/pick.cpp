#include <ostream>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpurun/config/policy.hpp"
#include "gpurun/render/views.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/verbs/verbs.hpp"

namespace gpurun {

int run_pick(const Options& options, std::ostream& out) {
  enforce_policy(options);
  const Machine machine = open_machine(options);
  const Inventory inventory =
      take_inventory(options, lock_dir_for_reading(options), *machine.source, machine.engine.get());
  std::set<std::string> told;
  warn_once(inventory.warnings, told);
  if (const std::string warning = unchecked_processes_warning(inventory); !warning.empty()) spdlog::warn("{}", warning);
  const std::vector<GpuAssessment> chosen = pick_units(options, inventory, false).gpus_or_throw();
  if (options.mig) {
    // MIG instances are named by UUID in CUDA_VISIBLE_DEVICES, and a CUDA process sees one.
    if (chosen.size() > 1)
      spdlog::info(
          "CUDA uses one MIG instance per process: give each process one of these UUIDs in CUDA_VISIBLE_DEVICES");
    std::vector<std::string> uuids;
    uuids.reserve(chosen.size());
    for (const auto& a : chosen) uuids.push_back(a.gpu.uuid);
    if (options.json) {
      nlohmann::ordered_json json = pick_json(chosen);
      json["uuids"] = uuids;
      out << json_text(json);
    } else {
      out << fmt::format("{}", fmt::join(uuids, ",")) << '\n';
    }
    return 0;
  }
  if (options.json) {
    out << json_text(pick_json(chosen));
  } else {
    out << index_list(chosen) << '\n';
  }
  return 0;
}

}  // namespace gpurun
