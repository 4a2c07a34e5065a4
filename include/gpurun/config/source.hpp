#pragma once
// Where a setting's value came from: a layer of the configuration, and the file and line, the
// variable or the flag that set it. For `gpurun config` and for every message about a value.
#include <cstddef>
#include <string>
#include <string_view>

namespace gpurun {

struct ConfigSource {
  // The layers, in precedence order, lowest first.
  enum class Kind { defaults, system, user, project, extra_file, profile, environment, flag };
  Kind kind = Kind::defaults;
  std::string where;     // a file path, "GPURUN_IMAGE" or "--image"; empty for defaults
  std::size_t line = 0;  // the key's line in a file (1-based); 0 when not from a file
  std::string profile;   // kind == profile: the profile's name (where/line: the file defining it)

  // "default", "user /home/a/.config/gpurun/config.json:3", "env GPURUN_IMAGE", "flag --image",
  // "profile jupyter in /etc/gpurun/config.json:9".
  std::string describe() const;
  std::string location() const;  // "/etc/gpurun/config.json:3", or `where` alone without a line
};
std::string_view kind_name(ConfigSource::Kind kind);  // "default", "system", ..., "env", "flag"

}  // namespace gpurun
