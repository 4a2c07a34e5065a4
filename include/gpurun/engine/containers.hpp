#pragma once
// Container awareness: which running containers hold GPUs, whoever started them. A detached
// container that has not touched its GPU yet looks idle to nvidia-smi; the engine knows better.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

struct GpuContainer {
  std::string id;
  std::string name;
  std::string image;
  std::string user;              // gpurun's label; its processes' owner where seen through them; else ""
  std::string status;            // "running", "paused", ...
  std::string started_at;        // RFC 3339, as docker says
  std::string finished_at;       // when its job ended (RFC 3339; a year-1 time where it never ran)
  std::string created_at;        // when the engine made it (RFC 3339)
  std::optional<int> exit_code;  // its job's, once it has ended
  std::string command;           // what it runs: its entrypoint and arguments, joined by spaces
  bool all_gpus = false;         // --gpus all, NVIDIA_VISIBLE_DEVICES=all, nvidia.com/gpu=all, --privileged
  // Indices or UUIDs (MIG ones too), as the engine was told; "minor:N" for a device node
  // /dev/nvidiaN given with --device (see device_minor).
  std::vector<std::string> devices;
  // N of each /dev/nvidia-caps/nvidia-capN given with --device: which MIG instances its parent's
  // node reaches (podman shows a CDI MIG device so; select/claims.cpp reads them).
  std::vector<int> mig_caps;
  bool started_by_gpurun = false;
  // Its gpurun.name label names it: a launch wrote its labels (not its image, whose labels every
  // container of it shows), so the service's time limits and clean-up may act on it.
  bool labelled_by_launch = false;
  bool detached = false;  // a detached launch's (gpurun.detached): kept after its job, for its output
  std::optional<std::chrono::seconds> time_limit;  // gpurun's label: stop it this long after its start
  bool notify_end = false;                         // gpurun's label: tell its user when it ends
  // Seen only through its GPU processes (add_process_holders): no engine we asked listed it, so
  // nothing is ever stopped through one by this ID. `rootless_uid`: the user whose own engine runs it.
  bool from_processes = false;
  std::optional<unsigned> rootless_uid;
};

// Parses `docker inspect` JSON (an array of containers) and keeps those that hold GPUs, from
// their device requests (--gpus, CDI's --device nvidia.com/gpu=N), their device nodes
// (--device /dev/nvidiaN), --privileged (every GPU), or else their NVIDIA_VISIBLE_DEVICES
// (--runtime=nvidia).
// Throws Error on text that is not such JSON.
std::vector<GpuContainer> parse_gpu_containers(std::string_view inspect_json);

// Whether its job has ended (exited, dead; podman's stopped) or never started (created; podman's
// initialized): such a container, which `ps -a` lists, holds nothing and runs for no time.
// Restarting, paused, stopping ones run still.
bool has_ended(const GpuContainer& container);
// Of those, one that never started.
bool never_started(const GpuContainer& container);

// A device given as its node /dev/nvidiaN is recorded as "minor:N". N is the driver's minor
// number, not the GPU's index; they agree on nearly every host (both follow PCI order), and
// select/claims.cpp maps them through the driver's /proc/driver/nvidia/gpus where it says.
inline constexpr std::string_view kMinorPrefix = "minor:";
// N of "minor:N", or nullopt for any other device.
std::optional<int> device_minor(std::string_view device);

}  // namespace gpurun
