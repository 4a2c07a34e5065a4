#pragma once
// Runs external programs with posix_spawnp and an explicit argv (never a shell), each with a
// deadline after which it is killed, its stdout and stderr captured and its end kept exact. A
// thread that watches a stop request (gpurun/util/stop_request.hpp) ends its waits when it is made.
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/util/fd.hpp"

namespace gpurun {

struct ProcessSpec {
  std::vector<std::string> argv;                               // argv[0] is looked up on PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> extra_env;  // added to (or replacing in) our environment
  std::string input = {};  // its stdin (`sendmail -t` reads the message there); empty: /dev/null
};

struct ProcessResult {
  enum class End { exited, signaled, timed_out, abandoned, not_started };  // abandoned: a stop was requested
  End end = End::not_started;
  int exit_code = 0;    // End::exited
  int signal = 0;       // End::signaled
  int spawn_errno = 0;  // End::not_started
  std::string out;
  std::string err;

  bool succeeded() const { return end == End::exited && exit_code == 0; }
};

// Runs all specs at once and waits for all of them; each is killed with SIGKILL at `timeout`.
std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs, std::chrono::milliseconds timeout);

// run_processes in two halves, so that the caller works while they run: start_processes spawns
// them, wait_processes collects their answers, once (the timeout counted from the start). Any still
// running when the StartedProcesses goes are killed and reaped.
class StartedProcesses {
 public:
  StartedProcesses(StartedProcesses&&) noexcept;
  StartedProcesses& operator=(StartedProcesses&&) noexcept;
  StartedProcesses(const StartedProcesses&) = delete;
  StartedProcesses& operator=(const StartedProcesses&) = delete;
  ~StartedProcesses();

  struct State;

 private:
  explicit StartedProcesses(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  friend StartedProcesses start_processes(const std::vector<ProcessSpec>& specs);
  friend std::vector<ProcessResult> wait_processes(StartedProcesses& started, std::chrono::milliseconds timeout);
};
StartedProcesses start_processes(const std::vector<ProcessSpec>& specs);
std::vector<ProcessResult> wait_processes(StartedProcesses& started, std::chrono::milliseconds timeout);
ProcessResult run_process(const ProcessSpec& spec, std::chrono::milliseconds timeout);

// For a program that ends its children itself (gpurund, which kills them when asked to stop): each
// child started after `set_children_in_own_groups(true)` leads a process group of its own, and
// whatever kills it (its deadline, a stop, the end of its StartedProcesses or ChildStream) kills
// that group, so that what it started (postdrop under sendmail, a CLI's plugin) does not outlive
// it in a service that runs for months. By default children stay in our group, which Ctrl-C at
// the terminal reaches: a launch's queries end with gpurun.
void set_children_in_own_groups(bool own);

// "exited with status 2", "was killed by signal 9 (Killed)", "did not answer within 10 s and was killed",
// "could not be started: No such file or directory"
std::string describe_end(const ProcessResult& result, std::chrono::milliseconds timeout);

// A child whose stdout is read as it comes (`nvidia-smi -l 1`); killed and reaped on destruction.
class ChildStream {
 public:
  explicit ChildStream(const ProcessSpec& spec);  // throws Error when it cannot start
  ChildStream(const ChildStream&) = delete;
  ChildStream& operator=(const ChildStream&) = delete;
  ~ChildStream();

  // Waits up to `timeout` for output and appends it to `sink`; false once the stream has ended.
  bool read(std::string& sink, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  bool own_group_ = false;
  Fd out_;
};

// Whether stdin is a terminal whose foreground group is this process's (not run with `&`).
bool in_terminal_foreground();

// Starts argv with our stdin, stdout and stderr, in a process group of its own, with default
// signal handling. argv.front() is the program's path, as locate_program gives it: looked for
// before any thread starts (under sudo the search raises the whole process to root). Throws Error
// (126) when it cannot be started. It becomes the terminal's foreground group where gpurun's was.
pid_t spawn_foreground_job(const std::vector<std::string>& argv);

}  // namespace gpurun
