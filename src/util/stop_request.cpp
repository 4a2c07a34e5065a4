#include "gpurun/util/stop_request.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

thread_local int watched_fd = -1;

}  // namespace

StopRequest::StopRequest() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!event_.valid()) throw Error(std::string("cannot make an eventfd: ") + std::strerror(errno));
}

void StopRequest::request(int signal) noexcept {
  const int saved_errno = errno;  // a handler leaves errno as it found it
  signal_.store(signal == 0 ? -1 : signal);
  timespec now{};  // clock_gettime is async-signal-safe; steady_clock::now is not promised to be
  if (::clock_gettime(CLOCK_MONOTONIC, &now) == 0) {
    std::int64_t unset = 0;
    (void)requested_ns_.compare_exchange_strong(unset, std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec);
  }
  const std::uint64_t one = 1;
  (void)!::write(event_.get(), &one, sizeof one);  // a full counter is readable already
  errno = saved_errno;
}

std::optional<std::chrono::steady_clock::time_point> StopRequest::requested_at() const noexcept {
  const std::int64_t ns = requested_ns_.load();
  if (ns == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(ns)));
}

WaitsEndOnStop::WaitsEndOnStop(const StopRequest& request) noexcept : previous_(watched_fd) {
  watched_fd = request.fd();
}

WaitsEndOnStop::~WaitsEndOnStop() { watched_fd = previous_; }

WaitsOutlastStop::WaitsOutlastStop() noexcept : previous_(std::exchange(watched_fd, -1)) {}

WaitsOutlastStop::~WaitsOutlastStop() { watched_fd = previous_; }

int watched_stop_fd() noexcept { return watched_fd; }

bool stop_seen() noexcept {
  if (watched_fd < 0) return false;
  pollfd fd{watched_fd, POLLIN, 0};
  return ::poll(&fd, 1, 0) > 0;
}

}  // namespace gpurun
