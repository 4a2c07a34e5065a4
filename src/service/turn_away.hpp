#pragma once
// Clients turned away (too many connections at once) are told so, a 503 with Retry-After, once
// their request has come or 50 ms have passed, on a thread of its own: the accept loop never
// waits for them, so a user who opens idle connections faster than they are turned away cannot
// fill the listen backlog and keep everyone else out.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace gpurun {

class TurnAway {
 public:
  TurnAway();
  ~TurnAway();  // what still waits is closed
  TurnAway(const TurnAway&) = delete;
  TurnAway& operator=(const TurnAway&) = delete;

  // Takes the accepted socket `fd` and answers it; closes it at once, unanswered, when 64 are
  // waiting already (a flood gets no more of the service than that).
  void hand_over(int fd);

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::pair<int, Deadline>> handed_;  // not yet taken by the thread
  int waiting_ = 0;                              // handed over and not yet answered
  bool ending_ = false;
  std::thread thread_;

  void run();
  // Takes what was handed over, answers those whose request came or whose wait is over; false
  // once ending (all closed).
  bool answer_some(std::vector<std::pair<int, Deadline>>& waiting);
};

}  // namespace gpurun
