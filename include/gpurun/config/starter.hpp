#pragma once
// The commented starter user file of `gpurun config init`, generated from the settings registry:
// one commented example line per setting a file may set. It changes nothing until edited.
#include <string>

namespace gpurun {

std::string starter_user_config();

}  // namespace gpurun
