// --report's job control: the job runs as gpurun's child while its GPUs are sampled.
#include "gpurun/job/supervise.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "gpurun/gpu/gpu_monitor.hpp"
#include "gpurun/util/process.hpp"

namespace gpurun {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};

// Blocks the forwarded signals and SIGCHLD in this thread (and the threads it starts), so that
// sigwaitinfo receives them; restores the old mask on destruction.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    for (int s : kForwarded) sigaddset(&set_, s);
    sigaddset(&set_, SIGCHLD);
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

// Gives the terminal back to gpurun's process group when the job is done.
class TerminalOwner {
 public:
  TerminalOwner() : terminal_(::isatty(STDIN_FILENO) != 0) {
    (void)::signal(SIGTTOU, SIG_IGN);  // a background group may then set the foreground group
  }
  ~TerminalOwner() {
    if (terminal_) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    (void)::signal(SIGTTOU, SIG_DFL);  // SIG_ERR only for an invalid signal number
  }
  TerminalOwner(const TerminalOwner&) = delete;
  TerminalOwner& operator=(const TerminalOwner&) = delete;

 private:
  bool terminal_;
};

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}

}  // namespace

int run_supervised(const SupervisedRun& run, JobReport& report) {
  const BlockedSignals blocked;  // before the monitor's thread starts, so it inherits the mask
  std::vector<int> indices;
  for (const Gpu& g : report.gpus) indices.push_back(g.index);
  GpuMonitor monitor(run.nvml ? make_nvml_sampler(run.nvml_library, indices, run.interval)
                              : make_smi_stream_sampler(run.nvidia_smi, indices, run.interval),
                     indices);
  const TerminalOwner terminal;

  const auto started = std::chrono::steady_clock::now();
  const pid_t child = spawn_foreground_job(run.argv);
  int status = 0;
  while (true) {
    // SIGCHLD may also come from the monitor's stream, and pending ones merge: look each time.
    if (::waitpid(child, &status, WNOHANG) == child) break;
    siginfo_t info{};
    const timespec patience{0, 500'000'000};
    const int signal = ::sigtimedwait(&blocked.set(), &info, &patience);
    if (signal > 0 && signal != SIGCHLD) ::kill(child, signal);  // the child decides what it means
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  report.exit_status = exit_status_of(status);
  report.stats = monitor.stop();
  return report.exit_status;
}

}  // namespace gpurun
