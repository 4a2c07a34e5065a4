// The real gpurun reading GPUs through NVML: the stand-in libnvidia-ml (tests/fakes/nvml), named
// by GPURUN_NVML_LIBRARY and answering from tests/data/nvml/. The nvidia-smi stand-in answers
// the same machine from tests/data/scenarios/, so both sources can be compared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
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
  EXPECT_EQ(parsed.value("source", ""), "nvml");
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
  EXPECT_EQ(json["gpus"][0]["util_p95"], 50);  // the driver's samples, 30 and 50 in turn
  EXPECT_EQ(json["gpus"][0]["mem_peak_mib"], 1000.0);
  EXPECT_EQ(json["gpus"][1]["util_mean"], 55.0);  // no samples: the current rate
}

// mig.json: GPU 0 whole and busy; GPU 1 in MIG mode with a busy 3g.40gb, a free 2g.20gb, a busy
// and a free 1g.10gb.
TEST_F(NvmlTest, StatusListsTheInstancesUnderTheirGpu) {
  const Outcome run = gpurun({"status", "--ignore-containers"}, nvml("mig.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("\n  1  NVIDIA H100 80GB HBM3     22150 / 81559 MiB     ?  -     not offered\n"
                                 "       MIG 3g.40gb GI 2 CI 0   18232 / 40320 MiB   n/a  -     busy: 2 procs\n"
                                 "       MIG 2g.20gb GI 3 CI 0      15 / 20096 MiB   n/a  -     free\n"));
  const Outcome verbose = gpurun({"status", "--verbose", "--ignore-containers"}, nvml("mig.json"));
  EXPECT_THAT(verbose.out, HasSubstr("      why: MIG mode is enabled (not offered as a whole GPU); "));
  EXPECT_THAT(verbose.out,
              HasSubstr("\n       MIG 1g.10gb GI 9 CI 0     3891 / 9984 MiB   n/a      1   39.0  -     busy: 1 proc\n"
                        "      why: 1 compute process (pid 8301); memory used 3891 MiB > limit 998.4 MiB (10% of 9984 "
                        "MiB)\n"
                        "      note: utilization n/a (NVML has none per instance)\n"
                        "      uuid: MIG-3b4c5d6e-7f8a-5b9c-8d1e-2f3a4b5c6d7e\n"));
  const Outcome json = gpurun({"status", "--json", "--ignore-containers"}, nvml("mig.json"));
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_FALSE(parsed["gpus"][0].contains("mig_instances"));
  const auto& instances = parsed.at("gpus").at(1).at("mig_instances");
  ASSERT_EQ(instances.size(), 4u);
  EXPECT_EQ(instances[0]["profile"], "3g.40gb");
  EXPECT_EQ(instances[0]["gpu_instance_id"], 2);
  EXPECT_EQ(instances[0]["processes"].size(), 2u);
  EXPECT_TRUE(instances[0]["utilization_percent"].is_null());
  EXPECT_EQ(instances[3]["uuid"], "MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f");
  EXPECT_EQ(instances[3]["free"], true);
}

TEST_F(NvmlTest, PickMigPrintsMigUuids) {
  const Outcome one = gpurun({"pick", "--mig", "1g.10gb", "--ignore-containers"}, nvml("mig.json"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f\n");
  EXPECT_THAT(one.err, Not(HasSubstr("one MIG instance per process")));
  // The profile as NVIDIA's tables print it, in capitals: the same one.
  const Outcome upper = gpurun({"pick", "--mig", "1G.10GB", "--ignore-containers"}, nvml("mig.json"));
  ASSERT_EQ(upper.exit_code, 0) << upper.err;
  EXPECT_EQ(upper.out, one.out);

  const Outcome two =
      gpurun({"pick", "--mig", "1g.10gb", "--mig-allow-larger", "2", "--ignore-containers"}, nvml("mig.json"));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, "MIG-2a3b4c5d-6e7f-5a8b-9c0d-1e2f3a4b5c6d,MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f\n");
  EXPECT_THAT(two.err, HasSubstr("CUDA uses one MIG instance per process"));

  // --json names each instance by its GPU's index and its ids: its place among the instances
  // (3, here) is no GPU's, and a script reading "indices" took it for one.
  const Outcome json_two = gpurun(
      {"pick", "--mig", "1g.10gb", "--mig-allow-larger", "2", "--ignore-containers", "--json"}, nvml("mig.json"));
  ASSERT_EQ(json_two.exit_code, 0) << json_two.err;
  const auto picked = nlohmann::json::parse(json_two.out);
  EXPECT_EQ(picked["indices"], nlohmann::json::parse("[1, 1]"));
  EXPECT_EQ(picked["gpus"][1]["index"], 1);
  EXPECT_EQ(picked["gpus"][1]["mig_enabled"], true);
  EXPECT_EQ(picked["gpus"][1]["mig_instance"]["profile"], "1g.10gb");
  EXPECT_TRUE(picked["gpus"][1]["mig_instance"]["gpu_instance_id"].is_number_integer());

  const Outcome strict = gpurun({"pick", "--mig=1g.10gb", "2", "--ignore-containers"}, nvml("mig.json"));
  EXPECT_EQ(strict.exit_code, 125);
  EXPECT_THAT(strict.err, HasSubstr("need 2 free MIG instances of profile 1g.10gb but 1 of 2 is free"));
}

TEST_F(NvmlTest, AMigGpuIsNeverHandedOutWhole) {
  const Outcome run = gpurun({"pick", "--allow-busy", "2", "--ignore-containers"}, nvml("mig.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("MIG enabled"));
}

TEST_F(NvmlTest, LaunchOnAMigInstanceGivesDockerItsUuid) {
  const Outcome dry = gpurun(
      {"--mig", "1g.10gb", "--dry-run", "-q", "--ignore-containers", "--image", "img", "1", "--", "python", "train.py"},
      nvml("mig.json"));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("--gpus '\"device=MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f\"'"));
  EXPECT_THAT(dry.out, HasSubstr("img python train.py"));

  const Outcome run =
      gpurun({"--mig", "1g.10gb", "--ignore-containers", "--image", "img", "1", "true"}, nvml("mig.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto argv = docker_argv();
  const auto gpus = std::find(argv.begin(), argv.end(), "--gpus");
  ASSERT_NE(gpus, argv.end());
  EXPECT_EQ(*(gpus + 1), "\"device=MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f\"");
}

TEST_F(NvmlTest, AReservedInstanceIsBusyByItsMigUuid) {
  std::filesystem::create_directories(lock_dir());
  const std::string lock = lock_dir() + "/gpu-MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f.lock";
  const Outcome run =
      shell("flock -x '" + lock + "' " + GPURUN_BINARY + " pick --mig 1g.10gb --ignore-containers", nvml("mig.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("(GI 10 CI 0) busy: reserved by another gpurun launch"));
}

TEST_F(NvmlTest, MigNeedsNvml) {
  const Outcome run = gpurun({"pick", "--mig"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("--mig needs NVML as the GPU source, but nvidia-smi answered"));
  const Outcome launch = gpurun({"--mig", "--dry-run", "--image", "img"}, fakes("busy_dgx.json"));
  EXPECT_EQ(launch.exit_code, 125);
  EXPECT_THAT(launch.err, HasSubstr("--mig needs NVML"));
}

TEST_F(NvmlTest, AnUnknownSourceIsRefused) {
  const Outcome run = gpurun({"pick", "--gpu-source", "nvsmi"}, fakes("busy_dgx.json"));
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_THAT(run.err, HasSubstr("--gpu-source: \"nvsmi\" is not one of auto, nvml, nvidia-smi"));
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
