// Unit tests for the GPU-source seam: the nvidia-smi source against the stand-in nvidia-smi
// (scenarios in tests/data/scenarios/), the recorded-CSV source on captures, and the factory.
#include "gpurun/gpu/gpu_source.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpurun/util/error.hpp"
#include "smi/csv_snapshot_source.hpp"
#include "smi/nvidia_smi_source.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;
const fs::path kData = GPURUN_TEST_DATA_DIR;
const std::string kFakeSmi = std::string(GPURUN_FAKES_DIR) + "/nvidia-smi";
constexpr std::chrono::seconds kTimeout{20};

// Points the stand-in at a scenario (and a log of its invocations) for one test.
class FakeSmiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = fs::temp_directory_path() / ("gpurun-source-test-" + std::to_string(::getpid()) + ".log");
    fs::remove(log_);
    ::setenv("FAKE_SMI_LOG", log_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("FAKE_SMI_LOG");
    ::unsetenv("FAKE_SMI_SCENARIO");
    fs::remove(log_);
  }
  static void scenario(const std::string& name) {
    ::setenv("FAKE_SMI_SCENARIO", (kData / "scenarios" / name).c_str(), 1);
  }
  std::vector<std::string> calls() const {
    std::ifstream file(log_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    return lines;
  }

 private:
  fs::path log_;
};

std::vector<int> indices(const Snapshot& s) {
  std::vector<int> out;
  for (const Gpu& g : s.gpus) out.push_back(g.index);
  return out;
}

TEST_F(FakeSmiTest, ReadsGpusAndProcessesInIndexOrder) {
  scenario("mig.json");
  NvidiaSmiSource source(kFakeSmi);
  const Snapshot s = source.read(kTimeout);
  EXPECT_EQ(s.source, "nvidia-smi");
  EXPECT_TRUE(s.processes_known);
  EXPECT_THAT(indices(s), ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(s.gpus[1].mig_enabled);
  EXPECT_EQ(s.gpus[1].processes.size(), 3u);
  EXPECT_TRUE(s.warnings.empty());
}

TEST_F(FakeSmiTest, ADriverBeforeR450IsAskedAgainWithoutMigModeAndRemembersIt) {
  scenario("pre_r450.json");
  NvidiaSmiSource source(kFakeSmi);
  const Snapshot first = source.read(kTimeout);
  EXPECT_THAT(indices(first), ElementsAre(0, 1));
  EXPECT_EQ(first.gpus[0].utilization_percent, 100.0);
  EXPECT_FALSE(first.gpus[0].mig_enabled);
  EXPECT_THAT(source.gpu_fields(), Not(::testing::Contains("mig.mode.current")));
  EXPECT_EQ(calls().size(), 3u);  // the GPU query, the apps query, the GPU query again
  (void)source.read(kTimeout);
  ASSERT_EQ(calls().size(), 5u);  // no third try with the field it does not know
  EXPECT_THAT(calls()[3], Not(HasSubstr("mig.mode.current")));
}

TEST_F(FakeSmiTest, ARequiredFieldUnknownIsStillAnErrorWithTheHint) {
  const fs::path scenario_file =
      fs::temp_directory_path() / ("gpurun-no-memory-" + std::to_string(::getpid()) + ".json");
  std::ofstream(scenario_file) << R"({"unknown_fields": ["memory.used"], "gpus": [{"index": 0}]})";
  ::setenv("FAKE_SMI_SCENARIO", scenario_file.c_str(), 1);
  NvidiaSmiSource source(kFakeSmi);
  try {
    (void)source.read(kTimeout);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Field \"memory.used\" is not a valid field to query."));
    EXPECT_THAT(e.what(), HasSubstr("a newer driver"));
  }
  fs::remove(scenario_file);
}

TEST_F(FakeSmiTest, ALostGpuIsLeftOutWithAWarningTheOthersKept) {
  scenario("lost_gpu.json");
  const Snapshot s = NvidiaSmiSource(kFakeSmi).read(kTimeout);
  EXPECT_THAT(indices(s), ElementsAre(0, 2, 3));
  ASSERT_EQ(s.lost.size(), 1u);
  EXPECT_EQ(s.lost[0].pci_bus_id, "0000:34:00.0");
  EXPECT_THAT(s.warnings, ElementsAre("nvidia-smi cannot reach the GPU at PCI bus 0000:34:00.0 (Unknown Error): it is "
                                      "left out, the others are used"));
}

TEST_F(FakeSmiTest, AnInfoRomWarningOnStderrWithExit14KeepsTheData) {
  scenario("inforom_stderr.json");
  const Snapshot s = NvidiaSmiSource(kFakeSmi).read(kTimeout);
  EXPECT_THAT(indices(s), ElementsAre(0, 1));
  EXPECT_THAT(s.warnings, ElementsAre("nvidia-smi: WARNING: infoROM is corrupted at gpu 0000:B3:00.0"));
}

TEST_F(FakeSmiTest, AnInfoRomWarningBeforeTheRowsOnStdoutKeepsTheData) {
  scenario("inforom_stdout.json");
  const Snapshot s = NvidiaSmiSource(kFakeSmi).read(kTimeout);
  EXPECT_THAT(indices(s), ElementsAre(0, 1));
  EXPECT_THAT(s.warnings, ElementsAre("nvidia-smi: WARNING: infoROM is corrupted at gpu 0000:B3:00.0"));
}

TEST_F(FakeSmiTest, Driver610BareNaAndEmptyCellsAreMissingValues) {
  scenario("driver_610.json");
  const Snapshot s = NvidiaSmiSource(kFakeSmi).read(kTimeout);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_FALSE(s.gpus[1].memory_used_mib);
  EXPECT_FALSE(s.gpus[1].utilization_percent);
  EXPECT_EQ(s.gpus[1].memory_total_mib, 97887.0);
}

TEST_F(FakeSmiTest, AFailureDoesNotDumpTheCsvIntoTheError) {
  const fs::path scenario_file = fs::temp_directory_path() / ("gpurun-exit-3-" + std::to_string(::getpid()) + ".json");
  std::ofstream(scenario_file)
      << R"({"exit_code": 3, "stdout": "0, GPU-a, A100, 4, 81920, 0, Disabled\nSomething went wrong\n"})";
  ::setenv("FAKE_SMI_SCENARIO", scenario_file.c_str(), 1);
  try {
    (void)NvidiaSmiSource(kFakeSmi).read(kTimeout);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("exited with status 3: Something went wrong"));
    EXPECT_THAT(e.what(), Not(HasSubstr("GPU-a")));
  }
  fs::remove(scenario_file);
}

TEST(CsvSnapshotSource, WithoutAnAppsFileProcessesAreNotKnown) {
  CsvSnapshotSource source((kData / "captures" / "dgx-a100-80gb-x8.noheader-nounits.csv").string(), std::nullopt);
  const Snapshot s = source.read(kTimeout);
  EXPECT_FALSE(s.processes_known);
  EXPECT_EQ(s.gpus.size(), 8u);
  EXPECT_THAT(s.source, HasSubstr("snapshot "));
}

TEST(CsvSnapshotSource, WithAnAppsFileProcessesAreAttachedAndKnown) {
  const fs::path dir = fs::temp_directory_path();
  const fs::path gpus = dir / ("gpurun-pair-gpus-" + std::to_string(::getpid()) + ".csv");
  const fs::path apps = dir / ("gpurun-pair-apps-" + std::to_string(::getpid()) + ".csv");
  std::ofstream(gpus) << "1, GPU-b, A100, 4, 81920, 0, Disabled\n0, GPU-a, A100, 4, 81920, 0, Disabled\n";
  std::ofstream(apps) << "gpu_uuid, pid, used_gpu_memory [MiB]\nGPU-b, 4242, 0 MiB\n";
  const Snapshot s = CsvSnapshotSource(gpus.string(), apps.string()).read(kTimeout);
  EXPECT_TRUE(s.processes_known);
  EXPECT_THAT(indices(s), ElementsAre(0, 1));  // sorted by index
  ASSERT_EQ(s.gpus[1].processes.size(), 1u);
  EXPECT_EQ(s.gpus[1].processes[0].pid, 4242);
  fs::remove(gpus);
  fs::remove(apps);
}

TEST(CsvSnapshotSource, ALostGpuInASnapshotIsKept) {
  const Snapshot s =
      CsvSnapshotSource((kData / "captures" / "lost-gpu-among-rows.noheader-nounits.csv").string(), std::nullopt)
          .read(kTimeout);
  EXPECT_THAT(indices(s), ElementsAre(0, 2, 3));
  ASSERT_EQ(s.lost.size(), 1u);
  EXPECT_EQ(s.lost[0].pci_bus_id, "0000:34:00.0");
}

TEST(CsvSnapshotSource, WhatIsNoSnapshotIsSaidToBeNone) {
  EXPECT_EQ(
      test::caught_error([] { (void)CsvSnapshotSource(::testing::TempDir(), std::nullopt).read(kTimeout); }).message,
      "cannot read --from-csv " + ::testing::TempDir() +
          ": it is a directory; give the file nvidia-smi's CSV was saved to");
  // A device that never ends is refused at the bound, not read until memory runs out.
  EXPECT_EQ(test::caught_error([] { (void)CsvSnapshotSource("/dev/zero", std::nullopt).read(kTimeout); }).message,
            "cannot read --from-csv /dev/zero: it is over 64 MiB; give the file nvidia-smi's CSV was saved to");
  const std::string gpus = (kData / "captures" / "dgx-a100-80gb-x8.noheader-nounits.csv").string();
  EXPECT_THAT(
      test::caught_error([&] { (void)CsvSnapshotSource(gpus, "/nonexistent/apps.csv").read(kTimeout); }).message,
      HasSubstr("cannot read --from-apps-csv /nonexistent/apps.csv: No such file or directory"));
}

TEST(MakeGpuSource, PicksTheSourceTheSpecNames) {
  EXPECT_EQ(make_gpu_source({"nvidia-smi", std::nullopt, std::nullopt, GpuSourceSetting::nvidia_smi, ""})->name(),
            "nvidia-smi");
  EXPECT_EQ(make_gpu_source({"nvidia-smi", "some.csv", std::nullopt, GpuSourceSetting::nvidia_smi, ""})->name(),
            "snapshot some.csv");
  EXPECT_THROW(make_gpu_source({"nvidia-smi", std::nullopt, "apps.csv", GpuSourceSetting::nvidia_smi, ""}), Error);
  EXPECT_THROW(make_gpu_source({"nvidia-smi", "-", "-", GpuSourceSetting::nvidia_smi, ""}), Error);
}

}  // namespace
}  // namespace gpurun
