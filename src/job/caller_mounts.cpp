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

[[noreturn]] void refuse(const std::string& what) { throw Refusal("not allowed under sudo: " + what); }

// The modes a caller's -v may give: read-only or not, propagation into the container, macOS's
// consistency. Others have root do more than mount: :z/:Z relabel the tree for SELinux, podman's
// :U gives it to the container's user, :O and idmap overlay or remap it.
bool volume_mode_ok(std::string_view mode) {
  for (std::string_view word :
       {"ro", "rw", "private", "rprivate", "slave", "rslave", "cached", "delegated", "consistent"})
    if (mode == word) return true;
  return false;
}

// "/a:/b:ro" with its host side replaced.
std::string with_volume_source(const std::string& value, const std::string& what, MountPins* pins,
                               std::vector<std::string>& reals) {
  if (value.find(':') == std::string::npos) return value;  // an anonymous volume: the container's own
  const std::string source = volume_source(value);
  if (!source.starts_with("/"))
    refuse(fmt::format("{} \"{}\": named volumes are shared by every user of the engine; mount a directory of yours",
                       what, text::printable(value)));
  const std::string rest = value.substr(source.size());  // ":/b" or ":/b:ro"
  const std::vector<std::string_view> parts = text::split(std::string_view(rest).substr(1), ':');
  if (parts.size() > 2)
    refuse(fmt::format("{} \"{}\": give SOURCE:TARGET or SOURCE:TARGET:MODE", what, text::printable(value)));
  if (parts.size() == 2)
    for (std::string_view mode : text::split(parts[1], ','))
      if (!volume_mode_ok(mode))
        refuse(fmt::format("{} \"{}\": the mode \"{}\" (ro, rw, private, rprivate, slave and rslave are allowed)", what,
                           text::printable(value), text::printable(mode)));
  return resolve_as_caller(source, what, pins, &reals.emplace_back()) + rest;
}

// "type=bind,src=/a,dst=/b" with its source replaced (a tmpfs has none), its keys and type in
// lower case: what docker reads is what sudo_rules checked, in any case it was typed.
std::string with_mount_source(const std::string& value, const std::string& what, MountPins* pins,
                              std::vector<std::string>& reals) {
  if (value.find('"') != std::string::npos)
    refuse(fmt::format("{} \"{}\": quoted fields", what, text::printable(value)));
  std::string out;
  for (std::string_view field : text::split(value, ',')) {
    const std::size_t eq = field.find('=');
    const std::string key = text::to_lower(field.substr(0, eq));
    if (!out.empty()) out += ',';
    out += key;
    if (eq == std::string_view::npos) continue;
    const std::string field_value(field.substr(eq + 1));
    out += '=';
    if (key == "source" || key == "src")
      out += resolve_as_caller(field_value, what, pins, &reals.emplace_back());
    else if (key == "type")
      out += text::to_lower(field_value);
    else
      out += field_value;
  }
  return out;
}

}  // namespace

std::string resolve_as_caller(const std::string& path, const std::string& what, MountPins* pins,
                              std::string* real_path) {
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
  if (real_path != nullptr) *real_path = real;
  // Pinned, docker mounts the object opened here, not whatever the path names by then.
  return pins != nullptr ? pins->pin(fd.get()) : real;
}

CallerMounts check_caller_mounts(const Options& options, const std::string& workdir, MountPins* pins) {
  CallerMounts mounts;
  for (const std::string& v : options.volumes)
    mounts.volumes.push_back(with_volume_source(v, "--volume", pins, mounts.real_sources));
  // docker_opts: rewritten in docker's long spelling, so that what docker reads is what was checked.
  for (DockerArg arg : caller_docker_args(options.docker_opts)) {
    if (arg.name == "volume" && arg.value) arg.value = with_volume_source(*arg.value, "-v", pins, mounts.real_sources);
    if (arg.name == "mount" && arg.value)
      arg.value = with_mount_source(*arg.value, "--mount", pins, mounts.real_sources);
    mounts.docker_opts.push_back(canonical(arg));
  }
  mounts.workdir_source =
      resolve_as_caller(workdir, "the working directory", pins, &mounts.real_sources.emplace_back());  // mounted too
  return mounts;
}

}  // namespace gpurun
