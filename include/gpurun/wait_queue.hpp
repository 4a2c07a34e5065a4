#pragma once
// --wait: a first-come, first-served queue of launches waiting for GPUs, across users, made of
// ticket files in the lock directory. A waiter holds an flock on its ticket; a ticket whose lock
// nobody holds belongs to a waiter that died, and is swept by the next one to look.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "gpurun/reservation.hpp"

namespace gpurun {

// "30" or "30s", "5m", "2h", "1d"; "" (bare --wait) is nullopt: no limit. Throws Error otherwise.
std::optional<std::chrono::seconds> parse_wait_duration(std::string_view input);

// "1h 02m 05s", "3m 07s", "12s"
std::string format_duration(std::chrono::seconds duration);

class WaitTicket {
 public:
  // Takes the next ticket in `lock_dir`'s queue.
  explicit WaitTicket(const std::string& lock_dir);
  WaitTicket(const WaitTicket&) = delete;
  WaitTicket& operator=(const WaitTicket&) = delete;
  ~WaitTicket();  // leaves the queue: removes the ticket

  // How many live waiters came first (0: our turn). Sweeps tickets of dead waiters.
  int position() const;

 private:
  std::string lock_dir_;
  std::string name_;
  FileLock lock_;
};

}  // namespace gpurun
