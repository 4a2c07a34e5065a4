#pragma once
// The container names a launch may take: checked before the pick and any --wait, rather than by
// the engine after them.
#include <string>
#include <string_view>

#include "gpurun/config/options.hpp"
#include "gpurun/engine/container_engine.hpp"

namespace gpurun {

// The name docker keeps: a leading '/' dropped.
std::string_view bare_container_name(std::string_view name);

// A container name as docker and podman take one (Error otherwise; "" passes: none asked for).
void check_container_name(const std::string& name);

// docker takes a name of two characters at least (podman one).
void check_name_for_engine(const std::string& name, const ContainerEngine& engine);

// --name that a container has already (an ended detached job's, until `gpurun rm`): refused with
// whose it is and what to type. Where the engine cannot be asked, nothing is refused.
void check_name_free(const Options& options, const ContainerEngine& engine);

}  // namespace gpurun
