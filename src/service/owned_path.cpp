#include "owned_path.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "notification_spool.hpp"

namespace gpurun {

void check_owned_ancestry(const std::filesystem::path& dir, std::string_view use, std::string_view instead) {
  std::filesystem::path at = std::filesystem::absolute(dir.empty() ? "." : dir);
  for (;; at = at.parent_path()) {
    struct stat info {};
    if (::stat(at.c_str(), &info) != 0)
      throw Error(fmt::format("cannot {}: {}: {}", use, at.string(), std::strerror(errno)));
    // A group's write is root's group's or gpurund's own (a setgid 2775 of root's group); a
    // sticky directory (/tmp) lets nobody rename another's entry.
    const bool group_writes = (info.st_mode & S_IWGRP) != 0 && info.st_gid != 0 && info.st_gid != ::getegid();
    const bool others_write = (group_writes || (info.st_mode & S_IWOTH) != 0) && (info.st_mode & S_ISVTX) == 0;
    if ((info.st_uid != 0 && info.st_uid != ::geteuid()) || others_write)
      throw Error(fmt::format("cannot {}: another user may write {} (owner uid {}, mode {:o}); {}", use, at.string(),
                              info.st_uid, info.st_mode & 07777, instead));
    if (at == at.parent_path()) break;  // "/"
  }
}

Fd lock_state_dir(const std::string& dir) {
  // One another user owns or may write, or one they may swap (a directory of theirs above it, a
  // link of theirs), could hand gpurund a database they read (everyone's commands, past
  // history_visibility) or swap its files: it must be gpurund's alone.
  std::filesystem::path given = std::filesystem::path(dir).lexically_normal();
  if (!given.has_filename()) given = given.parent_path();  // "/var/lib/gpurun/"
  check_owned_ancestry(given.parent_path(), fmt::format("record into {}", dir),
                       "give a --state-dir of gpurund's alone, such as /var/lib/gpurun");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(fmt::format("cannot create the state directory {}: {}", dir, std::strerror(errno)));
  struct stat link {};
  if (::lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && link.st_uid != 0 && link.st_uid != ::geteuid())
    throw Error(
        fmt::format("cannot record into {}: it is a link of another user's (uid {}); give a --state-dir of "
                    "gpurund's alone, such as /var/lib/gpurun",
                    dir, link.st_uid));
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0)
    throw Error(fmt::format("cannot use the state directory {}: {}", dir, std::strerror(errno)));
  if (!S_ISDIR(info.st_mode)) throw Error(fmt::format("the state directory {} is not a directory", dir));
  if (info.st_uid != ::geteuid())
    throw Error(
        fmt::format("cannot record into {}: it belongs to another user (uid {}); give a --state-dir of "
                    "gpurund's alone, such as /var/lib/gpurun",
                    dir, info.st_uid));
  // Its own, made private (0700, as systemd's StateDirectoryMode): a group's write bit taken away
  // too, as an admin's 0775 or a umask of 002 left it.
  if ((info.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    throw Error(fmt::format("cannot make the state directory {} private (0700): {}", dir, std::strerror(errno)));
  for (const char* name : {"gpurund.db", "gpurund.db-wal", "gpurund.db-shm", "gpurund.lock",
                           "notifications-undelivered.json", kAskedFile}) {
    struct stat file {};
    if (::lstat((dir + "/" + name).c_str(), &file) == 0 && (file.st_uid != ::geteuid() || !S_ISREG(file.st_mode)))
      throw Error(fmt::format("cannot record into {}: {} is not a file of gpurund's own (owner uid {}); move it away",
                              dir, name, file.st_uid));
  }
  const std::string path = dir + "/gpurund.lock";
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) throw Error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    throw Error(
        fmt::format("another gpurund records into {} already (it holds {}); stop it first, or give this one "
                    "another --state-dir",
                    dir, path));
  return fd;
}

}  // namespace gpurun
