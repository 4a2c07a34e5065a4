#include "dcgm_job_map.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "gpurun/service/metrics.hpp"
#include "gpurun/util/error.hpp"
#include "owned_path.hpp"

namespace gpurun {

DcgmJobMap::DcgmJobMap(const std::string& dir) : dir_(dir) {
  // Root writes and removes files there, and dcgm-exporter believes them: no other user may make
  // the directory first (in /tmp), or swap a directory above it.
  std::filesystem::path given = std::filesystem::path(dir).lexically_normal();
  if (!given.has_filename()) given = given.parent_path();
  const std::string_view instead = "give a directory of root's alone, such as /run/gpurun/dcgm-job-mapping";
  check_owned_ancestry(given.parent_path(), fmt::format("write DCGM's job mapping into {}", dir), instead);
  const bool made = ::mkdir(dir.c_str(), 0755) == 0;
  if (!made && errno != EEXIST)
    throw Error(fmt::format("cannot create the DCGM job mapping directory {}: {}", dir, std::strerror(errno)));
  dir_fd_.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd_.valid())
    throw Error(fmt::format("cannot open the DCGM job mapping directory {}: {} (it must be a directory, not a link)",
                            dir, std::strerror(errno)));
  if (made) ::fchmod(dir_fd_.get(), 0755);  // whatever gpurund's umask: dcgm-exporter reads it
  struct stat info {};
  if (::fstat(dir_fd_.get(), &info) != 0 || (info.st_uid != 0 && info.st_uid != ::geteuid()) ||
      (info.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    throw Error(
        fmt::format("cannot write DCGM's job mapping into {}: it is uid {}'s with mode {:o}, which another "
                    "user may write; {}",
                    dir, info.st_uid, info.st_mode & 07777, instead));
}

void DcgmJobMap::update(const std::vector<int>& gpus, const std::vector<HolderSample>& holders) {
  for (const int gpu : gpus) {
    std::set<std::string> jobs;  // sorted and unique: the file changes only when its holders do
    for (const HolderSample& holder : holders)
      if (std::find(holder.gpus.begin(), holder.gpus.end(), gpu) != holder.gpus.end())
        jobs.insert(label_safe(hpc_job_label(holder)));
    std::string text;
    for (const std::string& job : jobs) text += job + '\n';
    const auto known = written_.find(gpu);
    if (text.empty()) {
      if (first_ || known != written_.end()) remove(gpu);
    } else if (known == written_.end() || known->second != text) {
      write(gpu, text);
    }
  }
  first_ = false;
}

void DcgmJobMap::clear() {
  while (!written_.empty()) remove(written_.begin()->first);
}

void DcgmJobMap::write(int gpu, const std::string& jobs) {
  const std::string name = std::to_string(gpu);
  const std::string temporary = "." + name + ".tmp";
  ::unlinkat(dir_fd_.get(), temporary.c_str(), 0);
  const Fd file(::openat(dir_fd_.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  const auto fail = [&](const char* what) {
    const int error = errno;
    ::unlinkat(dir_fd_.get(), temporary.c_str(), 0);
    throw Error(fmt::format("cannot {} {}/{}: {}", what, dir_, name, std::strerror(error)));
  };
  if (!file.valid()) fail("create");
  if (::fchmod(file.get(), 0644) != 0) fail("write");  // whatever the umask: dcgm-exporter reads it
  if (::write(file.get(), jobs.data(), jobs.size()) != static_cast<ssize_t>(jobs.size())) fail("write");
  if (::renameat(dir_fd_.get(), temporary.c_str(), dir_fd_.get(), name.c_str()) != 0) fail("replace");
  written_[gpu] = jobs;
}

void DcgmJobMap::remove(int gpu) {
  const std::string name = std::to_string(gpu);
  if (::unlinkat(dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    throw Error(fmt::format("cannot remove {}/{}: {}", dir_, name, std::strerror(errno)));
  written_.erase(gpu);
}

}  // namespace gpurun
