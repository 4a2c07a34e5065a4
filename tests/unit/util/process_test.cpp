// Unit tests for run_process / run_processes: output capture, exact ends, deadlines, environment.
#include "gpurun/util/process.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpurun/util/stop_request.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using End = ProcessResult::End;
using Clock = std::chrono::steady_clock;

ProcessResult sh(const std::string& script, std::chrono::milliseconds timeout = 5s) {
  return run_process({{"/bin/sh", "-c", script}, {}}, timeout);
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(RunProcess, CapturesStdoutAndStderrSeparatelyWithTheExitCode) {
  const ProcessResult r = sh("echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.succeeded());
}

TEST(RunProcess, ExitZeroSucceeds) {
  const ProcessResult r = run_process({{"true"}, {}}, 5s);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.succeeded());
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

TEST(RunProcess, ArgvIsPassedAsIsWithoutAShell) {
  const ProcessResult r = run_process({{"printf", "%s|", "two words", "$HOME", "*", ""}, {}}, 5s);
  EXPECT_TRUE(r.succeeded()) << r.err;
  EXPECT_EQ(r.out, "two words|$HOME|*||");
}

TEST(RunProcess, InputIsTheChildsStdinAndNoInputIsDevNull) {
  std::string big(1 << 20, 'x');  // more than a pipe holds: a memory file never blocks
  big += "\nend\n";
  const ProcessResult r = run_process({.argv = {"wc", "-c"}, .extra_env = {}, .input = big}, 5s);
  EXPECT_TRUE(r.succeeded()) << r.err;
  EXPECT_EQ(r.out, std::to_string(big.size()) + "\n");
  EXPECT_EQ(run_process({{"cat"}, {}}, 5s).out, "");
}

TEST(RunProcess, DeathBySignalIsKeptDistinctFromAnExitCode) {
  const ProcessResult r = sh("kill -TERM $$");
  EXPECT_EQ(r.end, End::signaled);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.succeeded());
}

TEST(RunProcess, ChildGetsDefaultSignalHandlingEvenIfWeIgnoreTheSignal) {
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGTERM, &ignore, &old), 0);
  const ProcessResult r = sh("kill -TERM $$; echo survived");
  ::sigaction(SIGTERM, &old, nullptr);
  EXPECT_EQ(r.end, End::signaled);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.out, "");
}

TEST(RunProcess, TimeoutKillsTheChild) {
  const auto start = Clock::now();
  const ProcessResult r = run_process({{"sleep", "30"}, {}}, 200ms);
  EXPECT_EQ(r.end, End::timed_out);
  EXPECT_FALSE(r.succeeded());
  EXPECT_LT(seconds_since(start), 5.0) << "run_process did not return soon after its deadline";
}

TEST(RunProcess, TimeoutKeepsTheOutputReadSoFar) {
  const ProcessResult r = sh("echo started; exec sleep 30", 1s);
  EXPECT_EQ(r.end, End::timed_out);
  EXPECT_EQ(r.out, "started\n");
}

TEST(RunProcess, MissingProgramIsNotStartedWithEnoent) {
  const ProcessResult r = run_process({{"gpurun-no-such-program-xyz"}, {}}, 5s);
  EXPECT_EQ(r.end, End::not_started);
  EXPECT_EQ(r.spawn_errno, ENOENT);
  EXPECT_FALSE(r.succeeded());

  const ProcessResult by_path = run_process({{"/nonexistent/dir/prog"}, {}}, 5s);
  EXPECT_EQ(by_path.end, End::not_started);
  EXPECT_EQ(by_path.spawn_errno, ENOENT);
}

TEST(RunProcess, EmptyArgvIsNotStarted) {
  const ProcessResult r = run_process({{}, {}}, 5s);
  EXPECT_EQ(r.end, End::not_started);
  EXPECT_NE(r.spawn_errno, 0);
}

TEST(RunProcess, ExtraEnvIsSeenByTheChildAndOverridesOurs) {
  const test::EnvGuard overridden("GPURUN_TEST_OVERRIDDEN", "old");
  const test::EnvGuard inherited("GPURUN_TEST_INHERITED", "kept");
  const ProcessResult r =
      run_process({{"/bin/sh", "-c",
                    "printf '%s %s %s' \"$GPURUN_TEST_OVERRIDDEN\" \"$GPURUN_TEST_ADDED\" \"$GPURUN_TEST_INHERITED\""},
                   {{"GPURUN_TEST_OVERRIDDEN", "new"}, {"GPURUN_TEST_ADDED", "a b=c"}}},
                  5s);
  EXPECT_TRUE(r.succeeded()) << r.err;
  EXPECT_EQ(r.out, "new a b=c kept");
}

TEST(RunProcess, OverriddenVariableAppearsOnlyOnce) {
  const test::EnvGuard once("GPURUN_TEST_ONCE", "old");
  const ProcessResult r =
      run_process({{"/bin/sh", "-c", "env | grep -c '^GPURUN_TEST_ONCE='"}, {{"GPURUN_TEST_ONCE", "new"}}}, 5s);
  EXPECT_EQ(r.out, "1\n");
}

TEST(RunProcess, LaterExtraEnvEntryWins) {
  const ProcessResult r = run_process({{"/bin/sh", "-c", "env | grep '^GPURUN_TEST_TWICE='"},
                                       {{"GPURUN_TEST_TWICE", "first"}, {"GPURUN_TEST_TWICE", "second"}}},
                                      5s);
  EXPECT_EQ(r.out, "GPURUN_TEST_TWICE=second\n");
}

TEST(RunProcess, StdinIsDevNullNotOurs) {
  // Give this process a stdin that has data and never ends, so that a child inheriting it
  // would print the data and then block until killed.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "leaked\n", 7), 7);
  const int saved_stdin = ::dup(STDIN_FILENO);
  ASSERT_GE(saved_stdin, 0);
  ASSERT_EQ(::dup2(fds[0], STDIN_FILENO), STDIN_FILENO);

  const auto start = Clock::now();
  const ProcessResult r = run_process({{"cat"}, {}}, 3s);
  const double took = seconds_since(start);

  ::dup2(saved_stdin, STDIN_FILENO);
  ::close(saved_stdin);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_LT(took, 2.0) << "cat waited for input";
}

TEST(RunProcess, BackgroundGrandchildHoldingThePipeDoesNotHideTheExit) {
  // The child exits at once; what it left running keeps stdout open until the deadline.
  const ProcessResult r = sh("sleep 3 & echo hi", 1s);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "hi\n");
}

TEST(RunProcess, ByDefaultAChildStaysInOurProcessGroup) {
  // (Ctrl-C at the terminal reaches a launch's queries as it reaches gpurun.)
  const ProcessResult r = sh("read -r _ _ _ _ group _ < /proc/$$/stat; echo $group");
  EXPECT_EQ(r.out, std::to_string(::getpgrp()) + "\n");
}

// gpurund's children lead groups of their own: whatever ends one ends what it started.
class ChildrenInOwnGroups : public ::testing::Test {
 protected:
  ChildrenInOwnGroups() { set_children_in_own_groups(true); }
  ~ChildrenInOwnGroups() override { set_children_in_own_groups(false); }
};

// Whether process `pid` has ended within `patience` (a zombie not yet reaped by init counts as ended).
bool ends_within(pid_t pid, std::chrono::milliseconds patience) {
  const auto deadline = Clock::now() + patience;
  while (true) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const auto name_end = line.rfind(')');
    if (name_end != std::string::npos && name_end + 2 < line.size() && line[name_end + 2] == 'Z') return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

// The pid a script printed on its first line.
pid_t printed_pid(const std::string& out) {
  const pid_t pid = static_cast<pid_t>(std::atoi(out.c_str()));
  EXPECT_GT(pid, 1) << "no pid in " << out;
  return pid;
}

TEST_F(ChildrenInOwnGroups, EachLeadsAGroupOfItsOwn) {
  const ProcessResult r = sh("read -r _ _ _ _ group _ < /proc/$$/stat; echo $$ $group");
  const pid_t pid = printed_pid(r.out);
  EXPECT_EQ(r.out, fmt::format("{} {}\n", pid, pid));
}

TEST_F(ChildrenInOwnGroups, AtItsDeadlineWhatTheChildStartedIsKilledWithIt) {
  const ProcessResult r = sh("sleep 30 & echo $!; exec sleep 30", 300ms);
  EXPECT_EQ(r.end, End::timed_out);
  EXPECT_TRUE(ends_within(printed_pid(r.out), 5s)) << "the child's background sleep outlived its deadline";
}

TEST_F(ChildrenInOwnGroups, WhatAnEndedChildLeftHoldingItsPipeIsKilledAndItsExitKept) {
  const ProcessResult r = sh("sleep 30 & echo $!; exit 3", 300ms);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(ends_within(printed_pid(r.out), 5s)) << "the background sleep holding stdout outlived the deadline";
}

// A child that leaves its group (a wrapper that calls setpgid) is killed all the same.
TEST_F(ChildrenInOwnGroups, OneThatLeftItsGroupIsStillKilledAtItsDeadline) {
  const auto start = Clock::now();
  // (perl, which Debian always has: it moves itself into our group, then sleeps.)
  const ProcessResult r =
      run_process({{"perl", "-e", "setpgrp(0, $ARGV[0]) or die; sleep 30", std::to_string(::getpgrp())}, {}}, 300ms);
  EXPECT_EQ(r.end, End::timed_out);
  EXPECT_LT(seconds_since(start), 5.0) << "the wait outlasted the deadline";
}

TEST_F(ChildrenInOwnGroups, ThoseNeverWaitedForAreKilledWithWhatTheyStarted) {
  const test::TempDir dir;
  const std::string said = dir / "pid";
  std::string grandchild;
  {
    StartedProcesses started =
        start_processes({{{"/bin/sh", "-c", "sleep 30 & echo $! > \"$1\"; exec sleep 30", "sh", said}, {}}});
    for (const auto deadline = Clock::now() + 5s; grandchild.empty() && Clock::now() < deadline;) {
      std::this_thread::sleep_for(10ms);
      std::ifstream(said) >> grandchild;
    }
  }  // dropped without wait_processes
  EXPECT_TRUE(ends_within(printed_pid(grandchild), 5s)) << "the background sleep outlived its StartedProcesses";
}

TEST(RunProcess, LargeOutputIsCapturedCompletelyWithoutDeadlock) {
  const ProcessResult r = sh("head -c 5000000 /dev/zero; head -c 3000000 /dev/zero | tr '\\0' e >&2", 30s);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 5'000'000u);
  EXPECT_EQ(r.out, std::string(5'000'000, '\0'));
  EXPECT_EQ(r.err.size(), 3'000'000u);
  EXPECT_EQ(r.err, std::string(3'000'000, 'e'));
}

TEST(RunProcesses, RunsAllAtOnceAndKeepsResultsInOrder) {
  const auto start = Clock::now();
  const auto results = run_processes({{{"/bin/sh", "-c", "sleep 1; echo first"}, {}},
                                      {{"/bin/sh", "-c", "sleep 1; echo second >&2; exit 4"}, {}},
                                      {{"gpurun-no-such-program-xyz"}, {}}},
                                     10s);
  EXPECT_LT(seconds_since(start), 1.9) << "the two sleeps ran one after the other";
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].end, End::exited);
  EXPECT_EQ(results[0].out, "first\n");
  EXPECT_EQ(results[1].end, End::exited);
  EXPECT_EQ(results[1].exit_code, 4);
  EXPECT_EQ(results[1].err, "second\n");
  EXPECT_EQ(results[2].end, End::not_started);
  EXPECT_EQ(results[2].spawn_errno, ENOENT);
}

TEST(RunProcesses, OneTimeoutDoesNotHideTheOthersResults) {
  const auto results = run_processes({{{"sleep", "30"}, {}}, {{"/bin/sh", "-c", "echo quick"}, {}}}, 1s);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].end, End::timed_out);
  EXPECT_EQ(results[1].end, End::exited);
  EXPECT_EQ(results[1].out, "quick\n");
}

TEST(RunProcesses, EmptyListGivesNoResults) { EXPECT_TRUE(run_processes({}, 1s).empty()); }

TEST(StartedProcesses, RunWhileTheCallerWorksAndAreCollectedAfter) {
  StartedProcesses started = start_processes({{{"/bin/sh", "-c", "sleep 1; echo done"}, {}}});
  const auto start = Clock::now();
  std::this_thread::sleep_for(1200ms);  // the caller's own work: the child runs meanwhile
  const auto results = wait_processes(started, 10s);
  EXPECT_LT(seconds_since(start), 1.9) << "the child only started when it was waited for";
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].end, End::exited);
  EXPECT_EQ(results[0].out, "done\n");
}

TEST(StartedProcesses, TheTimeoutCountsFromTheirStart) {
  StartedProcesses started = start_processes({{{"sleep", "30"}, {}}});
  std::this_thread::sleep_for(700ms);
  const auto start = Clock::now();
  const auto results = wait_processes(started, 1s);
  EXPECT_LT(seconds_since(start), 0.8) << "the wait was given a whole second more";
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].end, End::timed_out);
}

// This process's children, from /proc (a zombie is still one).
std::set<pid_t> our_children() {
  std::set<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    pid_t parent = 0;
    if (rest >> state >> parent && parent == ::getpid()) pids.insert(std::stoi(name));
  }
  return pids;
}

TEST(StartedProcesses, ThoseNeverWaitedForAreKilledAndReaped) {
  const std::set<pid_t> before = our_children();
  {
    StartedProcesses started = start_processes({{{"sleep", "30"}, {}}});
    EXPECT_EQ(our_children().size(), before.size() + 1);
  }  // dropped without wait_processes
  EXPECT_EQ(our_children(), before) << "the child outlived its StartedProcesses, or is left a zombie";
}

// gpurund asked to stop (SIGTERM) gives up a hung nvidia-smi at once, not at its timeout; its
// notifier, on another thread, still waits for sendmail.
TEST(StopRequest, EndsTheWaitsOfTheThreadThatWatchesItAndOfNoOther) {
  StopRequest stop;
  ProcessResult elsewhere;
  {
    const WaitsEndOnStop watched(stop);
    EXPECT_TRUE(run_process({{"true"}, {}}, 5s).succeeded());  // not requested yet
    std::thread requester([&] {
      std::this_thread::sleep_for(200ms);
      stop.request(SIGTERM);
    });
    const auto start = Clock::now();
    const ProcessResult hung = run_process({{"sleep", "30"}, {}}, 30s);
    requester.join();
    EXPECT_EQ(hung.end, End::abandoned);
    EXPECT_LT(seconds_since(start), 10.0) << "the wait went on after the stop request";
    EXPECT_EQ(describe_end(hung, 30s), "was killed unfinished: asked to stop");
    EXPECT_TRUE(stop.requested());
    EXPECT_EQ(stop.signal(), SIGTERM);
    EXPECT_EQ(run_process({{"sleep", "30"}, {}}, 30s).end, End::abandoned);  // once made, it stays made

    std::thread other([&] { elsewhere = sh("sleep 0.2; echo delivered"); });
    other.join();
  }
  EXPECT_TRUE(elsewhere.succeeded()) << describe_end(elsewhere, 5s);
  EXPECT_EQ(elsewhere.out, "delivered\n");
  EXPECT_TRUE(sh("true").succeeded()) << "the watch outlived its scope";
}

// A policy's `docker stop` under way finishes even when gpurund is asked to stop.
TEST(StopRequest, WhatMustFinishOutlastsIt) {
  StopRequest stop;
  const WaitsEndOnStop watched(stop);
  stop.request(SIGTERM);
  {
    const WaitsOutlastStop finishing;
    const ProcessResult r = sh("sleep 0.2; echo stopped");
    EXPECT_TRUE(r.succeeded()) << describe_end(r, 5s);
    EXPECT_EQ(r.out, "stopped\n");
  }
  EXPECT_EQ(sh("sleep 30", 30s).end, End::abandoned);  // watched again
}

TEST(StopRequest, EndsAChildStreamsRead) {
  StopRequest stop;
  const WaitsEndOnStop watched(stop);
  ChildStream stream({{"/bin/sh", "-c", "echo first; exec sleep 30"}, {}});
  std::string out;
  while (out.empty() && stream.read(out, 5s)) {
  }
  EXPECT_EQ(out, "first\n");
  stop.request(SIGTERM);
  const auto start = Clock::now();
  EXPECT_FALSE(stream.read(out, 30s));
  EXPECT_LT(seconds_since(start), 10.0);
}

// Child streams whose children a tracer holds once killed: the parent cannot reap a traced child
// until its tracer has, as it cannot reap nvidia-smi in the ioctl of a hung driver until the
// driver returns. held() is false where ptrace is not allowed.
class HeldChildren {
 public:
  explicit HeldChildren(int count) {
    for (int i = 0; i < count; ++i) {
      ChildStream& stream =
          streams_.emplace_back(std::in_place, ProcessSpec{{"/bin/sh", "-c", "echo $$; exec sleep 30"}, {}}).value();
      std::string out;
      while (out.find('\n') == std::string::npos && stream.read(out, 5s)) {
      }
      pids_.push_back(static_cast<pid_t>(std::stol(out)));
    }
    int attached[2] = {-1, -1};
    if (::pipe(attached) != 0) return;
    tracer_ = ::fork();
    if (tracer_ == 0) {  // only what is async-signal-safe: the test runs threads
      char said = 'y';
      for (const pid_t pid : pids_)
        if (::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) != 0) said = 'n';
      (void)!::write(attached[1], &said, 1);
      ::sleep(30);  // never reaps its tracees
      ::_exit(0);
    }
    ::close(attached[1]);
    char said = 0;
    held_ = tracer_ > 0 && ::read(attached[0], &said, 1) == 1 && said == 'y';
    ::close(attached[0]);
  }
  HeldChildren(const HeldChildren&) = delete;
  HeldChildren& operator=(const HeldChildren&) = delete;
  ~HeldChildren() { release(); }

  bool held() const { return held_; }
  // Ends every stream at once, each on a thread of its own; how long that took, in seconds.
  double end_streams() {
    const auto start = Clock::now();
    std::vector<std::thread> enders;
    for (auto& stream : streams_) enders.emplace_back([&stream] { stream.reset(); });
    for (std::thread& ender : enders) ender.join();
    return seconds_since(start);
  }
  // The tracer goes: the killed children, zombies by now, are the parent's to reap again.
  void release() {
    if (tracer_ <= 0) return;
    ::kill(tracer_, SIGKILL);
    ::waitpid(tracer_, nullptr, 0);
    tracer_ = -1;
  }

 private:
  std::deque<std::optional<ChildStream>> streams_;
  std::vector<pid_t> pids_;
  pid_t tracer_ = -1;
  bool held_ = false;
};

// A killed child that cannot be reaped at once must not hang whoever ends it: gpurund's sampling,
// and its stop.
TEST(ChildStream, ItsEndDoesNotWaitForAChildThatCannotBeReaped) {
  HeldChildren children(1);
  if (!children.held()) GTEST_SKIP() << "ptrace is not allowed here: nothing can hold the child";
  EXPECT_LT(children.end_streams(), 10.0);  // its reaping given up after 2 s, not waited for the tracer's 30
}

// Each sample of a gpurund on a hung driver would leave one more unkillable nvidia-smi behind:
// after eight, nothing more is started, and once they end (the driver back) they are reaped and
// programs start again.
TEST(RunProcess, NothingMoreStartsWhileEightKilledChildrenHaveNotEnded) {
  HeldChildren children(8);
  if (!children.held()) GTEST_SKIP() << "ptrace is not allowed here: nothing can hold the children";
  children.end_streams();
  const ProcessResult refused = run_process({{"/bin/true"}, {}}, 5s);
  EXPECT_EQ(refused.end, End::not_started);
  EXPECT_THAT(refused.err, HasSubstr("8 programs this one started were killed and have not ended"));
  children.release();
  EXPECT_TRUE(run_process({{"/bin/true"}, {}}, 5s).succeeded());
}

TEST(DescribeEnd, SaysHowTheProcessEnded) {
  ProcessResult exited;
  exited.end = End::exited;
  exited.exit_code = 2;
  EXPECT_EQ(describe_end(exited, 10s), "exited with status 2");

  ProcessResult signaled;
  signaled.end = End::signaled;
  signaled.signal = SIGKILL;
  EXPECT_EQ(describe_end(signaled, 10s), "was killed by signal 9 (Killed)");

  ProcessResult timed_out;
  timed_out.end = End::timed_out;
  EXPECT_THAT(describe_end(timed_out, 10s), HasSubstr("10 s"));
  EXPECT_THAT(describe_end(timed_out, 1500ms), HasSubstr("1.5 s"));

  ProcessResult not_started;
  not_started.end = End::not_started;
  not_started.spawn_errno = ENOENT;
  EXPECT_THAT(describe_end(not_started, 10s), HasSubstr(std::strerror(ENOENT)));
}

TEST(DescribeEnd, TimeoutAndStartFailureTextsMatchTheHeader) {
  ProcessResult timed_out;
  timed_out.end = End::timed_out;
  EXPECT_EQ(describe_end(timed_out, 10s), "did not answer within 10 s and was killed");

  ProcessResult not_started;
  not_started.end = End::not_started;
  not_started.spawn_errno = ENOENT;
  EXPECT_EQ(describe_end(not_started, 10s), std::string("could not be started: ") + std::strerror(ENOENT));
}

}  // namespace
}  // namespace gpurun
