#pragma once
// Bind mounts for a caller under sudo (gpurun/config/caller.hpp). The Docker daemon mounts as root, so a
// mount would let the caller reach a path their own rights do not (a file under another user's
// private directory, or anything a symlink of theirs points to). Every host path the launch
// mounts, the working directory included, is therefore opened with the caller's rights (gpurun
// runs with their effective ids, gpurun/util/privileges.hpp): search permission on every directory on
// the way, symlinks followed as the caller. Docker is then given the resolved real path, never
// the path as written, and no named volume (they are shared by every user of the engine). For
// the launch itself each source is pinned (job/mount_pins.hpp), so that a path swapped after the
// check cannot change what docker mounts. docs/sudo.md explains what this covers.
#include <string>
#include <vector>

namespace gpurun {

struct Options;
class MountPins;

struct CallerMounts {
  std::vector<std::string> volumes;       // Options::volumes, each with its real host path
  std::vector<std::string> docker_opts;   // Options::docker_opts, -v and --mount sources likewise
  std::string workdir_source;             // the working directory's real path
  std::vector<std::string> real_sources;  // the -v, --mount and working directory's real paths (what pins hold)
};

// Checks and resolves every mount of `options` and the working directory `workdir`. Throws
// Error (125) "not allowed under sudo: ..." naming the mount, without reading any file. With
// `pins`, each source is the pin of what was checked instead of its real path.
CallerMounts check_caller_mounts(const Options& options, const std::string& workdir, MountPins* pins = nullptr);

// The real path of `path` as its caller resolves it, or Error; `what` names it in the message.
// With `pins`: the pin of the object opened (a root-only path) instead.
// `real_path`: receives the real path, pinned or not.
std::string resolve_as_caller(const std::string& path, const std::string& what, MountPins* pins = nullptr,
                              std::string* real_path = nullptr);

}  // namespace gpurun
