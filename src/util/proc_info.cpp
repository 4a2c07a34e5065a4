#include "gpurun/util/proc_info.hpp"

#include <pwd.h>

#include <fmt/format.h>

#include <fstream>

#include "gpurun/util/text.hpp"

namespace gpurun {

std::optional<std::string> process_user(long pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("Uid:")) continue;
    const auto uid = text::parse_integer(text::split(text::trim(line.substr(4)), '\t').front());
    if (!uid) return std::nullopt;
    const passwd* entry = ::getpwuid(static_cast<uid_t>(*uid));
    return entry != nullptr ? std::string(entry->pw_name) : fmt::format("uid {}", *uid);
  }
  return std::nullopt;
}

std::string process_command(long pid) {
  std::ifstream comm(fmt::format("/proc/{}/comm", pid));
  std::string command;
  std::getline(comm, command);
  return command;
}

}  // namespace gpurun
