#include "gpurun/config/source.hpp"

#include <fmt/format.h>

namespace gpurun {

using Kind = ConfigSource::Kind;

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::defaults:
      return "default";
    case Kind::system:
      return "system";
    case Kind::user:
      return "user";
    case Kind::project:
      return "project";
    case Kind::extra_file:
      return "config";
    case Kind::profile:
      return "profile";
    case Kind::environment:
      return "env";
    case Kind::flag:
      return "flag";
  }
  return "";
}

std::string ConfigSource::location() const { return line > 0 ? fmt::format("{}:{}", where, line) : where; }

std::string ConfigSource::describe() const {
  const std::string at = location();
  switch (kind) {
    case Kind::defaults:
      return "default";
    case Kind::profile:
      return fmt::format("profile {} in {}", profile, at);
    case Kind::flag:
      return where.starts_with("-") ? "flag " + where : "command line " + where;
    default:
      return fmt::format("{} {}", kind_name(kind), at);
  }
}

}  // namespace gpurun
