// Unit tests for --report's job control: the job runs as a child (given as argv; gpurun itself
// uses no shell, the job here happens to be one), its exit status comes back, 128+N when signal N
// ended it, and the signals gpurun receives are forwarded to it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/job/job_report.hpp"
#include "gpurun/job/supervise.hpp"
#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using test::make_gpu;

JobReport granted(std::vector<Gpu> gpus) {
  JobReport report;
  report.gpus = std::move(gpus);
  return report;
}

class Supervise : public ::testing::Test {
 protected:
  // A silent stream for the monitor: the job is too short to be sampled.
  SupervisedRun run_of(std::vector<std::string> argv) const {
    return {std::move(argv), test::write_script(dir_ / "nvidia-smi", "exec sleep 30"), 1000ms, false, ""};
  }

  test::TempDir dir_{"gpurun-supervise"};
  JobReport report_ = granted({make_gpu(0, 0, 81920, 0), make_gpu(3, 0, 81920, 0)});
};

TEST_F(Supervise, ReturnsTheJobsExitStatusAndFillsTheReport) {
  EXPECT_EQ(run_supervised(run_of({"/bin/sh", "-c", "exit 3"}), report_), 3);
  EXPECT_EQ(report_.exit_status, 3);
  EXPECT_GT(report_.wall_s, 0);
  EXPECT_LT(report_.wall_s, 5);
  ASSERT_EQ(report_.stats.size(), 2u);
  EXPECT_EQ(report_.stats.count(0), 1u);
  EXPECT_EQ(report_.stats.count(3), 1u);
}

TEST_F(Supervise, AJobEndedBySignalNGives128PlusN) {
  EXPECT_EQ(run_supervised(run_of({"/bin/sh", "-c", "kill -KILL $$"}), report_), 128 + 9);
  EXPECT_EQ(report_.exit_status, 137);
}

TEST_F(Supervise, ASignalToGpurunIsForwardedToTheJob) {
  // The job signals its parent (this process), which must pass SIGTERM on to it: the job then dies
  // of it long before its sleep ends.
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(run_supervised(run_of({"/bin/sh", "-c", "kill -TERM $PPID; exec sleep 20"}), report_), 128 + 15);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST_F(Supervise, AMissingProgramIsExit127) {
  const auto e = test::caught_error([&] { run_supervised(run_of({dir_ / "no-such-job"}), report_); });
  EXPECT_EQ(e.exit_code, exit_code::not_found);
}

}  // namespace
}  // namespace gpurun
