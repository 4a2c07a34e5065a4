// End-to-end: `gpurun pick` and `gpurun status`, in text and JSON.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(GpurunTest, PickPrintsTheChosenIndicesAscending) {
  const Outcome run = gpurun({"pick", "2"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "2,5\n");
}

// pick reserves nothing, so it cannot wait for what it would not hold: --wait is refused rather
// than ignored, and its advice on too few offers a launch with --wait.
TEST_F(GpurunTest, PickRefusesWaitAndItsAdviceOffersALaunchWithWait) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"pick", "--wait", "30m", "3"}, {"--wait=30m", "pick", "3"}}) {
    const Outcome waiting = gpurun(args, fakes("busy_dgx.json"));
    EXPECT_EQ(waiting.exit_code, 125);
    EXPECT_EQ(waiting.out, "");
    EXPECT_THAT(waiting.err, ::testing::StartsWith("gpurun: error: --wait does not go with `gpurun pick`: "));
  }
  const Outcome few = gpurun({"pick", "3"}, fakes("busy_dgx.json"));
  EXPECT_EQ(few.exit_code, 125);
  EXPECT_THAT(few.err, HasSubstr("launch with --wait, which waits for them (gpurun --wait 30m N -- CMD)"));
  EXPECT_THAT(gpurun({"--image", "img", "--dry-run", "3"}, fakes("busy_dgx.json")).err,
              HasSubstr("wait for them with --wait (--wait 30m)"));
}

TEST_F(GpurunTest, SelectionOptionsWorkBeforeOrAfterTheVerb) {
  EXPECT_EQ(gpurun({"pick", "--allow-busy", "3"}, fakes("busy_dgx.json")).out, "2,3,5\n");
  EXPECT_EQ(gpurun({"--allow-busy", "pick", "3"}, fakes("busy_dgx.json")).out, "2,3,5\n");
  EXPECT_EQ(gpurun({"pick", "3", "--allow-busy"}, fakes("busy_dgx.json")).out, "2,3,5\n");
}

TEST_F(GpurunTest, MinFreeMemorySharesTheBusyGpusWithMostMemoryFreeAfterTheFreeOnes) {
  // Free: 2 and 5. Busy with memory free: 3 (81913 MiB), 6 (79569), 7 (16510), 1 (10670).
  EXPECT_EQ(gpurun({"pick", "--min-free-memory", "10GiB", "4"}, fakes("busy_dgx.json")).out, "2,3,5,6\n");
  EXPECT_EQ(gpurun({"pick", "--min-free-memory", "10GiB", "2"}, fakes("busy_dgx.json")).out, "2,5\n");
  const Outcome too_few = gpurun({"pick", "--min-free-memory", "80GiB", "4"}, fakes("busy_dgx.json"));
  EXPECT_EQ(too_few.exit_code, 125);
  EXPECT_THAT(too_few.err, HasSubstr("No busy GPU has 81920 MiB free"));
  const Outcome bad = gpurun({"pick", "--min-free-memory", "10%", "1"}, fakes("busy_dgx.json"));
  EXPECT_EQ(bad.exit_code, 125);
  EXPECT_THAT(bad.err, HasSubstr("write it as 20GiB or 500MiB"));
}

TEST_F(GpurunTest, PickRaisedThresholdsCountMoreGpusFree) {
  // GPU 6 runs at 30 % with 2351 MiB but has a process: still busy. GPU 3's process too.
  const Outcome run = gpurun({"pick", "--max-util", "50", "3"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_EQ(gpurun({"pick", "--max-memory", "500MiB", "8"}, fakes("all_free_8.json")).out, "0,1,2,3,4,5,6,7\n");
}

TEST_F(GpurunTest, PickJsonListsIndicesAndGpus) {
  const Outcome run = gpurun({"pick", "--json", "2"}, fakes("busy_dgx.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["indices"], nlohmann::json::parse("[2, 5]"));
  ASSERT_EQ(json["gpus"].size(), 2u);
  EXPECT_EQ(json["gpus"][1]["uuid"], "GPU-171b2f3a-9f88-9eea-f77e-e09a4496e0ed");
  EXPECT_EQ(json["gpus"][1]["free"], true);
}

TEST_F(GpurunTest, PickSkipsMigEnabledGpus) {
  const Outcome status = gpurun({"status", "--json"}, fakes("mig.json"));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto json = nlohmann::json::parse(status.out);
  for (const auto& gpu : json["gpus"]) {
    if (gpu["mig_enabled"] == true) {
      EXPECT_EQ(gpu["free"], false);
      EXPECT_EQ(gpu["utilization_percent"], nullptr);
      EXPECT_THAT(gpu.at("reasons").at(0).get<std::string>(), HasSubstr("MIG mode is enabled"));
    }
  }
}

TEST_F(GpurunTest, StatusFitsEightyColumnsWithAShortStatePerGpu) {
  const Outcome run = gpurun({"status"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              ::testing::StartsWith("GPU  NAME                              MEMORY  UTIL  USER  STATE\n"
                                    "  0  NVIDIA A100-SXM4-80GB  78342 / 81920 MiB  100%  -     busy: 1 proc 100%\n"));
  EXPECT_THAT(run.out, HasSubstr("\n  5  NVIDIA A100-SXM4-80GB      3 / 81920 MiB    0%  -     free\n"));
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 9);
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
}

TEST_F(GpurunTest, StatusVerboseSaysWhyEachGpuIsBusyUnderItsRow) {
  const Outcome run = gpurun({"status", "--verbose"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr("  0  NVIDIA A100-SXM4-80GB  78342 / 81920 MiB  100%      1   97.8  -     busy: 1 proc 100%\n"
                        "      why: 1 compute process (pid 48213); memory used 78342 MiB > limit 8192 MiB "
                        "(10% of 81920 MiB); utilization 100% > limit 10%\n"));
}

TEST_F(GpurunTest, StatusUsesTheColumnsItIsGiven) {
  Env env = fakes("driver_610.json");
  const Outcome narrow = gpurun({"status"}, env);  // 80: the vendor's name goes first
  EXPECT_THAT(narrow.out, HasSubstr("\n  0  RTX PRO 6000 Blackwell Server Edition  0 / 97887 MiB"));
  env.emplace_back("COLUMNS", "120");
  EXPECT_THAT(gpurun({"status"}, env).out,
              HasSubstr("\n  0  NVIDIA RTX PRO 6000 Blackwell Server Edition  0 / 97887 MiB"));
  env.back().second = "40";  // never narrower than 80
  EXPECT_EQ(gpurun({"status"}, env).out, narrow.out);
}

TEST_F(GpurunTest, StatusJsonHasTheDocumentedFields) {
  const Outcome run = gpurun({"status", "--json"}, fakes("busy_dgx.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  ASSERT_EQ(json["gpus"].size(), 8u);
  const auto& gpu3 = json["gpus"][3];
  EXPECT_EQ(gpu3["index"], 3);
  EXPECT_EQ(gpu3["name"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gpu3["free"], false);
  EXPECT_EQ(gpu3["reasons"], nlohmann::json::parse(R"j(["1 compute process (pid 52771)"])j"));
  EXPECT_EQ(gpu3["state"], "busy: 1 proc 0%");
  EXPECT_EQ(gpu3["users"], nlohmann::json::array());
  EXPECT_TRUE(gpu3.at("processes").at(0).at("user").is_null());  // a stand-in's PID: nobody's here
  EXPECT_EQ(gpu3.at("processes").at(0).at("used_memory_mib"), 0.0);
  EXPECT_TRUE(gpu3["score"].is_number());
  EXPECT_TRUE(gpu3["uuid"].is_string());
}

TEST_F(GpurunTest, SnapshotFromAFileOrStdin) {
  const std::string sample = std::string(GPURUN_SOURCE_DIR) + "/scripts/sample/dgx-a100-busy.csv";
  EXPECT_EQ(gpurun({"--from-csv", sample, "pick", "2"}).out, "2,5\n");
  const Outcome piped = shell(fmt::format("exec {} --from-csv - pick 2 < '{}'", GPURUN_BINARY, sample));
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "2,5\n");
}

TEST_F(GpurunTest, SnapshotWithoutAHeaderUsesTheDocumentedColumnOrder) {
  const std::string csv = dir() + "/plain.csv";
  std::ofstream(csv)
      << "0, GPU-a, NVIDIA L40S, 40000, 46068, 99, [N/A]\r\n\r\n1, GPU-b, NVIDIA L40S, 1, 46068, 0, [N/A]\r\n";
  EXPECT_EQ(gpurun({"--from-csv", csv, "pick"}).out, "1\n");
}

TEST_F(GpurunTest, QuietHidesTheRankingVerboseShowsIt) {
  const Outcome quiet = gpurun({"-q", "--dry-run", "--host-cpus", "64", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_EQ(quiet.err, "");
  const Outcome verbose = gpurun({"--verbose", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_THAT(verbose.err, HasSubstr("picked GPU 5 of 8"));
  const Outcome normal = gpurun({"--host-cpus", "64", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_EQ(normal.err, "");  // a real launch keeps stderr for the job
}

}  // namespace
}  // namespace gpurun::testing
