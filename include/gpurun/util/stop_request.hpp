#pragma once
// A request to stop, made from a signal handler, that a thread's waits for other programs and
// sockets (gpurun/util/process.hpp, gpurun/util/unix_http.hpp) watch too: gpurund asked to stop
// (SIGTERM) gives up a hung nvidia-smi or engine at once, instead of after their timeouts (10 s
// each, and a sample asks two or three, where systemd waits 30 s before its SIGKILL).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "gpurun/util/fd.hpp"

namespace gpurun {

class StopRequest {
 public:
  StopRequest();  // throws Error when the kernel gives no eventfd
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  void request(int signal) noexcept;                      // async-signal-safe
  int signal() const noexcept { return signal_.load(); }  // 0 until requested
  bool requested() const noexcept { return signal() != 0; }
  // When the first request was made, on the steady clock; nullopt until then.
  std::optional<std::chrono::steady_clock::time_point> requested_at() const noexcept;
  int fd() const noexcept { return event_.get(); }  // readable once requested

 private:
  std::atomic<int> signal_{0};
  std::atomic<std::int64_t> requested_ns_{0};  // CLOCK_MONOTONIC, steady_clock's clock; 0: not yet
  Fd event_;
};

// While one lives, the waits of the thread that made it end when `request` is made, as at their
// deadline. Other threads keep theirs (gpurund's notifier still delivers what is due).
class WaitsEndOnStop {
 public:
  explicit WaitsEndOnStop(const StopRequest& request) noexcept;
  WaitsEndOnStop(const WaitsEndOnStop&) = delete;
  WaitsEndOnStop& operator=(const WaitsEndOnStop&) = delete;
  ~WaitsEndOnStop();

 private:
  int previous_;
};

// While one lives, the thread's waits run to their end whatever was requested: what must finish
// even when stopping (a policy's `docker stop` under way, which killed halfway leaves the
// container running and nobody told).
class WaitsOutlastStop {
 public:
  WaitsOutlastStop() noexcept;
  WaitsOutlastStop(const WaitsOutlastStop&) = delete;
  WaitsOutlastStop& operator=(const WaitsOutlastStop&) = delete;
  ~WaitsOutlastStop();

 private:
  int previous_;
};

// The descriptor this thread's waits watch, readable once a stop is requested; -1 when none.
int watched_stop_fd() noexcept;

// Whether this thread's watched request has been made (false when it watches none).
bool stop_seen() noexcept;

}  // namespace gpurun
