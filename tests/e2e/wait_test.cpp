// End-to-end: --wait queues launches until GPUs free up, and never puts two jobs on one GPU.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

struct Interval {
  double start = 0;
  double end = 0;
  std::string gpus;
};

// The stand-in docker's "start|end TIME GPUS PID" lines, as one interval per job.
std::map<std::string, Interval> read_intervals(const std::string& path) {
  std::map<std::string, Interval> jobs;
  std::istringstream lines(read_file(path));
  std::string phase, gpus, pid;
  double time = 0;
  while (lines >> phase >> time >> gpus >> pid) {
    Interval& job = jobs[pid];
    job.gpus = gpus;
    (phase == "start" ? job.start : job.end) = time;
  }
  return jobs;
}

TEST_F(GpurunTest, WaitingLaunchesAllRunAndNoGpuIsEverHeldTwice) {
  const std::string log = dir() + "/intervals";
  Env env = fakes("all_free_8.json");
  env.emplace_back("FAKE_DOCKER_SLEEP", "1");
  env.emplace_back("FAKE_DOCKER_INTERVALS", log);

  std::vector<std::future<Outcome>> launches;
  for (int i = 0; i < 8; ++i)
    launches.push_back(std::async(std::launch::async, [&] {
      return gpurun({"--wait=2m", "--image", "img", "2", "job"}, env);
    }));
  for (auto& launch : launches) {
    const Outcome outcome = launch.get();
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  }

  const auto jobs = read_intervals(log);
  ASSERT_EQ(jobs.size(), 8u);
  std::map<int, std::vector<Interval>> by_gpu;
  for (const auto& [pid, job] : jobs) {
    EXPECT_GT(job.end, job.start) << pid;
    for (int gpu : gpu_devices(job.gpus)) by_gpu[gpu].push_back(job);
  }
  for (auto& [gpu, intervals] : by_gpu) {
    std::sort(intervals.begin(), intervals.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < intervals.size(); ++i)
      EXPECT_LE(intervals[i - 1].end, intervals[i].start) << "GPU " << gpu << " held by two jobs at once";
  }
}

TEST_F(GpurunTest, WaitGivesUpAtItsLimitWith125) {
  const Outcome outcome = gpurun({"--wait=1s", "--image", "img", "3"}, fakes("busy_dgx.json"));
  EXPECT_EQ(outcome.exit_code, 125);
  EXPECT_THAT(outcome.err, HasSubstr("gpurun: waiting for GPUs: 2 of 3 free, first in the queue; waited 0s"));
  EXPECT_THAT(outcome.err, HasSubstr("gpurun: error: gave up after waiting 1s for 3 free GPUs (2 free now)"));
  EXPECT_FALSE(docker_ran());
  for (const auto& entry : std::filesystem::directory_iterator(lock_dir()))
    EXPECT_FALSE(entry.path().filename().string().starts_with("ticket-")) << entry.path();
}

// Once the wait is under way, a look that fails (nvidia-smi timing out once) is waited out; one
// that keeps failing (a driver upgraded under it) ends the wait, rather than keeping the queue
// behind it waiting forever, and says why.
TEST_F(GpurunTest, AWaitOutlastsAFailedLookButNotLooksThatKeepFailing) {
  // The stand-in answers the first look (its two queries), then fails: the driver is gone.
  const std::string smi = dir() + "/nvidia-smi";
  const std::string count = dir() + "/looks";
  std::ofstream(smi)
      << "#!/bin/sh\necho x >> '" << count << "'\n[ $(wc -l < '" << count
      << "') -le 2 ] || { echo 'Failed to initialize NVML: Driver/library version mismatch' >&2; exit 18; }\n"
      << "exec '" << fake("nvidia-smi") << "' \"$@\"\n";
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  Env env = fakes("busy_dgx.json");
  for (auto& [name, value] : env)
    if (name == "GPURUN_NVIDIA_SMI") value = smi;
  const Outcome outcome = gpurun({"--wait", "--image", "img", "3"}, env);
  EXPECT_EQ(outcome.exit_code, 125);
  EXPECT_THAT(outcome.err, HasSubstr("while waiting: "));
  EXPECT_THAT(outcome.err, HasSubstr("(the wait goes on: gpurun looks again)"));
  EXPECT_THAT(outcome.err, HasSubstr("gpurun: error: "));
  EXPECT_THAT(outcome.err, HasSubstr("Driver/library version mismatch"));
  EXPECT_FALSE(docker_ran());
}

TEST_F(GpurunTest, CtrlCWhileWaitingLeavesNothingBehind) {
  const std::string pid_file = dir() + "/pid";
  auto waiting = std::async(std::launch::async, [&] {
    return run_process(
        {{"/bin/sh", "-c", fmt::format("echo $$ > {}; exec {} --wait --image img 3", pid_file, GPURUN_BINARY)},
         fakes("busy_dgx.json")},
        60s);
  });
  // Wait until it has joined the queue.
  const auto has_ticket = [&] {
    if (!std::filesystem::exists(lock_dir())) return false;
    for (const auto& entry : std::filesystem::directory_iterator(lock_dir()))
      if (entry.path().filename().string().starts_with("ticket-")) return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!has_ticket() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(has_ticket());
  ::kill(std::stoi(read_file(pid_file)), SIGINT);
  const ProcessResult result = waiting.get();
  EXPECT_EQ(result.end, ProcessResult::End::exited);
  EXPECT_EQ(result.exit_code, 130);
  EXPECT_FALSE(has_ticket());
  EXPECT_FALSE(docker_ran());
}

TEST_F(GpurunTest, BadWaitDurationIsAUsageError) {
  const Outcome outcome = gpurun({"--wait=soon", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_EQ(outcome.exit_code, 125);
  EXPECT_THAT(outcome.err, HasSubstr("--wait=soon: expected a duration such as 90, 30s, 5m or 2h"));
}

}  // namespace
}  // namespace gpurun::testing
