// End-to-end: the real gpurund against the stand-in nvidia-smi (whose busy DGX lists seven GPU
// processes), recording runs into a real SQLite database; stopped by SIGTERM and by kill -9.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <set>
#include <thread>

#include "gpurun/history/run_store.hpp"
#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class GpurundTest : public GpurunTest {
 protected:
  std::string state() const { return dir() + "/state"; }
  // Starts gpurund sampling every 0.1 s; its stderr goes to dir()/gpurund.err.
  pid_t start() const {
    std::vector<std::string> args{GPURUND_BINARY, "--state-dir",      state(),    "--interval",  "0.1", "--no-config",
                                  "--nvidia-smi", fake("nvidia-smi"), "--docker", fake("docker")};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text{"FAKE_SMI_SCENARIO=" + scenario("busy_dgx.json"), "PATH=/usr/bin:/bin",
                                      "GPURUN_SYSFS_ROOT=" + dir() + "/no-sysfs"};
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, (dir() + "/gpurund.err").c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    pid_t pid = 0;
    EXPECT_EQ(::posix_spawn(&pid, GPURUND_BINARY, &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }
  static int stop(pid_t pid, int signal) {
    ::kill(pid, signal);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::vector<RunRecord> runs() const { return RunStore(state() + "/gpurund.db").runs({}); }
};

TEST_F(GpurundTest, RecordsEveryGpuProcessAsARunAndStopsCleanlyOnSigterm) {
  const pid_t pid = start();
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(stop(pid, SIGTERM), 0) << read_file(dir() + "/gpurund.err");
  const std::vector<RunRecord> recorded = runs();
  ASSERT_EQ(recorded.size(), 7u) << read_file(dir() + "/gpurund.err");
  std::set<std::string> keys;
  for (const RunRecord& run : recorded) {
    keys.insert(run.key);
    EXPECT_FALSE(run.end);
    EXPECT_GT(run.gpu_seconds, 0.5);
    ASSERT_EQ(run.gpus.size(), 1u);
  }
  EXPECT_TRUE(keys.contains("process:48213:"));  // GPU 0 at 100 %: busy all the time
  for (const RunRecord& run : recorded) {
    if (run.key == "process:48213:") {
      EXPECT_DOUBLE_EQ(*run.efficiency(), 100.0);
    }
  }
}

TEST_F(GpurundTest, AfterKill9ARestartContinuesTheSameRunsWithoutDuplicates) {
  pid_t pid = start();
  std::this_thread::sleep_for(1200ms);
  // The store is written at each flush; kill -9 loses only what came after the last.
  stop(pid, SIGKILL);
  ASSERT_EQ(runs().size(), 7u);  // written when they started
  pid = start();
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(stop(pid, SIGTERM), 0);
  const std::vector<RunRecord> recorded = runs();
  EXPECT_EQ(recorded.size(), 7u);
  for (const RunRecord& run : recorded) EXPECT_LE(run.id, 7);
}

TEST_F(GpurundTest, ASecondGpurundOnTheSameStateDirectoryIsRefused) {
  const pid_t first = start();
  std::this_thread::sleep_for(500ms);
  const Outcome second = shell(std::string(GPURUND_BINARY) + " --no-config --state-dir " + state() + " --nvidia-smi " +
                               fake("nvidia-smi") + " --interval 0.1");
  EXPECT_EQ(second.exit_code, 125);
  EXPECT_THAT(second.err, HasSubstr("another gpurund records into " + state()));
  EXPECT_EQ(stop(first, SIGTERM), 0);
}

}  // namespace
}  // namespace gpurun::testing
