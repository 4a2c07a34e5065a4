// libFuzzer target: `docker inspect` JSON, as parse_gpu_containers reads it. The engine's answer
// carries what any user put into a container (names, labels, environment), so it is untrusted.
//
// gpurun::Error is the documented answer to text that is not such JSON and is expected. Any other
// exception escaping (nlohmann's type_error included), a crash, a sanitizer report or a violated
// property below is a finding.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "gpurun/engine/containers.hpp"
#include "gpurun/select/claims.hpp"
#include "gpurun/util/error.hpp"

namespace {

std::vector<gpurun::Gpu> machine() {
  std::vector<gpurun::Gpu> gpus(4);
  for (int i = 0; i < 4; ++i) {
    gpus[static_cast<std::size_t>(i)].index = i;
    gpus[static_cast<std::size_t>(i)].uuid = "GPU-8b8c764d-1c0a-cb3d-ea13-519a60a077b" + std::to_string(i);
  }
  gpus[3].uuid.clear();  // a GPU without a UUID is named by index only
  return gpus;
}

}  // namespace

GPURUN_FUZZ_TARGET(docker_inspect) {
  std::vector<gpurun::GpuContainer> containers;
  try {
    containers = gpurun::parse_gpu_containers(gpurun::fuzz::as_text(data, size));
  } catch (const gpurun::Error& e) {
    GPURUN_FUZZ_CHECK(e.exit_code() == gpurun::exit_code::failure);
    return 0;  // not a JSON array
  }
  const std::vector<gpurun::Gpu> gpus = machine();
  for (const gpurun::GpuContainer& c : containers) {
    GPURUN_FUZZ_CHECK(c.all_gpus || !c.devices.empty());  // only containers that hold GPUs are kept
    for (const std::string& device : c.devices) GPURUN_FUZZ_CHECK(!device.empty());
    const std::vector<int> held = gpurun::held_gpu_indices(c, gpus);
    GPURUN_FUZZ_CHECK(held.size() <= gpus.size());
    if (c.all_gpus) GPURUN_FUZZ_CHECK(held.size() == gpus.size());
  }
  gpurun::ExternalClaims claims = gpurun::container_claims(containers, gpus);
  for (const auto& [index, reasons] : claims) GPURUN_FUZZ_CHECK(index >= 0 && index < 4 && !reasons.empty());
  gpurun::add_claims(claims, gpurun::container_claims(containers, gpus));
  return 0;
}
