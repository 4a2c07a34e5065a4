#pragma once
// A file someone names, read whole within a bound: a FIFO nobody writes, /dev/zero or a file
// that never ends can neither hang gpurun nor take all memory.
#include <cstddef>
#include <optional>
#include <string>

namespace gpurun {

enum class FileKinds {
  regular_only,  // a FIFO, a device or a directory is refused, and opening never blocks
  streams_too,   // pipes and devices are read as `cat` reads them: `--from-csv <(nvidia-smi ...)`
};

struct BoundedRead {
  std::optional<std::string> text;  // the whole file; nullopt when it could not be read
  std::string problem;              // why not: "it is a directory", "it is over 64 MiB", strerror's words
  int error = 0;                    // the errno behind it (ENOENT: no such file), 0 otherwise
};

// Reads `path` whole ("/dev/stdin" reads standard input); at most `limit` bytes.
BoundedRead read_bounded(const std::string& path, std::size_t limit, FileKinds kinds);

// The same from an open descriptor (standard input), which it leaves open.
BoundedRead read_bounded(int fd, std::size_t limit);

}  // namespace gpurun
