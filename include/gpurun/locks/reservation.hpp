#pragma once
// GPU reservations between concurrent launches, with nothing but the kernel's advisory locks.
//
// A launch takes the selection lock (one launch picks at a time), sees which GPUs other launches
// hold, picks, and takes an flock on each chosen GPU's file (named by UUID). Those descriptors
// are inherited across exec, so the docker client holds them for as long as the job is attached,
// and the kernel drops them when it exits or crashes: no stale locks to clean up.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/gpu/gpu.hpp"
#include "gpurun/util/fd.hpp"

namespace gpurun {

inline constexpr const char* kDefaultLockDir = "/run/lock/gpurun";
inline constexpr const char* kDefaultLockGroup = "docker";

// Which lock directory, and who besides root may write it.
struct LockDirSpec {
  std::string dir;                        // empty: kDefaultLockDir
  std::string group = kDefaultLockGroup;  // members may launch directly (setting lock_group)
  bool shared = true;  // the machine's (default or system file); false: a user's own, set apart knowingly
};

// What the directory is for: a launch writes reservations; status, pick and dry runs only look.
enum class LockDirUse { launch, read };

// The lock directory to use. There is one per machine, shared by root, direct launchers (members
// of `group`, who are root's equals through the engine anyway) and sudo callers, so that all of
// them see each other's reservations: it must be root's, and writable by nobody but root and
// `group` (sudo mode trusts nothing else). Root creates it as root:GROUP 2775 (0755 when there is
// no such group) and mends one of its own with another mode (a legacy 1777, say), with a warning
// where others could write it. Anyone else is refused, with how to mend it, rather than sent to
// a directory of their own: there is no fallback, since a second directory is a second set of
// reservations. Only a user's own explicit non-root choice (`spec.dir` as non-root) is taken as
// it is, created 0755 if missing. Throws Error naming the directory and the mend; never follows
// a symbolic link. For LockDirUse::read a missing directory is returned as is (no reservations).
std::string prepare_lock_dir(const LockDirSpec& spec, LockDirUse use = LockDirUse::launch);

// An open, locked file; unlocked and closed on destruction (closing the last descriptor drops
// the flock).
class FileLock {
 public:
  FileLock() = default;
  explicit FileLock(Fd fd) : fd_(std::move(fd)) {}
  bool held() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // Keeps the descriptor open across exec (the docker client inherits the lock).
  void keep_across_exec() const;

 private:
  Fd fd_;
};

// Waits (up to `patience`) for the selection lock of `lock_dir`.
FileLock lock_selection(const std::string& lock_dir, std::chrono::milliseconds patience);

// GPUs whose reservation another launch holds, with a reason naming the holder where the kernel
// says who it is. Call with the selection lock held.
ExternalClaims reserved_gpus(const std::string& lock_dir, const std::vector<Gpu>& gpus);

// Reserves the given GPUs; throws Error if one is held (which the selection lock prevents).
std::vector<FileLock> reserve_gpus(const std::string& lock_dir, const std::vector<Gpu>& gpus);

// The lock file of a GPU: "gpu-<UUID>.lock" ("gpu-index-<N>.lock" without a UUID).
std::string reservation_file(const std::string& lock_dir, const Gpu& gpu);

}  // namespace gpurun
