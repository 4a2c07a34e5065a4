#pragma once
// The docker engine's answer about CDI, remembered between launches (issue 25): its /info costs
// about 8 ms a launch, and the answer changes only when the engine restarts, which makes its
// socket anew. So the answer is kept with the socket's device, inode and change time, and taken
// again only while they are the same.
//
// Where: root's in /var/cache/gpurun (what `sudo gpurun` reads, whoever its caller: HOME and
// XDG_CACHE_HOME play no part), anyone else's in $XDG_CACHE_HOME/gpurun or ~/.cache/gpurun. A
// cache file or directory that another user owns or may write is not read.
#include <optional>
#include <string>

#include "gpurun/engine/gpu_request.hpp"

namespace gpurun {

// This user's cache file; "" where there is none to use (no home).
std::string default_cdi_cache_file();

// "DEV:INODE:CTIME_NS" of the socket at `socket_path`; nullopt where it cannot be looked at.
std::optional<std::string> socket_mark(const std::string& socket_path);

// The answer remembered for `socket_path` at `mark`; nullopt when none, another mark, or a file
// this user should not trust.
std::optional<CdiSupport> cached_cdi(const std::string& cache_file, const std::string& socket_path,
                                     const std::string& mark);

// Remembers `answer` (best effort: a cache that cannot be written is skipped, never an error).
void remember_cdi(const std::string& cache_file, const std::string& socket_path, const std::string& mark,
                  const CdiSupport& answer);

}  // namespace gpurun
