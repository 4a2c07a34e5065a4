#include "gpurun/util/bounded_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "gpurun/util/fd.hpp"

namespace gpurun {
namespace {

BoundedRead failed(std::string problem, int error) { return {std::nullopt, std::move(problem), error}; }

std::string size_words(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  return bytes % kMiB == 0 ? fmt::format("{} MiB", bytes / kMiB) : fmt::format("{} bytes", bytes);
}

}  // namespace

BoundedRead read_bounded(int fd, std::size_t limit) {
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EISDIR) return failed("it is a directory", EISDIR);
    if (n < 0) return failed(std::strerror(errno), errno);
    if (n == 0) return {std::move(text), {}, 0};
    if (text.size() + static_cast<std::size_t>(n) > limit)
      return failed(fmt::format("it is over {}", size_words(limit)), EFBIG);
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

BoundedRead read_bounded(const std::string& path, std::size_t limit, FileKinds kinds) {
  const int flags = O_RDONLY | O_CLOEXEC | (kinds == FileKinds::regular_only ? O_NONBLOCK : 0);
  const Fd fd(::open(path.c_str(), flags));
  if (!fd.valid()) return failed(std::strerror(errno), errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return failed(std::strerror(errno), errno);
  if (S_ISDIR(st.st_mode)) return failed("it is a directory", EISDIR);
  if (kinds == FileKinds::regular_only && !S_ISREG(st.st_mode)) return failed("it is not a regular file", EINVAL);
  return read_bounded(fd.get(), limit);
}

}  // namespace gpurun
