#include "gpurun/util/process.hpp"

#include "gpurun/util/error.hpp"
#include "gpurun/util/exec.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/stop_request.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX has the program declare it

namespace gpurun {
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

// Owns one posix_spawn object (file actions, attributes) from its init to its destroy.
template <typename T, int (*init)(T*), int (*destroy)(T*)>
class SpawnObject {
 public:
  SpawnObject() { init(&object_); }
  ~SpawnObject() { destroy(&object_); }
  SpawnObject(const SpawnObject&) = delete;
  SpawnObject& operator=(const SpawnObject&) = delete;
  T* get() { return &object_; }

 private:
  T object_{};
};

using FileActions =
    SpawnObject<posix_spawn_file_actions_t, ::posix_spawn_file_actions_init, ::posix_spawn_file_actions_destroy>;

class SpawnAttributes : public SpawnObject<posix_spawnattr_t, ::posix_spawnattr_init, ::posix_spawnattr_destroy> {
 public:
  SpawnAttributes() {
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
    ::posix_spawnattr_setflags(get(),
                               static_cast<short>(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | reset | group));
  }

  const bool own_group = children_in_own_groups.load();
};

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

struct Running {
  pid_t pid = -1;
  bool own_group = false;  // it leads a process group of its own (set_children_in_own_groups)
  Fd out;
  Fd err;
  Fd pidfd;  // readable once the child has ended; invalid where the kernel has none (before 5.3)
  bool reaped = false;
};

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

pid_t wait_for(pid_t pid, int& status, int flags) {
  pid_t rc = -1;
  do {
    rc = ::waitpid(pid, &status, flags);
  } while (rc < 0 && errno == EINTR);
  return rc;
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

// Starts one child with stdin from `spec.input` (else /dev/null), stdout into a pipe, and stderr
// into another (or /dev/null, where nobody will read it: a closed pipe would kill the child with
// SIGPIPE at its first warning).
Running spawn(const ProcessSpec& spec, ProcessResult& result, bool read_stderr = true) {
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
bool reap_killed(pid_t pid, int& status, std::chrono::milliseconds limit = std::chrono::seconds(2)) {
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

// Reads what is available from `fd` into `sink`; closes it at end of file.
void drain(Fd& fd, std::string& sink) {
  char buffer[65536];
  const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
  if (n > 0) {
    sink.append(buffer, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    fd.reset();
  }
}

}  // namespace

struct StartedProcesses::State {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::vector<ProcessResult> results;
  std::vector<Running> children;
};

StartedProcesses::StartedProcesses(std::unique_ptr<State> state) : state_(std::move(state)) {}
StartedProcesses::StartedProcesses(StartedProcesses&&) noexcept = default;
StartedProcesses& StartedProcesses::operator=(StartedProcesses&&) noexcept = default;

StartedProcesses::~StartedProcesses() {
  if (!state_) return;
  for (const Running& child : state_->children) {
    if (child.pid < 0 || child.reaped) continue;
    int status = 0;
    kill_child(child.pid, child.own_group);
    reap_killed(child.pid, status);
  }
}

StartedProcesses start_processes(const std::vector<ProcessSpec>& specs) {
  auto state = std::make_unique<StartedProcesses::State>();
  state->results.resize(specs.size());
  state->children.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) state->children.push_back(spawn(specs[i], state->results[i]));
  return StartedProcesses(std::move(state));
}

std::vector<ProcessResult> wait_processes(StartedProcesses& started, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  StartedProcesses::State& state = *started.state_;
  const auto deadline = state.started + timeout;
  std::vector<ProcessResult>& results = state.results;
  std::vector<Running>& children = state.children;

  std::chrono::nanoseconds reap_backoff = std::chrono::microseconds(50);
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Fd*, std::string*>> sinks;
    for (std::size_t i = 0; i < children.size(); ++i) {
      for (auto [fd, sink] :
           {std::pair{&children[i].out, &results[i].out}, std::pair{&children[i].err, &results[i].err}}) {
        if (fd->get() < 0) continue;
        fds.push_back({fd->get(), POLLIN, 0});
        sinks.emplace_back(fd, sink);
      }
    }
    // Children that closed their pipes may still run: reap them, or wait for their end below
    // (their pidfd wakes the ppoll when they end, as a blocking waitpid would).
    bool all_reaped = true;
    bool unwatched = false;  // one of them has no pidfd: ppoll must wake now and then to look
    for (std::size_t i = 0; i < children.size(); ++i) {
      Running& child = children[i];
      if (child.pid < 0 || child.reaped) continue;
      if (child.out.get() < 0 && child.err.get() < 0) {
        // Whether its pidfd says it ended, asked before waitpid: a child that had ended and still
        // cannot be reaped (SIGCHLD ignored by whoever started us, a tracer) would wake ppoll at
        // once, forever, so its pidfd is dropped for the backoff.
        pollfd ended{child.pidfd.get(), POLLIN, 0};
        const bool said_ended = child.pidfd.valid() && ::poll(&ended, 1, 0) > 0;
        int status = 0;
        if (wait_for(child.pid, status, WNOHANG) == child.pid) {
          record_status(status, results[i]);
          child.reaped = true;
          continue;
        }
        if (said_ended) child.pidfd.reset();
        if (child.pidfd.valid()) {
          fds.push_back({child.pidfd.get(), POLLIN, 0});
          sinks.emplace_back(nullptr, nullptr);
        } else {
          unwatched = true;
        }
      }
      all_reaped = false;
    }
    if (all_reaped) break;
    const int stop_fd = watched_stop_fd();
    if (stop_fd >= 0) {
      fds.push_back({stop_fd, POLLIN, 0});
      sinks.emplace_back(nullptr, nullptr);
    }

    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    // Without a pidfd, ppoll sleeps before the next waitpid: briefly at first, since a child that
    // closed its output is usually exiting, then longer.
    const auto wait = unwatched ? std::min<std::chrono::nanoseconds>(left, reap_backoff) : left;
    if (unwatched) reap_backoff = std::min<std::chrono::nanoseconds>(reap_backoff * 2, std::chrono::milliseconds(5));
    const timespec wait_ts{static_cast<time_t>(wait.count() / 1'000'000'000),
                           static_cast<long>(wait.count() % 1'000'000'000)};
    const int ready = ::ppoll(fds.data(), fds.size(), &wait_ts, nullptr);
    if (ready < 0 && errno != EINTR) break;
    if (stop_fd >= 0 && ready > 0 && fds.back().revents != 0) break;  // asked to stop: as at the deadline
    for (std::size_t k = 0; k < fds.size() && ready > 0; ++k)
      if (fds[k].revents != 0 && sinks[k].first != nullptr) drain(*sinks[k].first, *sinks[k].second);
  }

  // Past the deadline (or asked to stop): kill whatever still runs, and reap it so no zombie is left.
  for (std::size_t i = 0; i < children.size(); ++i) {
    Running& child = children[i];
    if (child.pid < 0 || child.reaped) continue;
    child.reaped = true;
    const bool ended = has_ended(child.pid);  // then something it left holds the pipes
    if (!ended || child.own_group) kill_child(child.pid, child.own_group);
    int status = 0;
    reap_killed(child.pid, status);  // at once where it had ended
    if (ended)
      record_status(status, results[i]);
    else
      results[i].end = stop_seen() ? ProcessResult::End::abandoned : ProcessResult::End::timed_out;
  }
  return std::move(state.results);  // once: the answers leave the state, whose children are all reaped
}

std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs, std::chrono::milliseconds timeout) {
  StartedProcesses started = start_processes(specs);
  return wait_processes(started, timeout);
}

ProcessResult run_process(const ProcessSpec& spec, std::chrono::milliseconds timeout) {
  return std::move(run_processes({spec}, timeout).front());
}

void set_children_in_own_groups(bool own) { children_in_own_groups.store(own); }

std::string describe_end(const ProcessResult& result, std::chrono::milliseconds timeout) {
  switch (result.end) {
    case ProcessResult::End::exited:
      return fmt::format("exited with status {}", result.exit_code);
    case ProcessResult::End::signaled:
      return fmt::format("was killed by signal {} ({})", result.signal, ::strsignal(result.signal));
    case ProcessResult::End::timed_out:
      return fmt::format("did not answer within {:g} s and was killed", static_cast<double>(timeout.count()) / 1000.0);
    case ProcessResult::End::abandoned:
      return "was killed unfinished: asked to stop";
    case ProcessResult::End::not_started:
      break;
  }
  return fmt::format("could not be started: {}", std::strerror(result.spawn_errno));
}

ChildStream::ChildStream(const ProcessSpec& spec) {
  ProcessResult result;
  Running running = spawn(spec, result, /*read_stderr=*/false);  // a failed stream is restarted, not read
  if (running.pid < 0)
    throw Error(fmt::format("cannot start {}: {}", spec.argv.empty() ? "" : spec.argv.front(),
                            std::strerror(result.spawn_errno)));
  pid_ = running.pid;
  own_group_ = running.own_group;
  out_ = std::move(running.out);  // still O_CLOEXEC: a job spawned meanwhile never inherits it
}

ChildStream::~ChildStream() {
  out_.reset();
  if (pid_ > 0) {
    kill_child(pid_, own_group_);
    int status = 0;
    reap_killed(pid_, status);
  }
}

bool ChildStream::read(std::string& sink, std::chrono::milliseconds timeout) {
  if (!out_.valid()) return false;
  pollfd fds[2] = {{out_.get(), POLLIN, 0}, {watched_stop_fd(), POLLIN, 0}};  // (a negative fd is skipped)
  const int ready = ::poll(fds, 2, static_cast<int>(timeout.count()));
  if (fds[1].revents != 0) return false;  // asked to stop: read no more
  if (ready <= 0) return true;            // nothing yet (or EINTR): still running as far as we know
  char buffer[4096];
  const ssize_t n = ::read(out_.get(), buffer, sizeof buffer);
  if (n > 0) {
    sink.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  out_.reset();
  return false;
}

pid_t spawn_foreground_job(const std::vector<std::string>& argv) {
  const std::string& path = argv.front();
  SpawnAttributes attributes;
  ::posix_spawnattr_setpgroup(attributes.get(), 0);  // its own group: terminal signals reach it alone
  short flags = 0;
  ::posix_spawnattr_getflags(attributes.get(), &flags);
  ::posix_spawnattr_setflags(attributes.get(), static_cast<short>(flags | POSIX_SPAWN_SETPGROUP));
  FileActions actions;
  // On a terminal the job becomes its foreground group before it runs, so that it may read
  // the terminal and gets Ctrl-C itself.
  if (::isatty(STDIN_FILENO) != 0) ::posix_spawn_file_actions_addtcsetpgrp_np(actions.get(), STDIN_FILENO);
  const std::vector<char*> c_args = c_argv(argv);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), actions.get(), attributes.get(), c_args.data(), environ);
  if (rc != 0)
    throw Error(fmt::format("cannot execute {}: {}", argv.front(), std::strerror(rc)), exit_code::cannot_execute);
  return pid;
}

}  // namespace gpurun
