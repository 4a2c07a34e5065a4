#pragma once
// A file someone names, read or written whole: a FIFO nobody reads or writes, /dev/zero or a
// file that never ends can neither hang gpurun nor take all its memory, and a failed write is told.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

enum class FileKinds {
  regular_only,  // a FIFO, a device or a directory is refused
  streams_too,   // pipes and devices too, waited for as the timeout allows: `--from-csv <(nvidia-smi ...)`
};

struct BoundedRead {
  std::optional<std::string> text;  // the whole file; nullopt when it could not be read
  std::string problem;              // why not: "it is a directory", "it is over 64 MiB", strerror's words
  int error = 0;                    // the errno behind it (ENOENT: no such file), 0 otherwise
};

// Reads `path` whole, at most `limit` bytes. A pipe or FIFO that sends nothing for `timeout`
// (nobody writes to it, or the writer stalls) is given up.
BoundedRead read_bounded(const std::string& path, std::size_t limit, FileKinds kinds,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The same from an open descriptor (standard input), which it leaves open.
BoundedRead read_bounded(int fd, std::size_t limit, std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Creates or truncates `path` (mode 0666 less the umask) and writes `text` to it. A FIFO without a
// reader is refused at once rather than waited for. The problem in words, or nullopt when written.
std::optional<std::string> write_whole(const std::string& path, std::string_view text);

// The same, but a regular file (or none yet) is written beside `path` and renamed over it, so
// that whoever reads it sees the old text or the new one whole, never part, and a full disk
// leaves the old one; the new file has the old one's permissions. A FIFO, a device (/dev/stdout),
// a symlink or a hard-linked file is written in place (write_whole), and so is a file that cannot
// be renamed over (mounted over, another's in a sticky directory) or beside which no file can be
// made.
std::optional<std::string> replace_whole(const std::string& path, std::string_view text);

}  // namespace gpurun
