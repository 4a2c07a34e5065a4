#include "caller_mounts.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "gpurun/config/options.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/util/docker_args.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/text.hpp"
#include "mount_pins.hpp"

namespace gpurun {
namespace {

[[noreturn]] void refuse(const std::string& what) { throw Error("not allowed under sudo: " + what); }

// "/a:/b:ro" with its host side replaced.
std::string with_volume_source(const std::string& value, const std::string& what, MountPins* pins) {
  if (value.find(':') == std::string::npos) return value;  // an anonymous volume: the container's own
  const std::string source = volume_source(value);
  if (!source.starts_with("/"))
    refuse(fmt::format("{} \"{}\": named volumes are shared by every user of the engine; mount a directory of yours",
                       what, text::printable(value)));
  return resolve_as_caller(source, what, pins) + value.substr(source.size());
}

// "type=bind,src=/a,dst=/b" with its source replaced (a tmpfs has none).
std::string with_mount_source(const std::string& value, const std::string& what, MountPins* pins) {
  std::string out;
  for (std::string_view field : text::split(value, ',')) {
    std::string f(field);
    for (std::string_view key : {"source=", "src="})
      if (f.starts_with(key)) {
        const std::string path = f.substr(key.size());
        if (path.find('"') != std::string::npos)
          refuse(fmt::format("{} \"{}\": quoted fields", what, text::printable(value)));
        f = std::string(key) + resolve_as_caller(path, what, pins);
      }
    out += (out.empty() ? "" : ",") + f;
  }
  return out;
}

}  // namespace

std::string resolve_as_caller(const std::string& path, const std::string& what, MountPins* pins) {
  if (!path.starts_with("/")) refuse(fmt::format("{} \"{}\": give an absolute path", what, text::printable(path)));
  // O_PATH: search permission on every directory to it, as the caller; the file's own mode is
  // left to the kernel inside the container, which runs with the caller's ids.
  const Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid())
    refuse(fmt::format("{} \"{}\": {} (checked with your rights; docker would mount it as root)", what,
                       text::printable(path), std::strerror(errno)));
  // The mount's own root must be one the caller may use: search a directory, read a file.
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 ||
      ::faccessat(fd.get(), "", S_ISDIR(info.st_mode) ? X_OK : R_OK, AT_EACCESS | AT_EMPTY_PATH) != 0)
    refuse(fmt::format("{} \"{}\": {} (checked with your rights; docker would mount it as root)", what,
                       text::printable(path), std::strerror(errno)));
  std::string real(4096, '\0');
  const std::string link = fmt::format("/proc/self/fd/{}", fd.get());
  const ssize_t n = ::readlink(link.c_str(), real.data(), real.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= real.size() || real.front() != '/')
    refuse(fmt::format("{} \"{}\": cannot tell its real path", what, text::printable(path)));
  real.resize(static_cast<std::size_t>(n));
  if (real.ends_with(" (deleted)")) refuse(fmt::format("{} \"{}\": it was removed", what, text::printable(path)));
  if (real.find(':') != std::string::npos || real.find(',') != std::string::npos)
    refuse(fmt::format("{} \"{}\": its real path {} holds ':' or ','", what, text::printable(path),
                       text::printable(real)));
  // Pinned, docker mounts the object opened here, not whatever the path names by then.
  return pins != nullptr ? pins->pin(fd.get()) : real;
}

CallerMounts check_caller_mounts(const Options& options, const std::string& workdir, MountPins* pins) {
  CallerMounts mounts;
  for (const std::string& v : options.volumes) mounts.volumes.push_back(with_volume_source(v, "--volume", pins));
  // docker_opts: rewritten in docker's long spelling, so that what docker reads is what was checked.
  for (DockerArg arg : caller_docker_args(options.docker_opts)) {
    if (arg.name == "volume" && arg.value) arg.value = with_volume_source(*arg.value, "-v", pins);
    if (arg.name == "mount" && arg.value) arg.value = with_mount_source(*arg.value, "--mount", pins);
    mounts.docker_opts.push_back(canonical(arg));
  }
  mounts.workdir_source = resolve_as_caller(workdir, "the working directory", pins);
  return mounts;
}

}  // namespace gpurun
