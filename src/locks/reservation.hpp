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

#include "gpu/gpu.hpp"
#include "util/fd.hpp"

namespace gpurun {

inline constexpr const char* kDefaultLockDir = "/run/lock/gpurun";
inline constexpr const char* kFallbackLockDir = "/tmp/gpurun-locks";

// The lock directory to use: `requested` if set (created if missing), else the default, else the
// fallback where the default cannot be created or written. New directories get mode 1777 (every
// user may lock, nobody may delete another's files). Throws Error when none is usable, or when
// the path is a symbolic link or not a directory.
std::string prepare_lock_dir(const std::string& requested);

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
