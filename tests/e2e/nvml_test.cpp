// The real gpurun reading GPUs through NVML: the stand-in libnvidia-ml (tests/fakes/nvml), named
// by GPURUN_NVML_LIBRARY and answering from tests/data/nvml/. The nvidia-smi stand-in answers
// the same machine from tests/data/scenarios/, so both sources can be compared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

inline std::string nvml_scenario(const std::string& name) {
  return std::string(GPURUN_TEST_DATA_DIR) + "/nvml/" + name;
}

class NvmlTest : public GpurunTest {
 protected:
  // The stand-ins, with NVML answering from `nvml_name` and nvidia-smi from `smi_name`.
  Env nvml(const std::string& nvml_name, const std::string& smi_name = "busy_dgx.json",
           const std::string& source = "nvml") const {
    Env env = fakes(smi_name);
    for (auto& [name, value] : env)
      if (name == "GPURUN_GPU_SOURCE") value = source;
    env.emplace_back("GPURUN_NVML_LIBRARY", FAKE_NVML_FULL);
    env.emplace_back("FAKE_NVML_SCENARIO", nvml_scenario(nvml_name));
    return env;
  }
};

TEST_F(NvmlTest, StatusComesFromNvmlAndMatchesNvidiaSmi) {
  const Outcome through_nvml = gpurun({"status"}, nvml("busy_8.json"));
  ASSERT_EQ(through_nvml.exit_code, 0) << through_nvml.err;
  EXPECT_THAT(through_nvml.err, HasSubstr("GPU source: nvml"));
  const Outcome through_smi = gpurun({"status"}, fakes("busy_dgx.json"));
  ASSERT_EQ(through_smi.exit_code, 0) << through_smi.err;
  EXPECT_THAT(through_smi.err, HasSubstr("GPU source: nvidia-smi"));
  EXPECT_EQ(through_nvml.out, through_smi.out);  // the same machine, the same table

  const Outcome json = gpurun({"status", "--json", "--ignore-containers"}, nvml("busy_8.json"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["source"], "nvml");
  ASSERT_EQ(parsed["gpus"].size(), 8u);
  EXPECT_EQ(parsed["gpus"][0]["uuid"], "GPU-ebc57f45-9064-1e1f-0378-60cf29ae3656");
}

TEST_F(NvmlTest, PickAndDryRunThroughNvml) {
  const Outcome smi_pick = gpurun({"pick", "2"}, fakes("busy_dgx.json"));
  const Outcome nvml_pick = gpurun({"pick", "2"}, nvml("busy_8.json", "missing.json"));
  ASSERT_EQ(nvml_pick.exit_code, 0) << nvml_pick.err;
  EXPECT_EQ(nvml_pick.out, smi_pick.out);
  EXPECT_EQ(nvml_pick.out, "2,5\n");

  const Outcome dry = gpurun({"--dry-run", "-q", "--image", "img", "2", "true"}, nvml("busy_8.json", "missing.json"));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("--gpus '\"device=2,5\"'"));
}

TEST_F(NvmlTest, DriverNotLoadedEndsWith125AndSaysWhatToDo) {
  const Outcome run = gpurun({"pick"}, nvml("driver_not_loaded.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("did not initialise: Driver Not Loaded"));
  EXPECT_THAT(run.err, HasSubstr("Is the NVIDIA driver installed and loaded (lsmod | grep nvidia)?"));
  EXPECT_EQ(run.out, "");
}

TEST_F(NvmlTest, VersionMismatchEndsWith125AndSaysWhatToDo) {
  const Outcome run = gpurun({"status"}, nvml("version_mismatch.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("reboot, or reload the nvidia kernel modules"));
}

TEST_F(NvmlTest, AMissingLibraryEndsWith125UnderNvml) {
  Env env = nvml("idle_8.json");
  env.emplace_back("GPURUN_NVML_LIBRARY", dir() + "/no-libnvidia-ml.so.1");  // the later one wins
  const Outcome run = gpurun({"pick"}, env);
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("cannot load the NVML library " + dir() + "/no-libnvidia-ml.so.1"));
  EXPECT_THAT(run.err, HasSubstr("--gpu-source nvidia-smi"));
}

TEST_F(NvmlTest, AutoUsesNvmlWhenItLoads) {
  const Outcome run = gpurun({"status", "--json", "--ignore-containers"}, nvml("idle_8.json", "missing.json", "auto"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["source"], "nvml");
}

TEST_F(NvmlTest, AutoFallsBackToNvidiaSmiSilently) {
  for (const char* scenario_name : {"driver_not_loaded.json", "version_mismatch.json"}) {
    const Outcome run = gpurun({"pick", "2"}, nvml(scenario_name, "busy_dgx.json", "auto"));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out, "2,5\n");
    EXPECT_THAT(run.err, Not(HasSubstr("NVML")));
  }
  const Outcome verbose = gpurun({"pick", "2", "--verbose"}, nvml("driver_not_loaded.json", "busy_dgx.json", "auto"));
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_THAT(verbose.err, HasSubstr("NVML not used: NVML (" FAKE_NVML_FULL ") did not initialise: Driver Not Loaded"));
}

TEST_F(NvmlTest, AReportedRunSamplesThroughNvmlAndSpawnsNoNvidiaSmi) {
  Env env = nvml("sampled.json");
  // An nvidia-smi that leaves a trace if anything runs it.
  const std::string smi_calls = dir() + "/smi-calls";
  const std::string smi = dir() + "/nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\necho \"$*\" >> '" << smi_calls << "'\nexit 1\n";
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  env.emplace_back("GPURUN_NVIDIA_SMI", smi);
  env.emplace_back("FAKE_DOCKER_SLEEP", "1");
  const std::string json_path = dir() + "/report.json";
  const Outcome run = gpurun({"--report", "--report-interval", "0.1", "--report-json", json_path, "--host-cpus", "64",
                              "--ignore-containers", "--allow-busy", "--image", "img", "2", "train"},
                             env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_FALSE(std::filesystem::exists(smi_calls)) << read_file(smi_calls);
  const auto json = nlohmann::json::parse(read_file(json_path));
  ASSERT_EQ(json["gpus"].size(), 2u);
  EXPECT_EQ(json["gpus"][0]["index"], 0);
  EXPECT_GE(json["gpus"][0]["samples"].get<int>(), 5);
  EXPECT_EQ(json["gpus"][0]["util_p95"], 50);   // the driver's samples, 30 and 50 in turn
  EXPECT_EQ(json["gpus"][0]["mem_peak_mib"], 1000.0);
  EXPECT_EQ(json["gpus"][1]["util_mean"], 55.0);  // no samples: the current rate
}

TEST_F(NvmlTest, AnUnknownSourceIsRefused) {
  const Outcome run = gpurun({"pick", "--gpu-source", "nvsmi"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("gpu_source \"nvsmi\": expected auto, nvml or nvidia-smi"));
}

TEST_F(NvmlTest, AProjectFileMayNotNameTheLibrary) {
  std::filesystem::create_directories(dir() + "/project");
  std::ofstream(dir() + "/project/.gpurun.json") << R"({"nvml_library": "/tmp/evil.so"})";
  Env env = nvml("idle_8.json");
  const Outcome run = shell("cd " + dir() + "/project && " + GPURUN_BINARY + " pick", env);
  EXPECT_THAT(run.err, HasSubstr("nvml_library"));
  EXPECT_THAT(run.err, Not(HasSubstr("evil.so:")));  // never loaded
}

}  // namespace
}  // namespace gpurun::testing
