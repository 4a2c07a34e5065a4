#include "gpurun/util/whole_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "gpurun/util/fd.hpp"

namespace gpurun {
namespace {

BoundedRead failed(std::string problem, int error) { return {std::nullopt, std::move(problem), error}; }

std::string size_words(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  return bytes % kMiB == 0 ? fmt::format("{} MiB", bytes / kMiB) : fmt::format("{} bytes", bytes);
}

// Reads `fd` to its end. `waits`: a pipe or a device, whose data is waited for (not past
// `timeout`); a regular file is always ready, and is read without a poll(2) each time.
BoundedRead read_to_end(int fd, std::size_t limit, std::chrono::milliseconds timeout, bool waits) {
  // A terminal waits for whoever types or pastes, as long as they take (Ctrl-D ends it).
  const int wait_ms = ::isatty(fd) != 0 ? -1 : static_cast<int>(timeout.count());
  std::string text;
  char buffer[16384];
  for (;;) {
    pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
    const int polled = waits ? ::poll(&ready, 1, wait_ms) : 1;
    const int error = errno;
    if (polled < 0 && error == EINTR) continue;
    if (polled < 0) return failed(std::strerror(error), error);
    if (polled == 0)
      return failed(fmt::format("nothing came from it for {} s", std::chrono::duration<double>(timeout).count()),
                    ETIMEDOUT);
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    const int read_error = errno;
    if (n < 0 && (read_error == EINTR || read_error == EAGAIN)) continue;
    if (n < 0 && read_error == EISDIR) return failed("it is a directory", EISDIR);
    if (n < 0) return failed(std::strerror(read_error), read_error);
    if (n == 0) return {std::move(text), {}, 0};
    if (text.size() + static_cast<std::size_t>(n) > limit)
      return failed(fmt::format("it is over {}", size_words(limit)), EFBIG);
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// Writes all of `text` to `fd` and syncs it; the problem in words, or nullopt.
std::optional<std::string> write_and_sync(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string(std::strerror(errno));  // ENOSPC: a full disk, /dev/full
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return std::string(std::strerror(errno));
  return std::nullopt;
}

}  // namespace

BoundedRead read_bounded(int fd, std::size_t limit, std::chrono::milliseconds timeout) {
  struct stat st {};
  return read_to_end(fd, limit, timeout, ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode));
}

BoundedRead read_bounded(const std::string& path, std::size_t limit, FileKinds kinds,
                         std::chrono::milliseconds timeout) {
  // Never blocks in open: a FIFO nobody writes to opens at once, and its read waits only for the timeout.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  const int open_error = errno;
  if (!fd.valid()) return failed(std::strerror(open_error), open_error);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    return failed(std::strerror(error), error);
  }
  if (S_ISDIR(st.st_mode)) return failed("it is a directory", EISDIR);
  if (kinds == FileKinds::regular_only && !S_ISREG(st.st_mode)) return failed("it is not a regular file", EINVAL);
  return read_to_end(fd.get(), limit, timeout, !S_ISREG(st.st_mode));
}

std::optional<std::string> write_whole(const std::string& path, std::string_view text) {
  const Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666));
  if (!fd.valid()) {
    const int error = errno;
    struct stat st {};  // ENXIO is a FIFO without a reader, or a socket, or a device without its driver
    if (error == ENXIO && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
      return std::string("it is a FIFO nobody reads");
    return std::string(std::strerror(error));
  }
  // Blocking again: a pipe with a reader (`--report-json >(jq .)`) takes the text at its pace.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) return std::string(std::strerror(errno));
  return write_and_sync(fd.get(), text);
}

std::optional<std::string> replace_whole(const std::string& path, std::string_view text) {
  struct stat st {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  // A hard-linked file is written in place too: its other names would keep the old text.
  if (exists ? !S_ISREG(st.st_mode) || st.st_nlink > 1 : errno != ENOENT) return write_whole(path, text);
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::uint32_t random = 0;
  if (::getrandom(&random, sizeof random, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof random))
    random = static_cast<std::uint32_t>(::getpid());
  const std::string temp =
      fmt::format("{}/.{}.{:08x}.tmp", dir, slash == std::string::npos ? path : path.substr(slash + 1), random);
  // O_EXCL and O_NOFOLLOW: never through a name someone else made in a shared directory.
  const Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!fd.valid()) return write_whole(path, text);          // no file may be made beside it: in place, as before
  if (exists) (void)::fchmod(fd.get(), st.st_mode & 0777);  // the old file's permissions, not the umask's
  if (auto problem = write_and_sync(fd.get(), text)) {      // a full disk: the old text stays
    ::unlink(temp.c_str());
    return problem;
  }
  if (::rename(temp.c_str(), path.c_str()) == 0) return std::nullopt;
  // A file mounted over (EBUSY), another's in a sticky directory (EPERM): in place, as before.
  ::unlink(temp.c_str());
  return write_whole(path, text);
}

}  // namespace gpurun
