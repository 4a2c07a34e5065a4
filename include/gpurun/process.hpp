#pragma once
// Runs external programs with posix_spawnp and an explicit argv (never a shell), each with a
// deadline after which it is killed, its stdout and stderr captured and its end kept exact.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace gpurun {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> extra_env;  // added to (or replacing in) our environment
};

struct ProcessResult {
  enum class End { exited, signaled, timed_out, not_started };
  End end = End::not_started;
  int exit_code = 0;     // End::exited
  int signal = 0;        // End::signaled
  int spawn_errno = 0;   // End::not_started
  std::string out;
  std::string err;

  bool succeeded() const { return end == End::exited && exit_code == 0; }
};

// Runs all specs at once and waits for all of them; each is killed with SIGKILL at `timeout`.
std::vector<ProcessResult> run_processes(const std::vector<ProcessSpec>& specs, std::chrono::milliseconds timeout);
ProcessResult run_process(const ProcessSpec& spec, std::chrono::milliseconds timeout);

// "exited with status 2", "was killed by signal 9 (Killed)", "did not answer within 10 s and was killed",
// "could not be started: No such file or directory"
std::string describe_end(const ProcessResult& result, std::chrono::milliseconds timeout);

}  // namespace gpurun
