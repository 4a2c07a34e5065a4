#include "owned_path.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpurun/util/error.hpp"

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

}  // namespace gpurun
