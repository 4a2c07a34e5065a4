#pragma once
// What a user refused by the container engine's socket can do about it, for the engine's errors.
#include <string>
#include <string_view>

namespace gpurun {

// ".\nYou may not use this engine: ask your admin for `sudo gpurun` ... or the docker group ..."
// when `error` says permission was denied; "" otherwise.
std::string engine_access_hint(std::string_view error);

}  // namespace gpurun
