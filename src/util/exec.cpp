#include "gpurun/util/exec.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gpurun/util/error.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {

std::string find_program(const std::string& program, int& error) {
  const auto usable = [&](const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return false;
    if (S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0) return true;
    error = EACCES;
    return false;
  };
  error = ENOENT;
  if (program.empty()) return {};
  if (program.find('/') != std::string::npos) return usable(program) ? program : std::string{};
  const char* path_env = std::getenv("PATH");
  const std::string search = (path_env != nullptr && *path_env != '\0') ? path_env : "/usr/local/bin:/usr/bin:/bin";
  for (std::string_view dir : text::split(search, ':')) {
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, program);
    if (usable(candidate)) return candidate;
  }
  return {};
}

std::string locate_program(const std::string& program) {
  int error = 0;
  std::string path = [&] {
    const AsRoot root;
    return find_program(program, error);
  }();
  if (!path.empty()) return path;
  if (error == ENOENT)
    throw Error(fmt::format("{} not found{}: {}", program, program.find('/') == std::string::npos ? " on PATH" : "",
                            // Under sudo the flag would be refused: only the admin's file names programs.
                            acting_for_caller()
                                ? "ask your admin to install it, or to set \"docker\" in /etc/gpurun/config.json"
                                : "install docker (Debian: apt-get install docker.io), or pass --docker PATH or "
                                  "set GPURUN_DOCKER"),
                exit_code::not_found);
  throw Error(fmt::format("cannot execute {}: {}", program, std::strerror(error)), exit_code::cannot_execute);
}

void exec_program(const std::vector<std::string>& argv) {
  if (argv.empty()) throw Error("nothing to execute");
  const std::string path = locate_program(argv.front());
  const AsRoot root;  // under sudo the docker client runs as root; it came from the admin's file only
  const std::vector<char*> args = c_argv(argv);
  spdlog::default_logger()->flush();
  ::execv(path.c_str(), args.data());
  throw Error(fmt::format("cannot execute {}: {}", argv.front(), std::strerror(errno)), exit_code::cannot_execute);
}

std::vector<char*> c_argv(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace gpurun
