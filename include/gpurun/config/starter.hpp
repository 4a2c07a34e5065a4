#pragma once
// The commented starter user file of `gpurun config init`, generated from the settings registry:
// one commented example line per setting a file may set. It changes nothing until edited.
#include <string>

namespace gpurun {

std::string starter_user_config();

// The commented starter system file of `gpurun config init --system`: the site's defaults, the
// root-only keys and the site policy, each commented out.
std::string starter_system_config();

}  // namespace gpurun
