#include "locks/reservation.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "util/error.hpp"
#include "util/privileges.hpp"
#include "util/proc_info.hpp"
#include "util/text.hpp"

namespace gpurun {
namespace {

// Under sudo (acting for a caller) reservations are root's alone: a directory only root may
// write, files only root may open, so that nobody holds a GPU except through gpurun.
bool root_only_locks() { return acting_for_caller(); }

// Why `dir` cannot serve as the lock directory; empty when it can (it is created if missing).
std::string unusable_because(const std::string& dir) {
  struct stat info {};
  const mode_t mode = root_only_locks() ? 0755 : 01777;
  if (::lstat(dir.c_str(), &info) != 0) {
    if (errno != ENOENT) return std::strerror(errno);
    if (::mkdir(dir.c_str(), mode) == 0) {
      ::chmod(dir.c_str(), mode);  // mkdir's mode went through the umask
    } else if (errno != EEXIST) {
      return fmt::format("cannot create it: {}", std::strerror(errno));
    }
    if (::lstat(dir.c_str(), &info) != 0) return std::strerror(errno);
  }
  if (S_ISLNK(info.st_mode)) return "it is a symbolic link, which gpurun does not follow";
  if (!S_ISDIR(info.st_mode)) return "it is not a directory";
  if (root_only_locks() && (info.st_uid != 0 || (info.st_mode & (S_IWGRP | S_IWOTH)) != 0))
    return "under sudo the reservations must live in a directory only root may write (chown root and chmod 755 "
           "it, or set \"lock_dir\" in /etc/gpurun/config.json to one such as /run/gpurun)";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return fmt::format("it is not writable: {}", std::strerror(errno));
  return {};
}

// Opens a lock file without following symlinks or blocking on a planted FIFO. Read-only is
// enough for flock, and lets every user lock a file another user created.
Fd open_lock_file(const std::string& path, std::string& why) {
  constexpr int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  Fd fd(::open(path.c_str(), flags));
  if (!fd.valid() && errno == ENOENT) {
    fd.reset(::open(path.c_str(), flags | O_CREAT | O_EXCL, root_only_locks() ? 0600 : 0644));
    if (!fd.valid() && errno == EEXIST) fd.reset(::open(path.c_str(), flags));
  }
  if (!fd.valid()) {
    why = errno == ELOOP ? "it is a symbolic link, which gpurun does not follow" : std::strerror(errno);
    return fd;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    why = "it is not a regular file";
    return Fd();
  }
  return fd;
}

bool try_lock(int fd) {
  int rc = 0;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

// Who holds the flock on the open file `fd`, from /proc/locks: "pid 123, alice, docker".
std::string lock_holder(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return {};
  const std::string device = fmt::format("{:02x}:{:02x}:{}", major(info.st_dev), minor(info.st_dev), info.st_ino);
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid, where;
    fields >> id >> kind >> mode >> access >> pid >> where;
    if (kind != "FLOCK" || where != device) continue;
    const auto number = text::parse_integer(pid);
    std::string holder = "pid " + pid;
    if (const auto user = number ? process_user(static_cast<long>(*number)) : std::nullopt) holder += ", " + *user;
    if (const std::string command = number ? process_command(static_cast<long>(*number)) : ""; !command.empty())
      holder += ", " + command;
    return holder;
  }
  return {};
}

}  // namespace

void FileLock::keep_across_exec() const {
  const int flags = ::fcntl(fd_.get(), F_GETFD);
  if (flags >= 0) ::fcntl(fd_.get(), F_SETFD, flags & ~FD_CLOEXEC);
}

std::string prepare_lock_dir(const std::string& requested) {
  const AsRoot root;  // under sudo: root's directory (see root_only_locks)
  if (!requested.empty()) {
    const std::string why = unusable_because(requested);
    if (!why.empty()) throw Error(fmt::format("lock directory {} cannot be used: {}", requested, why));
    return requested;
  }
  std::string reasons;
  for (const char* dir : {kDefaultLockDir, kFallbackLockDir}) {
    const std::string why = unusable_because(dir);
    if (why.empty()) return dir;
    reasons += fmt::format("{}{}: {}", reasons.empty() ? "" : "; ", dir, why);
  }
  throw Error(fmt::format("no usable lock directory ({}); pass --lock-dir DIR or set GPURUN_LOCK_DIR", reasons));
}

std::string reservation_file(const std::string& lock_dir, const Gpu& gpu) {
  std::string name;
  for (char c : gpu.uuid) name += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-') ? c : '_';
  return name.empty() ? fmt::format("{}/gpu-index-{}.lock", lock_dir, gpu.index)
                      : fmt::format("{}/gpu-{}.lock", lock_dir, name);
}

FileLock lock_selection(const std::string& lock_dir, std::chrono::milliseconds patience) {
  const AsRoot root;
  const std::string path = lock_dir + "/select.lock";
  std::string why;
  FileLock lock(open_lock_file(path, why));
  if (!lock.held()) throw Error(fmt::format("cannot open the selection lock {}: {}", path, why));
  const auto deadline = std::chrono::steady_clock::now() + patience;
  auto pause = std::chrono::milliseconds(1);
  while (!try_lock(lock.fd())) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error(fmt::format("another gpurun launch ({}) has held the selection lock {} for over {} s; try again",
                              lock_holder(lock.fd()), path, patience.count() / 1000));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return lock;
}

ExternalClaims reserved_gpus(const std::string& lock_dir, const std::vector<Gpu>& gpus) {
  const AsRoot root;
  ExternalClaims claims;
  for (const Gpu& gpu : gpus) {
    std::string why;
    FileLock probe(open_lock_file(reservation_file(lock_dir, gpu), why));
    if (!probe.held()) {
      claims[gpu.index].push_back(fmt::format("its reservation file cannot be used: {}", why));
    } else if (!try_lock(probe.fd())) {
      const std::string holder = lock_holder(probe.fd());
      claims[gpu.index].push_back(holder.empty() ? "reserved by another gpurun launch"
                                        : fmt::format("reserved by another gpurun launch ({})", holder));
    }
  }
  return claims;
}

std::vector<FileLock> reserve_gpus(const std::string& lock_dir, const std::vector<Gpu>& gpus) {
  const AsRoot root;
  std::vector<FileLock> locks;
  for (const Gpu& gpu : gpus) {
    std::string why;
    const std::string path = reservation_file(lock_dir, gpu);
    FileLock lock(open_lock_file(path, why));
    if (!lock.held()) throw Error(fmt::format("cannot reserve GPU {}: {}: {}", gpu.index, path, why));
    if (!try_lock(lock.fd())) throw Error(fmt::format("GPU {} was reserved by another launch meanwhile", gpu.index));
    locks.push_back(std::move(lock));
  }
  return locks;
}

}  // namespace gpurun
