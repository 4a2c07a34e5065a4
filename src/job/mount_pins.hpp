#pragma once
// Bind-mount sources pinned for a caller under sudo. gpurun checks a source by opening it with
// the caller's rights (job/caller_mounts.hpp), but the Docker daemon resolves the path again, as
// root, when it mounts it: a path the caller swaps for a symlink in between would reach what
// they may not. So gpurun hands docker no path of the caller's: it bind-mounts the very file or
// directory it opened (through /proc/self/fd) onto a mount point in a directory only root can
// use, /run/gpurun/pins/PID.RANDOM, and gives docker that. A container keeps its own copy of the
// mount, so the pins go as soon as the docker client ends; a later launch clears those of a gpurun
// that was killed. A detached job's container outlives its pins and still names them: a name is
// never used twice, so that starting it again (an admin's `docker start`) cannot mount another
// launch's pins.
#include <sys/types.h>

#include <string>
#include <vector>

namespace gpurun {

class MountPins {
 public:
  // Nothing is made on disk until the first pin(). `root` is the root-only parent directory.
  explicit MountPins(std::string root = "/run/gpurun/pins");
  ~MountPins();  // unmounts and removes the pins, unless handed to release_after_exec()
  MountPins(const MountPins&) = delete;
  MountPins& operator=(const MountPins&) = delete;

  // A root-only path that is the file or directory open as `fd` (an O_PATH descriptor the
  // caller opened). Throws Error (125) when the kernel refuses the bind mount.
  std::string pin(int fd);

  // For a launch that execs the docker client: a small watcher process (in a session of its
  // own, holding no descriptor of ours) removes the pins once this process (the client) ends.
  void release_after_exec();

  // Unmounts and removes every pin now (also what a killed gpurun left in `root`).
  void release();

 private:
  std::string root_;
  std::string dir_;                  // root_/PID.RANDOM once the first pin is made
  std::vector<std::string> points_;  // mount points in dir_
};

// Removes the pins of gpurun processes that are gone (directories root/PID.RANDOM whose PID does
// not run, or is ours: called before this process makes its own): unmounts their mount points and
// removes them.
void clear_stale_pins(const std::string& root);

}  // namespace gpurun
