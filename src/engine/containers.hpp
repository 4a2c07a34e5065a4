#pragma once
// Container awareness: which running containers hold GPUs, whoever started them. A detached
// container that has not touched its GPU yet looks idle to nvidia-smi; the engine knows better.
#include <chrono>
#include <string>
#include <string_view>
#include <vector>


namespace gpurun {

struct GpuContainer {
  std::string id;
  std::string name;
  std::string image;
  std::string user;        // gpurun's label, else the container's configured user
  std::string status;      // "running", "paused", ...
  std::string started_at;  // RFC 3339, as docker says
  bool all_gpus = false;   // --gpus all, NVIDIA_VISIBLE_DEVICES=all
  std::vector<std::string> devices;  // indices or UUIDs, as docker was told
  bool started_by_gpurun = false;
};

// Parses `docker inspect` JSON (an array of containers) and keeps those that hold GPUs, from
// their device requests (--gpus) or their NVIDIA_VISIBLE_DEVICES (--runtime=nvidia).
// Throws Error on text that is not such JSON.
std::vector<GpuContainer> parse_gpu_containers(std::string_view inspect_json);

}  // namespace gpurun
