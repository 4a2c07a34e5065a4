#include "gpurun/engine/gpu_request.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

// Each GPU's name for the engine: its UUID, or its index where the snapshot has none.
std::vector<std::string> device_ids(const std::vector<int>& indices, const std::vector<std::string>& uuids) {
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < indices.size(); ++i)
    ids.push_back(i < uuids.size() && !uuids[i].empty() ? uuids[i] : std::to_string(indices[i]));
  return ids;
}

}  // namespace

std::string_view form_name(GpuRequestForm form) {
  switch (form) {
    case GpuRequestForm::cdi:
      return "cdi";
    case GpuRequestForm::runtime:
      return "runtime";
    case GpuRequestForm::gpus:
      break;
  }
  return "gpus";
}

CdiSupport cdi_from_spec_dirs(std::string_view spec_dirs_json, std::string_view asked) {
  const nlohmann::json dirs = nlohmann::json::parse(spec_dirs_json, nullptr, false);
  std::vector<std::string> listed;
  if (dirs.is_array())
    for (const auto& dir : dirs)
      if (dir.is_string() && !dir.get_ref<const std::string&>().empty()) listed.push_back(dir.get<std::string>());
  if (listed.empty()) return {false, fmt::format("{} lists no CDI spec directory", asked)};
  return {true, fmt::format("{} lists CDI spec directories {}", asked, fmt::join(listed, ", "))};
}

GpuRequestChoice choose_gpu_request(GpuRequestSetting setting, std::string_view engine_name, const CdiSupport& cdi) {
  if (setting == GpuRequestSetting::gpus && engine_name == "podman")
    throw Error(
        "gpu_request gpus does not go with podman: podman's --gpus 2 means GPU index 2, not two GPUs. "
        "Use gpu_request auto or cdi (--device nvidia.com/gpu=UUID), or runtime");
  switch (setting) {
    case GpuRequestSetting::gpus:
      return {GpuRequestForm::gpus, "gpu_request is gpus"};
    case GpuRequestSetting::cdi:
      return {GpuRequestForm::cdi, "gpu_request is cdi"};
    case GpuRequestSetting::runtime:
      return {GpuRequestForm::runtime, "gpu_request is runtime"};
    case GpuRequestSetting::automatic:
      break;
  }
  if (cdi.available) return {GpuRequestForm::cdi, "gpu_request auto: " + cdi.why};
  return {GpuRequestForm::gpus, "gpu_request auto: " + cdi.why};
}

std::string cdi_device(std::string_view id) { return fmt::format("nvidia.com/gpu={}", id); }

std::vector<std::string> gpu_request_args(GpuRequestForm form, const std::vector<int>& indices,
                                          const std::vector<std::string>& uuids) {
  switch (form) {
    case GpuRequestForm::cdi: {
      std::vector<std::string> args;
      for (const std::string& id : device_ids(indices, uuids)) args.insert(args.end(), {"--device", cdi_device(id)});
      return args;
    }
    case GpuRequestForm::runtime:
      return {"--runtime=nvidia", "--env", "NVIDIA_VISIBLE_DEVICES=" + visible_devices(form, indices, uuids)};
    case GpuRequestForm::gpus:
      break;
  }
  // The quotes belong to the value: without them docker reads "device=2,5" as "device=2" plus a
  // count and fails with "cannot set both Count and DeviceIDs".
  return {"--gpus", "\"device=" + visible_devices(form, indices, uuids) + "\""};
}

std::string visible_devices(GpuRequestForm form, const std::vector<int>& indices,
                            const std::vector<std::string>& uuids) {
  if (form != GpuRequestForm::gpus) return fmt::format("{}", fmt::join(device_ids(indices, uuids), ","));
  // A MIG instance has no index of its own: the NVIDIA runtime takes it by its MIG UUID.
  const bool mig = std::any_of(uuids.begin(), uuids.end(), [](const std::string& u) { return u.starts_with("MIG-"); });
  return mig ? fmt::format("{}", fmt::join(uuids, ",")) : fmt::format("{}", fmt::join(indices, ","));
}

}  // namespace gpurun
