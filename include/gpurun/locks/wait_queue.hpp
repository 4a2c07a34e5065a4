#pragma once
// --wait: a first-come, first-served queue of launches waiting for GPUs, across users, made of
// ticket files in the lock directory. A waiter holds an flock on its ticket; a ticket whose lock
// nobody holds belongs to a waiter that died, and is swept by the next one to look.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "gpurun/locks/reservation.hpp"

namespace gpurun {

// The names of the queue's tickets in the lock directory (drafts are "draft-" and a ticket's name).
inline constexpr std::string_view kTicketPrefix = "ticket-";

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
