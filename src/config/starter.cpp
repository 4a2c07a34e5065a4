#include "gpurun/config/starter.hpp"

#include <fmt/format.h>

#include "gpurun/config/settings.hpp"

namespace gpurun {

std::string starter_user_config() {
  std::string text = R"(// gpurun user configuration (JSON; // and /* */ comments allowed).
// Remove the // in front of a line to use it; `gpurun config` shows what is in effect and why.
//
// Precedence, lowest first: built-in defaults < /etc/gpurun/config.json < this file
//   < .gpurun.json in the current directory or the nearest parent, then --config files
//   < the profile chosen with -P/--profile NAME < GPURUN_* variables < command-line flags.
// env, volumes, publish and docker_opts add to what lower layers set; null resets a key
// to its built-in default (for those lists: drops what lower layers added).
{
)";
  for (const Setting& s : settings()) {
    if (s.scope != Scope::option || s.example.empty()) continue;
    const std::string line = fmt::format("  // \"{}\": {},", s.key, s.example);
    text += fmt::format("{:<51}// {}: {}\n", line, s.flag, s.help);
  }
  text += R"(  "profiles": {
    // "jupyter": {"publish": ["8888:8888"], "gpus": 1, "command": ["jupyter", "lab", "--ip=0.0.0.0"]}
  }
}
)";
  return text;
}

}  // namespace gpurun
