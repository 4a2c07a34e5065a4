// End-to-end: --report runs the job as a child, forwards signals, and summarises a scripted
// utilization trace exactly.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <future>
#include <thread>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// report_trace.json: GPU 0 runs 90 95 100 20 30 40 45 50 60 70 % (peak 40000 MiB), GPU 1 runs
// at 95 % with one [N/A] sample; 10 frames, then the stream stays silent.
class ReportTest : public GpurunTest {
 protected:
  Env reporting_env(const std::string& docker_sleep, int docker_exit = 0) const {
    Env env = fakes("report_trace.json", docker_exit);
    env.emplace_back("FAKE_DOCKER_SLEEP", docker_sleep);
    return env;
  }
  // Starts gpurun in the background; its pid (gpurun's own: sh execs it) is written to pid_file().
  std::future<ProcessResult> start(const std::vector<std::string>& args, const Env& env) {
    std::string line = fmt::format("echo $$ > {}; exec {}", pid_file(), GPURUN_BINARY);
    for (const auto& a : args) line += " '" + a + "'";
    return std::async(std::launch::async, [line, env] { return run_process({{"/bin/sh", "-c", line}, env}, 60s); });
  }
  std::string pid_file() const { return dir() + "/gpurun.pid"; }
  void wait_for_docker() const {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!docker_ran() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(docker_ran());
    std::this_thread::sleep_for(200ms);  // let the stand-in set its signal traps
  }
};

TEST_F(ReportTest, SummaryFiguresMatchTheTraceExactly) {
  const std::string json_path = dir() + "/report.json";
  const Outcome run = gpurun({"--report", "--report-interval", "0.1", "--report-json", json_path, "--host-cpus", "64",
                              "--image", "img", "2", "train"},
                             reporting_env("3", 3));
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_THAT(run.err, HasSubstr("  exit status     3\n"));
  EXPECT_THAT(run.err, HasSubstr("  granted         2 GPUs (0, 1), 16 CPUs\n"));
  EXPECT_THAT(run.err, HasSubstr("    0      60.0%      100%        40%  40000 / 81920 MiB        10\n"));
  EXPECT_THAT(run.err, HasSubstr("    1      95.0%       95%         0%  20000 / 81920 MiB         9\n"));
  EXPECT_THAT(run.err, HasSubstr("  GPU efficiency  77.5%\n"));
  EXPECT_THAT(run.err, HasSubstr("Below 80%"));
  EXPECT_THAT(run.err, HasSubstr("num_workers"));
  EXPECT_THAT(run.err, HasSubstr("pin_memory"));

  const auto json = nlohmann::json::parse(read_file(json_path));
  EXPECT_EQ(json["exit_status"], 3);
  EXPECT_EQ(json["gpu_efficiency"], 77.5);
  EXPECT_GE(json["wall_s"].get<double>(), 2.9);
  ASSERT_EQ(json["gpus"].size(), 2u);
  EXPECT_EQ(json["gpus"][0]["index"], 0);
  EXPECT_EQ(json["gpus"][0]["uuid"], "GPU-a84bba07-931d-b925-306a-0799dc6ebd71");
  EXPECT_EQ(json["gpus"][0]["util_mean"], 60.0);
  EXPECT_EQ(json["gpus"][0]["util_p95"], 100);
  EXPECT_EQ(json["gpus"][0]["util_under_50_share"], 0.4);
  EXPECT_EQ(json["gpus"][0]["mem_peak_mib"], 40000.0);
  EXPECT_EQ(json["gpus"][1]["samples"], 9);
  EXPECT_EQ(json["gpus"][1]["missing_samples"], 1);
}

TEST_F(ReportTest, AReportJsonIntoAMissingDirectoryFailsBeforeTheJobStarts) {
  const Outcome run =
      gpurun({"--report-json", dir() + "/no/such/report.json", "--image", "img", "1", "train"}, reporting_env("3"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("the directory " + dir() + "/no/such does not exist; create it first"));
  EXPECT_FALSE(docker_ran());
}

TEST_F(ReportTest, AReportJsonNamingADirectoryFailsBeforeTheJobStarts) {
  const Outcome run = gpurun({"--report-json", dir(), "--image", "img", "1", "train"}, reporting_env("3"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("it is a directory; name a file in it, such as " + dir() + "/report.json"));
  EXPECT_FALSE(docker_ran());
}

TEST_F(ReportTest, AReportThatCannotBeWrittenIsAFailureNotAHang) {
  // A FIFO nobody reads waited forever after the job, its GPUs still reserved; a full disk was silent.
  const std::string fifo = dir() + "/report.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Outcome run =
      gpurun({"--report-interval", "0.1", "--report-json", fifo, "--image", "img", "1", "train"}, reporting_env("0.3"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("cannot write the report to " + fifo + ": it is a FIFO nobody reads"));
  EXPECT_THAT(run.err, HasSubstr("GPU efficiency"));  // the report itself was shown
  run = gpurun({"--report-interval", "0.1", "--report-json", "/dev/full", "--image", "img", "1", "train"},
               reporting_env("0.3", 4));
  EXPECT_EQ(run.exit_code, 4);  // the job's failure is the one told by the exit status
  EXPECT_THAT(run.err, HasSubstr("cannot write the report to /dev/full: No space left on device"));
}

TEST_F(ReportTest, NoHintsAboveTheThreshold) {
  const Outcome run = gpurun(
      {"--report", "--report-interval", "0.1", "--report-threshold", "50", "--image", "img", "2"}, reporting_env("2"));
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("GPU efficiency  77.5%"));
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("Below")));
}

TEST_F(ReportTest, SigintReachesTheJobWhichDecidesTheExitStatus) {
  Env env = reporting_env("30");
  env.emplace_back("FAKE_DOCKER_INT_EXIT", "7");
  auto running = start({"--report", "--image", "img", "1"}, env);
  wait_for_docker();
  ::kill(std::stoi(read_file(pid_file())), SIGINT);
  const ProcessResult result = running.get();
  EXPECT_EQ(result.end, ProcessResult::End::exited);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_THAT(result.err, HasSubstr("  exit status     7\n"));
}

TEST_F(ReportTest, SigtermIsForwardedToo) {
  auto running = start({"--report", "--image", "img", "1"}, reporting_env("30"));
  wait_for_docker();
  ::kill(std::stoi(read_file(pid_file())), SIGTERM);
  const ProcessResult result = running.get();
  EXPECT_EQ(result.exit_code, 143);
}

// Slurm's --signal=USR1@90 warns a job of its time limit: the job takes it, not gpurun (which
// SIGUSR1 would end by default, report and all).
TEST_F(ReportTest, SigusrOneIsForwardedToTheJob) {
  auto running = start({"--report", "--image", "img", "1"}, reporting_env("30"));
  wait_for_docker();
  ::kill(std::stoi(read_file(pid_file())), SIGUSR1);
  const ProcessResult result = running.get();
  EXPECT_EQ(result.end, ProcessResult::End::exited);
  EXPECT_EQ(result.exit_code, 128 + SIGUSR1);  // the stand-in's default: ended by it
  EXPECT_THAT(result.err, HasSubstr("  exit status     138\n"));
}

TEST_F(ReportTest, AJobKilledByASignalExits128PlusIt) {
  const std::string suicidal = dir() + "/docker";
  std::ofstream(suicidal) << "#!/bin/sh\n[ \"$1\" = run ] && kill -KILL $$\nexit 0\n";  // its ps lists nothing
  std::filesystem::permissions(suicidal, std::filesystem::perms::owner_all);
  Env env = reporting_env("1");
  env.emplace_back("GPURUN_DOCKER", suicidal);
  const Outcome run = gpurun({"--report", "--image", "img", "1"}, env);
  EXPECT_EQ(run.exit_code, 137);
  EXPECT_THAT(run.err, HasSubstr("  exit status     137\n"));
}

TEST_F(ReportTest, AConfigKeyMakesReportingTheDefault) {
  std::filesystem::create_directories(dir() + "/xdg/gpurun");
  std::ofstream(dir() + "/xdg/gpurun/config.json") << R"({"report": true})";
  const Outcome run = gpurun({"--report-interval", "0.1", "--image", "img", "2"}, reporting_env("2"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("GPU efficiency  77.5%"));
}

TEST_F(ReportTest, ReportCannotGoWithDetach) {
  const Outcome run = gpurun({"--report", "--detach", "--image", "img"}, reporting_env("1"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("--report needs the job attached"));
}

}  // namespace
}  // namespace gpurun::testing

namespace gpurun::testing {
namespace {

TEST_F(GpurunTest, StatusWatchPrintsFramesWithoutEscapesWhenNotATerminal) {
  const Outcome run = gpurun({"status", "--watch", "0.2", "--count", "2"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.find('\033'), std::string::npos);
  std::size_t frames = 0;
  for (std::size_t at = 0; (at = run.out.find("gpurun status, every 0.2s: ", at)) != std::string::npos; ++at) ++frames;
  EXPECT_EQ(frames, 2u);
  EXPECT_THAT(run.out,
              ::testing::HasSubstr("  6  A100-SXM4-80GB  [###.......]  30%   2351 / 81920 MiB  process pid 50310\n"));
  EXPECT_THAT(run.out, ::testing::HasSubstr("  5  A100-SXM4-80GB  [..........]   0%      3 / 81920 MiB  -\n"));
  EXPECT_THAT(run.out, ::testing::HasSubstr("\n\ngpurun status, every 0.2s: "));  // frames apart
}

TEST_F(GpurunTest, StatusWatchRedrawsInPlaceOnATerminal) {
  if (::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  const Outcome run = shell(fmt::format("script -qec '{} status --watch=0.2 --count 2' /dev/null", GPURUN_BINARY),
                            fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::size_t redraws = 0;
  for (std::size_t at = 0; (at = run.out.find("\033[H\033[2J", at)) != std::string::npos; ++at) ++redraws;
  EXPECT_EQ(redraws, 2u);
  EXPECT_THAT(run.out, ::testing::HasSubstr("(Ctrl-C to stop)"));
}

}  // namespace
}  // namespace gpurun::testing
