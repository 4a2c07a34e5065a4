#include "mount_pins.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "gpurun/engine/docker_command.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what) {
  throw Error(fmt::format("cannot pin the mounts under sudo: {}: {}", what, std::strerror(errno)));
}

// The root-only parent: made if missing; a directory root owns that no one else may write.
void make_root_only(const std::string& root) {
  std::error_code ignored;
  fs::create_directories(fs::path(root).parent_path(), ignored);
  if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) fail(root);
  struct stat info {};
  if (::lstat(root.c_str(), &info) != 0) fail(root);
  if (!S_ISDIR(info.st_mode) || info.st_uid != 0 || (info.st_mode & 077) != 0) {
    errno = EPERM;
    fail(root + " is not a directory only root can use");
  }
}

// Unmounts and removes one pin directory's mount points, then the directory.
void remove_pin_dir(const std::string& dir) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string point = entry.path().string();
    ::umount2(point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);  // EINVAL: not mounted (any more)
    fs::remove(entry.path(), error);
  }
  fs::remove(dir, error);
}

}  // namespace

void clear_stale_pins(const std::string& root) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();  // PID.RANDOM (PID alone before)
    const auto pid = text::parse_integer(name.substr(0, name.find('.')));
    if (!pid || *pid <= 0) continue;
    // Ours too: a gpurun killed before had our pid, and our own directory is not made yet.
    if (*pid == ::getpid() || (::kill(static_cast<pid_t>(*pid), 0) != 0 && errno == ESRCH))
      remove_pin_dir(entry.path().string());
  }
}

MountPins::MountPins(std::string root) : root_(std::move(root)) {}

MountPins::~MountPins() { release(); }

std::string MountPins::pin(int fd) {
  const AsRoot as_root;
  if (dir_.empty()) {
    make_root_only(root_);
    clear_stale_pins(root_);
    // Never a name used before: a detached job's container keeps naming its pins after they are
    // gone, and an admin's `docker start` of it must not find another launch's pins there.
    dir_ = fmt::format("{}/{}.{}", root_, ::getpid(), random_suffix());
    if (::mkdir(dir_.c_str(), 0700) != 0) fail(dir_);
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail("a mount source");
  std::string point = fmt::format("{}/{}", dir_, points_.size());
  if (S_ISDIR(info.st_mode)) {
    if (::mkdir(point.c_str(), 0700) != 0) fail(point);
  } else {
    const Fd file(::open(point.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file.valid()) fail(point);
  }
  points_.push_back(point);
  // The magic link is the object the caller opened, whatever its path has become since.
  const std::string source = fmt::format("/proc/self/fd/{}", fd);
  if (::mount(source.c_str(), point.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) fail("bind mount " + point);
  return point;
}

void MountPins::release_after_exec() {
  if (points_.empty()) return;
  const pid_t client = ::getpid();
  const pid_t watcher = ::fork();
  if (watcher < 0) return;  // the pins stay until a later launch clears them
  if (watcher > 0) {
    points_.clear();  // the watcher's now
    dir_.clear();
    return;
  }
  // The watcher: out of the terminal's session and signals, holding none of our descriptors
  // (a reservation's lock or a pipe a caller reads must end with the client, not with us).
  ::setsid();
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) (void)::signal(signal, SIG_IGN);
  const int null = ::open("/dev/null", O_RDWR);
  for (int target : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(null, target);
  ::close_range(3, ~0U, 0);
  while (::getppid() == client) ::sleep(1);
  try {
    release();
  } catch (...) {
  }
  ::_exit(0);
}

void MountPins::release() {
  if (dir_.empty()) return;
  try {
    const AsRoot as_root;
    remove_pin_dir(dir_);
  } catch (const Error&) {
    // a later launch clears them (clear_stale_pins)
  }
  points_.clear();
  dir_.clear();
}

}  // namespace gpurun
