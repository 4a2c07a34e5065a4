#include "gpurun/locks/reservation.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gpurun/locks/wait_queue.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/proc_info.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

constexpr mode_t kGroupMode = 02775;  // root and the lock group write; setgid: files get the group
constexpr mode_t kRootMode = 0755;    // no such group: root alone writes (direct users use sudo)
// Root and the lock group may open (flock needs only a read); others see a reservation through
// /proc/locks, without the power to take or hold one.
constexpr mode_t kLockFileMode = 0640;

std::string describe(const struct stat& info) {
  return fmt::format("{}:{} {:o}", user_name(info.st_uid), group_name(info.st_gid), info.st_mode & 07777);
}

// Whether a directory with `info` may hold the machine's reservations: root's, and writable by
// root and `group` alone.
bool trusted(const struct stat& info, std::optional<gid_t> group) {
  if (info.st_uid != 0 || (info.st_mode & S_IWOTH) != 0) return false;
  return (info.st_mode & S_IWGRP) == 0 || (group && info.st_gid == *group);
}

// Root makes its directory root:GROUP 2775 (or 0755), and its lock files root:GROUP 0640, so that
// a directory an older gpurun left (1777, or 0755 with root-only files) serves everyone again.
// The names gpurun gives what it keeps in a lock directory: the selection lock, reservations,
// and wait-queue tickets (locks/wait_queue.cpp).
bool made_by_gpurun(std::string_view name) {
  return name == "select.lock" || (name.starts_with("gpu-") && name.ends_with(".lock")) ||
         name.starts_with(kTicketPrefix) || (name.starts_with("draft-") && name.substr(6).starts_with(kTicketPrefix));
}

// The names in a directory, but "." and "..".
std::vector<std::string> entry_names(int dir_fd) {
  std::vector<std::string> names;
  Fd entries_fd(::dup(dir_fd));
  DIR* entries = entries_fd.valid() ? ::fdopendir(entries_fd.release()) : nullptr;
  if (entries == nullptr) return names;
  // readdir_r is deprecated; readdir is safe on a stream no other thread reads.
  // cppcheck-suppress readdirCalled
  while (const dirent* entry = ::readdir(entries)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(entries);
  return names;
}

void normalize_as_root(int dir_fd, const struct stat& info, const std::string& dir, std::optional<gid_t> group) {
  const gid_t gid = group.value_or(0);
  const mode_t mode = group ? kGroupMode : kRootMode;
  if (info.st_uid == 0 && info.st_gid == gid && (info.st_mode & 07777) == mode) return;
  const std::vector<std::string> names = entry_names(dir_fd);
  // Root changes the directory's owner and mode and its files': never of a directory that holds
  // anything else (a --lock-dir of /etc, /proc or a home typed by mistake).
  if (const auto other = std::find_if_not(names.begin(), names.end(), made_by_gpurun); other != names.end())
    throw Error(fmt::format(
        "lock directory {} cannot be used: it is {} and holds {}, which gpurun did not make; "
        "as root gpurun makes its lock directory root:{} {:o}, so it must be one of its own: "
        "give a new or empty directory (the default is {})",
        dir, describe(info), text::printable(*other, 80), group ? group_name(gid) : "root", mode, kDefaultLockDir));
  if ((info.st_mode & S_IWOTH) != 0)
    spdlog::warn(
        "lock directory {} was {}, writable by anyone, which sudo gpurun cannot trust: made it {} so that "
        "every launch on this machine shares one set of reservations",
        dir, describe(info), group ? fmt::format("root:{} {:o}", group_name(gid), mode) : "root:root 755");
  if (::fchown(dir_fd, 0, gid) != 0 || ::fchmod(dir_fd, mode) != 0)
    throw Error(fmt::format("lock directory {} cannot be used: cannot make it root's: {}", dir, std::strerror(errno)));
  for (const std::string& name : names) {
    Fd file(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat file_info {};
    if (!file.valid() || ::fstat(file.get(), &file_info) != 0 || !S_ISREG(file_info.st_mode)) continue;
    if (::fchown(file.get(), 0, gid) != 0 || ::fchmod(file.get(), kLockFileMode) != 0)
      spdlog::warn("lock file {}/{}: cannot make it root's: {}", dir, text::printable(name, 80), std::strerror(errno));
  }
}

// The mend for a directory that is not trusted, for whoever reads the error.
std::string mend(const std::string& dir, const struct stat& info, std::optional<gid_t> group,
                 const std::string& group_word) {
  // Another's directory may hold their lock files, which they may hold open (and locked) whoever
  // owns them afterwards: it goes aside whole, and gpurun as root makes it anew.
  if (info.st_uid != 0)
    return fmt::format(
        "an admin moves it aside with `sudo mv {0} {0}.untrusted` (the next gpurun run as root makes it anew, "
        "root's); owned by someone else, its lock files may be held open by them",
        dir);
  const std::string owner = group ? "root:" + group_word : "root:root";
  return fmt::format(
      "an admin mends it with `sudo chown {} {} && sudo chmod {:o} {}` (or any gpurun command run as "
      "root, which does the same)",
      owner, dir, group ? kGroupMode : kRootMode, dir);
}

// Opens (creating, as root or for a non-root user's own choice) the directory, without following
// a symbolic link. Returns an invalid Fd, with `missing` set, when it does not exist and may not be made.
Fd open_directory(const std::string& dir, bool may_create, bool& missing) {
  missing = false;
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.valid() || errno != ENOENT) return fd;
  if (!may_create) {
    missing = true;
    return fd;
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(fmt::format("lock directory {} cannot be used: cannot create it: {}", dir, std::strerror(errno)));
  fd.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.valid() && ::geteuid() != 0) ::fchmod(fd.get(), kRootMode);  // a user's own: theirs to write
  return fd;
}

// Opens a lock file without following symlinks or blocking on a planted FIFO. Read-only is
// enough for flock, and lets every user lock a file another user created.
// With `create` false a missing file gives an invalid Fd and an empty `why`: nobody reserved it.
Fd open_lock_file(const std::string& path, std::string& why, bool create = true) {
  constexpr int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  Fd fd(::open(path.c_str(), flags));
  if (!fd.valid() && errno == ENOENT) {
    if (!create) return fd;
    fd.reset(::open(path.c_str(), flags | O_CREAT | O_EXCL, kLockFileMode));
    if (fd.valid()) ::fchmod(fd.get(), kLockFileMode);  // whatever the umask: every launcher opens it
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

bool try_flock(int fd, int operation) {
  int rc = 0;
  do {
    rc = ::flock(fd, operation | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

bool try_lock(int fd) { return try_flock(fd, LOCK_EX); }

// A process holding an flock, as /proc shows it.
struct LockHolder {
  std::string pid;
  std::string user;     // empty when unknown
  std::string command;  // empty when unknown

  // "pid 123, alice, docker"
  std::string str() const {
    std::string text = "pid " + pid;
    for (const std::string* part : {&user, &command})
      if (!part->empty()) text += ", " + *part;
    return text;
  }
};

// Who holds an flock on the file `info` describes, from /proc/locks; nullopt when nobody does.
std::optional<LockHolder> lock_holder(const struct stat& info) {
  const std::string device = fmt::format("{:02x}:{:02x}:{}", major(info.st_dev), minor(info.st_dev), info.st_ino);
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    std::istringstream fields(line);
    std::string id, kind, mode, access, pid, where;
    fields >> id >> kind >> mode >> access >> pid >> where;
    // A reservation and the selection lock are exclusive; a shared lock is someone looking.
    if (kind != "FLOCK" || access != "WRITE" || where != device) continue;
    LockHolder holder{.pid = pid, .user = {}, .command = {}};
    if (const auto number = text::parse_integer(pid)) {
      holder.user = process_user(static_cast<long>(*number)).value_or("");
      holder.command = process_command(static_cast<long>(*number));
    }
    return holder;
  }
  return std::nullopt;
}

std::optional<LockHolder> lock_holder(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return std::nullopt;
  return lock_holder(info);
}

Claim reserved_claim(const std::optional<LockHolder>& holder) {
  if (!holder) return {.reason = "reserved by another gpurun launch", .holder = std::nullopt};
  return {.reason = fmt::format("reserved by another gpurun launch ({})", holder->str()),
          .holder = Holder{.kind = Holder::Kind::reservation, .user = holder->user, .name = holder->command}};
}

}  // namespace

void FileLock::keep_across_exec() const {
  const int flags = ::fcntl(fd_.get(), F_GETFD);
  if (flags >= 0) ::fcntl(fd_.get(), F_SETFD, flags & ~FD_CLOEXEC);
}

std::string prepare_lock_dir(const LockDirSpec& spec, LockDirUse use) {
  const AsRoot root;  // under sudo: root's directory, seen with root's eyes
  std::string dir = spec.dir.empty() ? kDefaultLockDir : spec.dir;
  const bool as_root = ::geteuid() == 0;
  const bool own_choice = !as_root && !spec.shared;  // a user's private set: theirs to split off
  const auto group = group_id(spec.group);
  bool missing = false;
  const Fd fd = open_directory(dir, as_root || own_choice, missing);
  if (missing) {
    if (use == LockDirUse::read) return dir;  // nobody has reserved anything yet
    throw Error(
        fmt::format("lock directory {} does not exist, and only root may create it (one set of reservations "
                    "per machine): launch with `sudo gpurun`, or ask an admin to run `sudo systemd-tmpfiles "
                    "--create` (gpurun's tmpfiles.d line makes it at boot)",
                    dir));
  }
  if (!fd.valid()) {
    const int error = errno;
    struct stat link {};
    if (error == ELOOP || (error == ENOTDIR && ::lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode)))
      throw Error(
          fmt::format("lock directory {} cannot be used: it is a symbolic link, which gpurun does not follow", dir));
    if (error == ENOTDIR) throw Error(fmt::format("lock directory {} cannot be used: it is not a directory", dir));
    throw Error(fmt::format("lock directory {} cannot be used: {}", dir, std::strerror(error)));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    throw Error(fmt::format("lock directory {} cannot be used: {}", dir, std::strerror(errno)));
  if (as_root) {
    if (info.st_uid != 0)
      throw Error(
          fmt::format("lock directory {} cannot be used: it is {}, not root's, so whoever owns it could "
                      "forge or hide reservations; {}",
                      dir, describe(info), mend(dir, info, group, spec.group)));
    normalize_as_root(fd.get(), info, dir, group);
    return dir;
  }
  if (!own_choice && !trusted(info, group))
    throw Error(
        fmt::format("lock directory {} cannot be used: it is {}, which sudo gpurun does not trust, so its "
                    "launches and yours would keep separate reservations; {}",
                    dir, describe(info), mend(dir, info, group, spec.group)));
  if (use == LockDirUse::launch && ::faccessat(fd.get(), ".", W_OK | X_OK, 0) != 0)
    throw Error(fmt::format("you cannot write the lock directory {} ({}): launch with `sudo gpurun`{}", dir,
                            describe(info),
                            group ? fmt::format(", or ask an admin to add you to group {}", spec.group) : ""));
  return dir;
}

std::string reservation_file(const std::string& lock_dir, const Gpu& gpu) {
  if (gpu.uuid.empty()) return fmt::format("{}/gpu-index-{}.lock", lock_dir, gpu.index);
  // Built by hand: a launch names each GPU's file twice (the look, the reservation).
  std::string path = lock_dir;
  path.reserve(lock_dir.size() + gpu.uuid.size() + 10);
  path += "/gpu-";
  for (char c : gpu.uuid) {
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    path += kept ? c : '_';
  }
  path += ".lock";
  return path;
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
    if (std::chrono::steady_clock::now() >= deadline) {
      const auto holder = lock_holder(lock.fd());
      throw Error(fmt::format("another gpurun launch{} has held the selection lock {} for over {} s; try again",
                              holder ? " (" + holder->str() + ")" : "", path, patience.count() / 1000));
    }
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
    const std::string path = reservation_file(lock_dir, gpu);
    FileLock probe(open_lock_file(path, why, false));
    if (!probe.held() && why.empty()) continue;  // no file: never reserved
    struct stat info {};
    if (!probe.held() && why == std::strerror(EACCES) && ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      // Outside the lock group: the kernel's list of locks says whether someone holds it.
      if (const auto holder = lock_holder(info)) claims[gpu.index].push_back(reserved_claim(holder));
    } else if (!probe.held()) {
      claims[gpu.index].push_back(
          {.reason = fmt::format("its reservation file cannot be used: {}", why), .holder = {}});
    } else if (!try_flock(probe.fd(), LOCK_SH)) {
      // Shared, so that two who look never see each other as a reservation (a status beside a
      // launch's check); the lock a launch reserves with is exclusive, which a shared one is not given.
      claims[gpu.index].push_back(reserved_claim(lock_holder(probe.fd())));
    }
  }
  return claims;
}

namespace {

// The exclusive lock, waiting out someone who only looks: a status, a pick or gpurund holds its
// shared probe (reserved_gpus) for microseconds, and must not fail a launch that found the GPU free.
// A reservation is held for a job's length; 100 ms tells the two apart.
bool lock_soon(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  auto pause = std::chrono::microseconds(200);
  while (!try_lock(fd)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
  return true;
}

}  // namespace

std::vector<FileLock> reserve_gpus(const std::string& lock_dir, const std::vector<Gpu>& gpus) {
  const AsRoot root;
  std::vector<FileLock> locks;
  for (const Gpu& gpu : gpus) {
    std::string why;
    const std::string path = reservation_file(lock_dir, gpu);
    FileLock lock(open_lock_file(path, why));
    if (!lock.held()) throw Error(fmt::format("cannot reserve GPU {}: {}: {}", gpu.index, path, why));
    if (!lock_soon(lock.fd())) throw Error(fmt::format("GPU {} was reserved by another launch meanwhile", gpu.index));
    locks.push_back(std::move(lock));
  }
  return locks;
}

}  // namespace gpurun
