// End-to-end: real machines' quirks (issue 16) through the stand-in nvidia-smi.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(GpurunTest, UnifiedMemoryGb10IsFreeAndStatusSaysMemoryWasNotJudged) {
  EXPECT_EQ(gpurun({"pick"}, fakes("gb10.json")).out, "0\n");
  const Outcome status = gpurun({"status", "--verbose"}, fakes("gb10.json"));
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("? / ? MiB"));
  EXPECT_THAT(status.out, HasSubstr("free\n      note: memory could not be judged, the driver reports none (unified "
                                    "memory): judged by processes and utilization\n"));
}

TEST_F(GpurunTest, MoreGpusThanTheMachineHasFailsAtOnceWithOrWithoutWait) {
  const auto start = std::chrono::steady_clock::now();
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"pick", "2"},
                                             {"pick", "--allow-busy", "2"},
                                             {"--wait", "--image", "img", "2"},
                                             {"--wait=1h", "--image", "img", "2"},
                                             {"--dry-run", "--wait", "--image", "img", "2"}}) {
    const Outcome run = gpurun(args, fakes("gb10.json"));
    EXPECT_EQ(run.exit_code, 125) << args.back();
    EXPECT_THAT(run.err, HasSubstr("need 2 GPUs but this machine has 1 GPU"));
    EXPECT_THAT(run.err, Not(HasSubstr("--max-memory")));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));  // no wait
}

TEST_F(GpurunTest, AMigGpuIsNeverHandedOutWholeEvenWithAllowBusy) {
  const Outcome three = gpurun({"pick", "--allow-busy", "3"}, fakes("mig.json"));
  EXPECT_EQ(three.out, "0,2,3\n") << three.err;
  const Outcome four = gpurun({"pick", "--allow-busy", "4"}, fakes("mig.json"));
  EXPECT_EQ(four.exit_code, 125);
  EXPECT_THAT(four.err, HasSubstr("1 has MIG enabled and is never handed out whole"));
}

TEST_F(GpurunTest, ASnapshotShowsProcessesAsNotChecked) {
  const std::string sample = std::string(GPURUN_SOURCE_DIR) + "/scripts/sample/dgx-a100-busy.csv";
  const Outcome status = gpurun({"--from-csv", sample, "status", "--verbose"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("note: processes not checked"));
  EXPECT_THAT(status.out, HasSubstr("%      ?"));
  const auto json = nlohmann::json::parse(gpurun({"--from-csv", sample, "status", "--json"}).out);
  EXPECT_TRUE(json.at("gpus").at(0).at("processes").is_null());
  const Outcome pick = gpurun({"--from-csv", sample, "pick", "2"});
  EXPECT_EQ(pick.out, "2,5\n");
  EXPECT_THAT(pick.err, HasSubstr("warning: processes were not checked"));
}

TEST_F(GpurunTest, ASnapshotWithItsAppsCsvIsJudgedWithItsProcesses) {
  const std::string gpus = dir() + "/gpus.csv";
  const std::string apps = dir() + "/apps.csv";
  std::ofstream(gpus) << "0, GPU-a, NVIDIA A100-SXM4-80GB, 4, 81920, 0, Disabled\n"
                         "1, GPU-b, NVIDIA A100-SXM4-80GB, 5, 81920, 0, Disabled\n";
  std::ofstream(apps) << "gpu_uuid, pid, used_gpu_memory [MiB]\nGPU-a, 4242, 0 MiB\n";
  const Outcome pick = gpurun({"--from-csv", gpus, "--from-apps-csv", apps, "pick"});
  EXPECT_EQ(pick.out, "1\n");
  EXPECT_THAT(pick.err, Not(HasSubstr("not checked")));
  const auto json =
      nlohmann::json::parse(gpurun({"--from-csv", gpus, "--from-apps-csv", apps, "status", "--json"}).out);
  EXPECT_EQ(json.at("gpus").at(0).at("processes").at(0).at("pid"), 4242);
  const Outcome alone = gpurun({"--from-apps-csv", apps, "status"});
  EXPECT_EQ(alone.exit_code, 125);
  EXPECT_THAT(alone.err, HasSubstr("--from-csv"));
}

TEST_F(GpurunTest, ALostGpuIsNamedInStatusAndTheOthersAreUsed) {
  const Outcome status = gpurun({"status"}, fakes("lost_gpu.json"));
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.err,
              HasSubstr("warning: nvidia-smi cannot reach the GPU at PCI bus 0000:34:00.0 (Unknown Error)"));
  EXPECT_THAT(status.out, HasSubstr("lost: the GPU at PCI bus 0000:34:00.0 cannot be reached (Unknown Error)"));
  const auto json = nlohmann::json::parse(gpurun({"status", "--json"}, fakes("lost_gpu.json")).out);
  EXPECT_EQ(json["gpus"].size(), 3u);
  EXPECT_EQ(json.at("lost").at(0).at("pci_bus_id"), "0000:34:00.0");
  EXPECT_EQ(gpurun({"pick", "2"}, fakes("lost_gpu.json")).out, "0,3\n");
}

TEST_F(GpurunTest, ADriverBeforeR450IsAskedWithoutMigMode) {
  Env env = fakes("pre_r450.json");
  env.emplace_back("FAKE_SMI_LOG", dir() + "/smi.log");
  const Outcome pick = gpurun({"pick"}, env);
  EXPECT_EQ(pick.exit_code, 0) << pick.err;
  EXPECT_EQ(pick.out, "1\n");
  EXPECT_THAT(read_file(dir() + "/smi.log"),
              HasSubstr("\"--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu\""));
}

TEST_F(GpurunTest, AnInfoRomWarningKeepsTheDataAndNamesTheGpu) {
  for (const char* scenario_name : {"inforom_stderr.json", "inforom_stdout.json"}) {
    const Outcome pick = gpurun({"pick", "2"}, fakes(scenario_name));
    EXPECT_EQ(pick.exit_code, 0) << scenario_name << ": " << pick.err;
    EXPECT_EQ(pick.out, "0,1\n");
    EXPECT_THAT(pick.err, HasSubstr("warning: nvidia-smi: WARNING: infoROM is corrupted at gpu 0000:B3:00.0"));
    EXPECT_THAT(pick.err, Not(HasSubstr("GPU-5e8a2f71")));  // no CSV in the message
  }
}

TEST_F(GpurunTest, Driver610BareNaAndEmptyCellsAreUnknownNotErrors) {
  const Outcome status = gpurun({"status", "--verbose"}, fakes("driver_610.json"));
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("why: memory use unknown"));
  EXPECT_EQ(gpurun({"pick"}, fakes("driver_610.json")).out, "0\n");
}

TEST_F(GpurunTest, DryRunWithWaitSaysWhatItWouldWaitFor) {
  const Outcome run = gpurun({"--dry-run", "--wait=10m", "--image", "img", "3"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("dry run: 2 of 3 GPUs free now; a real launch would wait up to 10m"));
  const Outcome forever = gpurun({"--dry-run", "--wait", "--image", "img", "3"}, fakes("busy_dgx.json"));
  EXPECT_THAT(forever.err, HasSubstr("would wait without limit until 3 are free"));
  const Outcome no_wait = gpurun({"--dry-run", "--image", "img", "3"}, fakes("busy_dgx.json"));
  EXPECT_EQ(no_wait.exit_code, 125);
}

}  // namespace
}  // namespace gpurun::testing
