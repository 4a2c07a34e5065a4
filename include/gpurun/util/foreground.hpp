#pragma once
// The one way gpurun runs a child in the terminal's foreground: the child gets a process group of
// its own and the terminal, SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH sent to gpurun are
// forwarded to it (it decides what they mean), and the terminal comes back when it ends.
#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gpurun {

class ForegroundJob {
 public:
  // Blocks the forwarded signals (and SIGCHLD) in this thread and the threads it starts from now
  // on: construct it before starting a thread that must not take them (a sampler).
  ForegroundJob();
  ~ForegroundJob();  // the old signal mask and SIGTTOU's handling back
  ForegroundJob(const ForegroundJob&) = delete;
  ForegroundJob& operator=(const ForegroundJob&) = delete;

  // Runs argv (its program's path first: spawn_foreground_job) until it ends; its exit status,
  // 128+N when signal N ended it. Throws Error (126) when it cannot be started.
  int run(const std::vector<std::string>& argv);

 private:
  sigset_t forwarded_{};
  sigset_t old_mask_{};
  bool owns_terminal_ = false;  // gpurun's group was the terminal's foreground
};

}  // namespace gpurun
