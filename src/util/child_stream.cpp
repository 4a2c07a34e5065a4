#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/stop_request.hpp"

#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "spawn.hpp"

namespace gpurun {

ChildStream::ChildStream(const ProcessSpec& spec) {
  ProcessResult result;
  spawning::Running running =
      spawning::spawn(spec, result, /*read_stderr=*/false);  // a failed stream is restarted, not read
  if (running.pid < 0)
    throw Error(fmt::format("cannot start {}: {}", spec.argv.empty() ? "" : spec.argv.front(),
                            std::strerror(result.spawn_errno)));
  pid_ = running.pid;
  own_group_ = running.own_group;
  out_ = std::move(running.out);  // still O_CLOEXEC: a job spawned meanwhile never inherits it
}

ChildStream::~ChildStream() {
  out_.reset();
  if (pid_ > 0) {
    spawning::kill_child(pid_, own_group_);
    int status = 0;
    spawning::reap_killed(pid_, status);
  }
}

bool ChildStream::read(std::string& sink, std::chrono::milliseconds timeout) {
  if (!out_.valid()) return false;
  pollfd fds[2] = {{out_.get(), POLLIN, 0}, {watched_stop_fd(), POLLIN, 0}};  // (a negative fd is skipped)
  const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
  if (fds[1].revents != 0) return false;  // asked to stop: read no more
  if (ready <= 0) return true;            // nothing yet (or EINTR): still running as far as we know
  char buffer[4096];
  const ssize_t n = ::read(out_.get(), buffer, sizeof buffer);
  if (n > 0) {
    sink.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  out_.reset();
  return false;
}

}  // namespace gpurun
