#include "access_hint.hpp"

#include "gpurun/util/text.hpp"

namespace gpurun {

std::string engine_access_hint(std::string_view error) {
  if (text::to_lower(error).find("permission denied") == std::string::npos) return "";
  return ".\nYou may not use this engine: ask your admin for `sudo gpurun` (gpurun as the only door to the GPUs), "
         "or for membership of the `docker` group (which is root on the host)";
}

}  // namespace gpurun
