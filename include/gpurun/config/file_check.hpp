#pragma once
// `gpurun config --check FILE`: an admin's (or a user's) file checked before it is installed,
// with the same rules, and the same FILE:LINE: key "..." errors, as when gpurun reads it.
#include <string>

namespace gpurun {

// What the file sets, as one line: "FILE: valid as a system file: sets image, max_util; site
// policy: allowed_gpus". Throws Error (exit 125) naming file, line and key where it is wrong.
std::string check_config_file(const std::string& path);

}  // namespace gpurun
