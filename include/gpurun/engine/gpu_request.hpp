#pragma once
// How a container asks for its GPUs (the gpu_request setting): docker's --gpus, a CDI device
// per GPU (docker 25+ with CDI, podman), or the nvidia runtime's NVIDIA_VISIBLE_DEVICES (old
// hosts). A pure choice from what the engine says it supports, and the argv of each form.
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/util/choices.hpp"

namespace gpurun {

enum class GpuRequestForm { gpus, cdi, runtime };

// "gpus", "cdi", "runtime".
std::string_view form_name(GpuRequestForm form);

// What the engine says about CDI: whether it resolves `--device nvidia.com/gpu=...`, and why
// we think so ("podman always resolves CDI devices", "docker info lists CDISpecDirs /etc/cdi").
struct CdiSupport {
  bool available = false;
  std::string why;
};

// Docker's answer about CDI: the JSON of `docker info`'s CDISpecDirs (an array of directories;
// null, absent or [] where CDI is off or the engine predates it). `asked` says where it came from
// ("docker info", "the Engine API's /info"). Text that is not such JSON counts as no CDI.
CdiSupport cdi_from_spec_dirs(std::string_view spec_dirs_json, std::string_view asked);

struct GpuRequestChoice {
  GpuRequestForm form = GpuRequestForm::gpus;
  std::string why;  // for --dry-run: "gpu_request is cdi", "auto: docker info lists ..."
};

// The form `setting` (auto, gpus, cdi, runtime) asks for; auto takes CDI where the engine has
// it, else --gpus. Podman (`engine_name`) never takes --gpus: its `--gpus 2` means GPU index 2.
// Throws Error for any other word.
GpuRequestChoice choose_gpu_request(GpuRequestSetting setting, std::string_view engine_name, const CdiSupport& cdi);

// The `run` arguments that give the container these GPUs, named by UUID (a MIG instance by its
// MIG UUID) where `uuids[i]` is known, else by index. --gpus keeps docker's index form for whole
// GPUs (as gpurun always wrote it) and UUIDs for MIG instances.
std::vector<std::string> gpu_request_args(GpuRequestForm form, const std::vector<int>& indices,
                                          const std::vector<std::string>& uuids);

// The devices as the form names them, comma-separated: what NVIDIA_VISIBLE_DEVICES must say.
std::string visible_devices(GpuRequestForm form, const std::vector<int>& indices,
                            const std::vector<std::string>& uuids);

// The CDI device name of one GPU: "nvidia.com/gpu=<UUID>".
std::string cdi_device(std::string_view id);

}  // namespace gpurun
