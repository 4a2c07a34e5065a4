#pragma once
// Bind mounts for a caller under sudo (config/caller.hpp). The Docker daemon mounts as root, so a
// mount would let the caller reach a path their own rights do not (a file under another user's
// private directory, or anything a symlink of theirs points to). Every host path the launch
// mounts, the working directory included, is therefore opened with the caller's rights (gpurun
// runs with their effective ids, util/privileges.hpp): search permission on every directory on
// the way, symlinks followed as the caller. Docker is then given the resolved real path, never
// the path as written, and no named volume (they are shared by every user of the engine).
// docs/sudo.md explains what this does and does not cover (a path swapped after the check).
#include <string>
#include <vector>

namespace gpurun {

struct Options;

struct CallerMounts {
  std::vector<std::string> volumes;      // Options::volumes, each with its real host path
  std::vector<std::string> docker_opts;  // Options::docker_opts, -v and --mount sources likewise
  std::string workdir_source;            // the working directory's real path
};

// Checks and resolves every mount of `options` and the working directory `workdir`. Throws
// Error (125) "not allowed under sudo: ..." naming the mount, without reading any file.
CallerMounts check_caller_mounts(const Options& options, const std::string& workdir);

// The real path of `path` as its caller resolves it, or Error; `what` names it in the message.
std::string resolve_as_caller(const std::string& path, const std::string& what);

}  // namespace gpurun
