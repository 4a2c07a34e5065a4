#include "gpurun/util/foreground.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"

namespace gpurun {
namespace {

// SIGUSR1 and SIGUSR2 too: Slurm's --signal=USR1@90 warns a job before its time limit (a checkpoint),
// and would end gpurun instead, by default.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1, SIGUSR2};

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return exit_code::failure;
}

}  // namespace

ForegroundJob::ForegroundJob() {
  sigemptyset(&forwarded_);
  for (int s : kForwarded) sigaddset(&forwarded_, s);
  sigaddset(&forwarded_, SIGCHLD);
  ::pthread_sigmask(SIG_BLOCK, &forwarded_, &old_mask_);
  (void)::signal(SIGTTOU, SIG_IGN);  // a background group may then set the foreground group
  owns_terminal_ = in_terminal_foreground();
}

ForegroundJob::~ForegroundJob() {
  // The terminal back, where gpurun had it: a `gpurun --report … &` in the background never takes
  // it from the shell.
  if (owns_terminal_) ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
  // What came once the job had ended (a hangup's SIGHUP after its child's end) is the job's, which
  // is over: it must not end gpurun before the report is out.
  const timespec now{0, 0};
  siginfo_t info{};
  while (::sigtimedwait(&forwarded_, &info, &now) > 0) {
  }
  (void)::signal(SIGTTOU, SIG_DFL);  // SIG_ERR only for an invalid signal number
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int ForegroundJob::run(const std::vector<std::string>& argv) {
  const pid_t child = spawn_foreground_job(argv);
  int status = 0;
  while (true) {
    // SIGCHLD may also come from another child (a sampler's stream), and pending ones merge:
    // look each time.
    if (::waitpid(child, &status, WNOHANG) == child) break;
    siginfo_t info{};
    const timespec patience{0, 500'000'000};
    const int signal = ::sigtimedwait(&forwarded_, &info, &patience);
    if (signal > 0 && signal != SIGCHLD) ::kill(child, signal);  // the child decides what it means
  }
  return exit_status_of(status);  // the terminal comes back with the destructor
}

}  // namespace gpurun
