#include "spawn.hpp"

#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/privileges.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX has the program declare it

namespace gpurun {
namespace spawning {
namespace {

std::atomic<bool> children_in_own_groups{false};  // set_children_in_own_groups

struct Pipe {
  Fd read_end;
  Fd write_end;
};

Pipe make_pipe() {
  int fds[2];
  // O_CLOEXEC so that children spawned concurrently never inherit each other's pipes.
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  return {Fd(fds[0]), Fd(fds[1])};
}

// The environment for a child: ours with `extra` added or replaced (a later entry wins).
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string, std::less<>> overrides;
  for (const auto& [key, value] : extra) overrides[key] = value;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!overrides.contains(entry.substr(0, entry.find('=')))) env.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(fmt::format("{}={}", key, value));
  return env;
}

// A memory file holding `text`, read from its start: a child's stdin that never blocks us (a
// pipe would need writing while its output is read).
Fd input_file(const std::string& text) {
  Fd fd(::memfd_create("gpurun-input", MFD_CLOEXEC));
  if (!fd.valid()) throw std::runtime_error(fmt::format("memfd_create: {}", std::strerror(errno)));
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("writing a child's input: {}", std::strerror(errno)));
    written += static_cast<std::size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) throw std::runtime_error(fmt::format("lseek: {}", std::strerror(errno)));
  return fd;
}

// Children killed and given up on (reap_killed): reaped at later spawns once they end at last.
// While kMostAbandoned of them have not, nothing more is started: a hung driver would otherwise
// leave one more unkillable nvidia-smi behind at every sample of a long-running gpurund.
std::mutex abandoned_mutex;
std::vector<pid_t> abandoned;  // guarded by abandoned_mutex
constexpr std::size_t kMostAbandoned = 8;

void abandon(pid_t pid) {
  const std::lock_guard hold(abandoned_mutex);
  abandoned.push_back(pid);
}

// Reaps those that ended; how many still have not.
std::size_t still_abandoned() {
  const std::lock_guard hold(abandoned_mutex);
  std::erase_if(abandoned, [](pid_t pid) {
    int status = 0;
    return wait_for(pid, status, WNOHANG) != 0;  // reaped at last, or no longer ours
  });
  return abandoned.size();
}

}  // namespace

SpawnAttributes::SpawnAttributes() : own_group(children_in_own_groups.load()) {
  // The child starts with default signal handling and an empty mask, whatever gpurun has set.
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  ::posix_spawnattr_setsigdefault(get(), &all);
  ::posix_spawnattr_setsigmask(get(), &none);
  // Under sudo (gpurun/util/privileges.hpp) the child takes the real ids, root's: the programs gpurun
  // runs came from the admin's file only. Per child, so no other thread's rights change.
  const short reset = acting_for_caller() ? POSIX_SPAWN_RESETIDS : 0;
  const short group = own_group ? POSIX_SPAWN_SETPGROUP : 0;
  if (own_group) ::posix_spawnattr_setpgroup(get(), 0);
  ::posix_spawnattr_setflags(get(), static_cast<short>(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | reset | group));
}

pid_t wait_for(pid_t pid, int& status, int flags) {
  pid_t rc = -1;
  do {
    rc = ::waitpid(pid, &status, flags);
  } while (rc < 0 && errno == EINTR);
  return rc;
}

Running spawn(const ProcessSpec& spec, ProcessResult& result, bool read_stderr) {
  Running running;
  if (spec.argv.empty()) {
    result.spawn_errno = EINVAL;
    return running;
  }
  if (const std::size_t stuck = still_abandoned(); stuck >= kMostAbandoned) {
    result.spawn_errno = EAGAIN;
    result.err = fmt::format(
        "{} programs this one started were killed and have not ended (in uninterruptible sleep: a hung "
        "driver?); no more is started until they do",
        stuck);
    return running;
  }
  Pipe out = make_pipe();
  Pipe err = read_stderr ? make_pipe() : Pipe{};
  FileActions actions;
  // cppcheck-suppress variableScope ; the child's stdin until posix_spawnp below
  Fd input;
  if (spec.input.empty()) {
    ::posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  } else {
    input = input_file(spec.input);
    ::posix_spawn_file_actions_adddup2(actions.get(), input.get(), STDIN_FILENO);
  }
  ::posix_spawn_file_actions_adddup2(actions.get(), out.write_end.get(), STDOUT_FILENO);
  if (read_stderr)
    ::posix_spawn_file_actions_adddup2(actions.get(), err.write_end.get(), STDERR_FILENO);
  else
    ::posix_spawn_file_actions_addopen(actions.get(), STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  SpawnAttributes attributes;

  const std::vector<char*> argv = c_argv(spec.argv);
  // cppcheck-suppress variableScope ; envp points into it until posix_spawnp below
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  char** env = environ;
  if (!spec.extra_env.empty()) {
    env_strings = child_environment(spec.extra_env);
    envp = c_argv(env_strings);
    env = envp.data();
  }
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], actions.get(), attributes.get(), argv.data(), env);
  if (rc != 0) {
    result.spawn_errno = rc;
    return running;
  }
  running.pid = pid;
  running.own_group = attributes.own_group;
  running.pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  running.out = std::move(out.read_end);
  running.err = std::move(err.read_end);
  return running;
}

void record_status(int status, ProcessResult& result) {
  if (WIFEXITED(status)) {
    result.end = ProcessResult::End::exited;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.end = ProcessResult::End::signaled;
    result.signal = WTERMSIG(status);
  }
}

// SIGKILL for a child not yet reaped and, where it leads a group of its own, for all that group:
// what it started goes with it. (Unreaped, even ended, it keeps its pid, so the group is its.)
// The child itself by its pid too: one that moved to another group would outlive the group's
// kill, and the wait for it that follows would never end.
void kill_child(pid_t pid, bool own_group) {
  if (own_group) ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

// Whether a child has ended, asked without reaping it.
bool has_ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Reaps `pid`, just killed, within `limit`. A process in uninterruptible sleep (nvidia-smi in the
// ioctl of a hung driver) does not end until the driver returns, and a blocking waitpid would hang
// whoever waits with it: gpurund's sampling, and its stop. Past the limit it is left, a zombie
// once it ends; false then.
bool reap_killed(pid_t pid, int& status, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::chrono::microseconds pause{20};  // a killed process usually ends at once
  while (true) {
    const pid_t rc = wait_for(pid, status, WNOHANG);
    if (rc != 0) return rc == pid;  // reaped, or not ours to reap (ECHILD)
    if (std::chrono::steady_clock::now() >= deadline) {
      abandon(pid);
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
}

}  // namespace spawning

void set_children_in_own_groups(bool own) { spawning::children_in_own_groups.store(own); }

bool in_terminal_foreground() { return ::isatty(STDIN_FILENO) != 0 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp(); }

pid_t spawn_foreground_job(const std::vector<std::string>& argv) {
  const std::string& path = argv.front();
  spawning::SpawnAttributes attributes;
  ::posix_spawnattr_setpgroup(attributes.get(), 0);  // its own group: terminal signals reach it alone
  short flags = 0;
  ::posix_spawnattr_getflags(attributes.get(), &flags);
  ::posix_spawnattr_setflags(attributes.get(), static_cast<short>(flags | POSIX_SPAWN_SETPGROUP));
  spawning::FileActions actions;
  // On a terminal the job becomes its foreground group before it runs, so that it may read
  // the terminal and gets Ctrl-C itself.
  // Not where gpurun runs in the background (`&`): the terminal is the shell's then.
  if (in_terminal_foreground()) ::posix_spawn_file_actions_addtcsetpgrp_np(actions.get(), STDIN_FILENO);
  const std::vector<char*> c_args = c_argv(argv);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), actions.get(), attributes.get(), c_args.data(), environ);
  if (rc != 0)
    throw Error(fmt::format("cannot execute {}: {}", argv.front(), std::strerror(rc)), exit_code::cannot_execute);
  return pid;
}

}  // namespace gpurun
