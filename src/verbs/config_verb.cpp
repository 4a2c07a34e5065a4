#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "gpurun/config/explain.hpp"
#include "gpurun/config/file_check.hpp"
#include "gpurun/config/starter.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/verbs/verbs.hpp"

namespace gpurun {

int run_config(const Config& config, const ConfigInputs& inputs, bool init, const Options& options, std::ostream& out) {
  if (!init) {
    out << (options.json ? json_text(config_json(config)) : config_table(config));
    return 0;
  }
  if (options.config_system) {  // printed, not installed: the admin reads it, then puts it in place
    out << starter_system_config();
    return 0;
  }
  // Under sudo: the caller's own file, written with the caller's rights (gpurun/util/privileges.hpp).
  const auto user_file = inputs.caller ? std::optional(caller_config_path(*inputs.caller)) : inputs.user_file;
  if (!user_file) throw Error("cannot tell where the user config goes: set HOME or XDG_CONFIG_HOME");
  const std::filesystem::path path = *user_file;
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  // O_EXCL: an existing file is never overwritten, not even one created a moment ago.
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == EEXIST)
      throw Error(fmt::format("{} exists already; gpurun config init never overwrites it", path.string()));
    throw Error(fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
  }
  const std::string text = starter_user_config();
  const bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  fd.reset();
  if (!written) throw Error(fmt::format("cannot write {}", path.string()));
  out << path.string() << '\n';
  return 0;
}

int run_config_check(const std::string& path, std::ostream& out) {
  out << check_config_file(path) << '\n';
  return 0;
}

}  // namespace gpurun
