#include "turn_away.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gpurun {
namespace {

// How long a turned-away client's request is waited for before the answer goes anyway.
constexpr std::chrono::milliseconds kRequestWait{50};
constexpr int kMaxWaiting = 64;

// The request is read first: a client still writing it when the connection closes sees a broken
// pipe (or, over TCP, a reset), not the answer.
void answer_busy(int fd) {
  static const std::string kBusy = [] {
    const std::string body = "gpurund: too many connections at once; try again\n";
    return fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.size(), body);
  }();
  char discarded[4096];
  for (int chunk = 0; chunk < 16 && ::recv(fd, discarded, sizeof discarded, MSG_DONTWAIT) > 0; ++chunk) {
  }  // 64 KiB at most: a peer that streams without a pause holds up no other answer
  (void)!::send(fd, kBusy.data(), kBusy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace

TurnAway::TurnAway() {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    ending_ = true;  // no thread to be had: those turned away are closed at once, unanswered
  }
}

TurnAway::~TurnAway() {
  {
    const std::lock_guard hold(mutex_);
    ending_ = true;
  }
  arrived_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void TurnAway::hand_over(int fd) {
  {
    const std::lock_guard hold(mutex_);
    if (waiting_ < kMaxWaiting && !ending_) {
      ++waiting_;
      handed_.emplace_back(fd, std::chrono::steady_clock::now() + kRequestWait);
      arrived_.notify_one();
      return;
    }
  }
  ::close(fd);
}

void TurnAway::run() {
  std::vector<std::pair<int, Deadline>> waiting;
  for (;;) {
    try {
      if (!answer_some(waiting)) return;
    } catch (const std::exception&) {  // no memory: those waiting are closed, and the thread goes on
      for (const auto& entry : waiting) ::close(entry.first);
      const std::lock_guard hold(mutex_);
      waiting_ -= static_cast<int>(waiting.size());
      waiting.clear();
    }
  }
}

bool TurnAway::answer_some(std::vector<std::pair<int, Deadline>>& waiting) {
  {
    std::unique_lock hold(mutex_);
    if (waiting.empty()) arrived_.wait(hold, [&] { return ending_ || !handed_.empty(); });
    waiting.insert(waiting.end(), handed_.begin(), handed_.end());
    handed_.clear();
    if (ending_) {
      for (const auto& entry : waiting) ::close(entry.first);
      return false;
    }
  }
  // Every waiting client at once, for at most 10 ms (the newly handed over join then).
  std::vector<pollfd> ready;
  ready.reserve(waiting.size());
  for (const auto& entry : waiting) ready.push_back({.fd = entry.first, .events = POLLIN, .revents = 0});
  (void)::poll(ready.data(), ready.size(), 10);
  const auto now = std::chrono::steady_clock::now();
  std::size_t answered = 0;
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    if (ready[i].revents == 0 && now < waiting[i].second) continue;
    answer_busy(waiting[i].first);
    waiting[i].first = -1;
    ++answered;
  }
  if (answered == 0) return true;
  std::erase_if(waiting, [](const auto& entry) { return entry.first < 0; });
  const std::lock_guard hold(mutex_);
  waiting_ -= static_cast<int>(answered);
  return true;
}

}  // namespace gpurun
