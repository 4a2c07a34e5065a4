#include "select/inventory.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>

#include "select/claims.hpp"
#include "util/error.hpp"
#include "locks/reservation.hpp"
#include "gpu/smi_query.hpp"

namespace gpurun {

Thresholds thresholds_from(const Options& options) {
  return {parse_utilization_limit(options.max_util), parse_memory_limit(options.max_memory)};
}

std::chrono::milliseconds smi_timeout(const Options& options) {
  if (!(options.smi_timeout_s > 0 && options.smi_timeout_s <= 3600))
    throw Error(fmt::format("--smi-timeout {:g} must be between 0 and 3600 seconds", options.smi_timeout_s));
  return std::chrono::milliseconds(std::llround(options.smi_timeout_s * 1000.0));
}

std::vector<Gpu> read_gpus(const Options& options, std::chrono::milliseconds timeout) {
  std::vector<Gpu> gpus = options.from_csv ? read_gpu_snapshot(*options.from_csv) : query_gpus(options.nvidia_smi, timeout);
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return gpus;
}

Inventory take_inventory(const Options& options, const std::string& lock_dir, ContainerEngine* engine) {
  const Thresholds thresholds = thresholds_from(options);
  const auto timeout = smi_timeout(options);

  Inventory inventory;
  // The engine is asked while nvidia-smi works, so that a launch is not slower for it.
  std::future<std::vector<GpuContainer>> containers;
  if (engine != nullptr && !options.from_csv && options.container_awareness)
    containers = std::async(std::launch::async, [engine, timeout] { return engine->gpu_holders(timeout); });

  const std::vector<Gpu> gpus = read_gpus(options, timeout);

  ExternalClaims claims;
  if (containers.valid()) {
    try {
      inventory.containers = containers.get();
      add_claims(claims, container_claims(inventory.containers, gpus));
    } catch (const std::exception& e) {
      spdlog::warn("cannot ask the Docker engine which containers hold GPUs, going by nvidia-smi alone: {}", e.what());
    }
  }
  if (!lock_dir.empty()) add_claims(claims, reserved_gpus(lock_dir, gpus));
  std::vector<bool> withheld(gpus.size(), false);  // by the site policy's allowed_gpus
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int index = gpus[i].index;
    withheld[i] = options.allowed_gpus &&
                  std::find(options.allowed_gpus->begin(), options.allowed_gpus->end(), index) == options.allowed_gpus->end();
    if (withheld[i]) claims[index].insert(claims[index].begin(), options.not_allowed_reason);
  }
  inventory.assessed = assess(gpus, thresholds, claims);  // in the order of `gpus`
  for (std::size_t i = 0; i < gpus.size(); ++i) inventory.assessed[i].withheld = withheld[i];
  return inventory;
}

std::string lock_dir_for_reading(const Options& options) {
  try {
    return prepare_lock_dir(options.lock_dir);
  } catch (const Error& e) {
    spdlog::warn("{}; reservations of other launches are not shown", e.what());
    return {};
  }
}

}  // namespace gpurun
