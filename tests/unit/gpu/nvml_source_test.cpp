// The NVML source against the stand-in libnvidia-ml (tests/fakes/nvml) and its scenarios
// (tests/data/nvml), and against the nvidia-smi stand-in for parity.
#include "nvml/nvml_source.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "gpurun/gpu/gpu_source.hpp"
#include "gpurun/util/error.hpp"
#include "nvml/nvml_api.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::string kScenarios = std::string(GPURUN_TEST_DATA_DIR) + "/nvml/";

void use_scenario(const std::string& name) {
  ASSERT_EQ(::setenv("FAKE_NVML_SCENARIO", (kScenarios + name).c_str(), 1), 0);
}

// Each test's scenario is gone after it: the tests of other files may share this process.
class NvmlSourceTest : public ::testing::Test {
 protected:
  ~NvmlSourceTest() override { ::unsetenv("FAKE_NVML_SCENARIO"); }
};

Snapshot read_with(const std::string& library, const std::string& scenario) {
  use_scenario(scenario);
  NvmlSource source(library);
  return source.read(1s);
}

using ProcessRow = std::tuple<std::string, long, std::optional<double>>;

std::vector<ProcessRow> rows(const std::vector<GpuProcess>& processes) {
  std::vector<ProcessRow> out;
  for (const GpuProcess& p : processes) out.emplace_back(p.gpu_uuid, p.pid, p.used_memory_mib);
  return out;
}

// Asserts every field the two sources both know.
void expect_same_gpus(const std::vector<Gpu>& expected, const std::vector<Gpu>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("GPU " + std::to_string(i));
    EXPECT_EQ(expected[i].index, actual[i].index);
    EXPECT_EQ(expected[i].uuid, actual[i].uuid);
    EXPECT_EQ(expected[i].name, actual[i].name);
    EXPECT_EQ(expected[i].memory_used_mib, actual[i].memory_used_mib);
    EXPECT_EQ(expected[i].memory_total_mib, actual[i].memory_total_mib);
    EXPECT_EQ(expected[i].utilization_percent, actual[i].utilization_percent);
    EXPECT_EQ(expected[i].mig_enabled, actual[i].mig_enabled);
    EXPECT_EQ(rows(expected[i].processes), rows(actual[i].processes));
  }
}

// The first two GPUs of busy_8.json (busy_dgx.json for nvidia-smi), field by field.
void expect_busy_box(const Snapshot& snapshot) {
  ASSERT_EQ(snapshot.gpus.size(), 8U);
  const Gpu& gpu0 = snapshot.gpus[0];
  EXPECT_EQ(gpu0.index, 0);
  EXPECT_EQ(gpu0.uuid, "GPU-ebc57f45-9064-1e1f-0378-60cf29ae3656");
  EXPECT_EQ(gpu0.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gpu0.memory_used_mib, 78342.0);
  EXPECT_EQ(gpu0.memory_total_mib, 81920.0);
  EXPECT_EQ(gpu0.utilization_percent, 100.0);
  EXPECT_FALSE(gpu0.mig_enabled);
  EXPECT_EQ(rows(gpu0.processes), (std::vector<ProcessRow>{{gpu0.uuid, 48213, 77824.0}}));
  const Gpu& gpu1 = snapshot.gpus[1];
  EXPECT_EQ(rows(gpu1.processes), (std::vector<ProcessRow>{{gpu1.uuid, 48214, 70144.0}, {gpu1.uuid, 51022, 596.0}}));
  EXPECT_EQ(rows(snapshot.gpus[3].processes),
            (std::vector<ProcessRow>{{"GPU-e81c1aad-236d-31de-f0b9-d2993134b65a", 52771, 0.0}}));
  EXPECT_TRUE(snapshot.gpus[2].processes.empty());
  EXPECT_EQ(snapshot.gpus[7].index, 7);
  EXPECT_EQ(snapshot.gpus[7].utilization_percent, 92.0);
  std::size_t processes = 0;
  for (const Gpu& gpu : snapshot.gpus) processes += gpu.processes.size();
  EXPECT_EQ(processes, 7U);
  EXPECT_EQ(snapshot.source, "nvml");
  EXPECT_TRUE(snapshot.processes_known);
  EXPECT_TRUE(snapshot.warnings.empty());
  EXPECT_TRUE(snapshot.mig_instances.empty());
}

TEST(NvmlApi, Memory_v2CarriesTheVersionTheDriverChecks) { EXPECT_EQ(nvml::kMemory_v2Version, 0x02000028U); }

TEST_F(NvmlSourceTest, BusyBoxThroughV3) { expect_busy_box(read_with(FAKE_NVML_FULL, "busy_8.json")); }

TEST_F(NvmlSourceTest, PowerAndTemperatureOnlyWhenAskedAndWhereTheGpuTells) {
  use_scenario("busy_8.json");
  const Snapshot plain = NvmlSource(FAKE_NVML_FULL).read(1s);
  EXPECT_EQ(plain.gpus[0].power_draw_w, std::nullopt);  // a launch does not ask
  const Snapshot sensed = NvmlSource(FAKE_NVML_FULL, true).read(1s);
  EXPECT_EQ(sensed.gpus[0].power_draw_w, 97.74);
  EXPECT_EQ(sensed.gpus[0].temperature_c, 39);
  EXPECT_EQ(sensed.gpus[1].power_draw_w, std::nullopt);  // NOT_SUPPORTED: missing, not zero
  EXPECT_EQ(sensed.gpus[1].temperature_c, std::nullopt);
  // A library without the calls answers the rest.
  const Snapshot minimal = NvmlSource(FAKE_NVML_MINIMAL, true).read(1s);
  EXPECT_EQ(minimal.gpus[0].power_draw_w, std::nullopt);
  EXPECT_EQ(minimal.gpus[0].utilization_percent, 100.0);
}

TEST_F(NvmlSourceTest, BusyBoxThroughV2WhenTheLibraryHasNoV3) {
  expect_busy_box(read_with(FAKE_NVML_NO_V3, "busy_8.json"));
}

TEST_F(NvmlSourceTest, BusyBoxThroughALibraryWithOnlyTheRequiredSymbols) {
  expect_busy_box(read_with(FAKE_NVML_MINIMAL, "busy_8.json"));
}

TEST_F(NvmlSourceTest, IdleBoxUsesMemoryInfoV2) {
  const Snapshot snapshot = read_with(FAKE_NVML_FULL, "idle_8.json");
  ASSERT_EQ(snapshot.gpus.size(), 8U);
  for (int i = 0; i < 8; ++i) {
    const Gpu& gpu = snapshot.gpus[static_cast<std::size_t>(i)];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.memory_used_mib, 4.0);  // v2: without the driver's 533 MiB reserve
    EXPECT_EQ(gpu.memory_total_mib, 81920.0);
    EXPECT_EQ(gpu.utilization_percent, 0.0);
    EXPECT_TRUE(gpu.processes.empty());
  }
  EXPECT_EQ(snapshot.gpus[7].uuid, "GPU-7fa42f93-ceaf-2ffb-f3e0-b6e9aba45ee6");
  EXPECT_TRUE(snapshot.warnings.empty());
}

TEST_F(NvmlSourceTest, IdleBoxWithoutMemoryInfoV2CountsTheReserveAsUsed) {
  const Snapshot snapshot = read_with(FAKE_NVML_MINIMAL, "idle_8.json");
  ASSERT_EQ(snapshot.gpus.size(), 8U);
  EXPECT_EQ(snapshot.gpus[0].memory_used_mib, 537.0);
  EXPECT_EQ(snapshot.gpus[0].memory_total_mib, 81920.0);
  EXPECT_FALSE(snapshot.gpus[0].mig_enabled);
}

TEST_F(NvmlSourceTest, MigInstancesWithTheirProfilesMemoryAndProcesses) {
  const Snapshot snapshot = read_with(FAKE_NVML_FULL, "mig.json");
  ASSERT_EQ(snapshot.gpus.size(), 2U);
  const Gpu& plain = snapshot.gpus[0];
  EXPECT_FALSE(plain.mig_enabled);
  EXPECT_EQ(plain.utilization_percent, 71.0);
  EXPECT_EQ(rows(plain.processes), (std::vector<ProcessRow>{{plain.uuid, 7001, 39680.0}}));

  const Gpu& mig = snapshot.gpus[1];
  const std::string parent = "GPU-9c8d7e6f-5a4b-4c3d-8e2f-1a0b9c8d7e6f";
  EXPECT_TRUE(mig.mig_enabled);
  EXPECT_EQ(mig.uuid, parent);
  EXPECT_EQ(mig.utilization_percent, std::nullopt);  // NVML has none for a MIG GPU
  EXPECT_EQ(mig.memory_used_mib, 22150.0);
  EXPECT_EQ(rows(mig.processes),
            (std::vector<ProcessRow>{{parent, 8101, 17920.0}, {parent, 8102, std::nullopt}, {parent, 8301, 3584.0}}));

  ASSERT_EQ(snapshot.mig_instances.size(), 4U);
  struct Expected {
    std::string uuid;
    int gi;
    int slot;  // an empty slot 2: the toolkit's "1:3" is the third instance
    std::string profile;
    double used;
    double total;
  };
  const std::vector<Expected> expected{
      {"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a5b", 2, 0, "3g.40gb", 18232, 40320},
      {"MIG-2a3b4c5d-6e7f-5a8b-9c0d-1e2f3a4b5c6d", 3, 1, "2g.20gb", 15, 20096},
      {"MIG-3b4c5d6e-7f8a-5b9c-8d1e-2f3a4b5c6d7e", 9, 3, "1g.10gb", 3891, 9984},
      // No name from NVML: the profile comes from the slice count and memory size.
      {"MIG-4c5d6e7f-8a9b-5c0d-9e2f-3a4b5c6d7e8f", 10, 4, "1g.10gb", 12, 9984},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("instance " + std::to_string(i));
    const MigInstance& instance = snapshot.mig_instances[i];
    EXPECT_EQ(instance.uuid, expected[i].uuid);
    EXPECT_EQ(instance.gpu_index, 1);
    EXPECT_EQ(instance.gpu_instance_id, expected[i].gi);
    EXPECT_EQ(instance.device_index, expected[i].slot);
    EXPECT_EQ(instance.compute_instance_id, 0);
    EXPECT_EQ(instance.profile, expected[i].profile);
    EXPECT_EQ(instance.memory_used_mib, expected[i].used);
    EXPECT_EQ(instance.memory_total_mib, expected[i].total);
  }
  EXPECT_EQ(rows(snapshot.mig_instances[0].processes),
            (std::vector<ProcessRow>{{expected[0].uuid, 8101, 17920.0}, {expected[0].uuid, 8102, std::nullopt}}));
  EXPECT_TRUE(snapshot.mig_instances[1].processes.empty());
  EXPECT_EQ(rows(snapshot.mig_instances[2].processes), (std::vector<ProcessRow>{{expected[2].uuid, 8301, 3584.0}}));
  EXPECT_TRUE(snapshot.warnings.empty());
}

// One instance NVML fails to read (for a moment, or while the GPU is reconfigured): the GPU is
// said to be partly read, so that gpurund holds its holders' runs rather than ending them.
TEST_F(NvmlSourceTest, AnInstanceThatCannotBeReadLeavesItsGpuPartlyRead) {
  EXPECT_THAT(read_with(FAKE_NVML_FULL, "mig.json").partly_read, ::testing::IsEmpty());
  nlohmann::json scenario = nlohmann::json::parse(test::read_file(kScenarios + "mig.json"));
  scenario["gpus"][1]["mig_devices"][1]["errors"] = {{"nvmlDeviceGetUUID", "GPU_IS_LOST"}};
  const test::TempDir dir;
  const std::string path = dir / "mig-one-lost.json";
  test::write_file(path, scenario.dump());
  ASSERT_EQ(::setenv("FAKE_NVML_SCENARIO", path.c_str(), 1), 0);
  NvmlSource source(FAKE_NVML_FULL);
  const Snapshot snapshot = source.read(1s);
  EXPECT_THAT(snapshot.partly_read, ::testing::ElementsAre(1));
  EXPECT_EQ(snapshot.mig_instances.size(), 3U);  // the other three
}

TEST_F(NvmlSourceTest, MigGpuThroughALibraryWithoutMigCallsIsAPlainGpu) {
  const Snapshot snapshot = read_with(FAKE_NVML_MINIMAL, "mig.json");
  ASSERT_EQ(snapshot.gpus.size(), 2U);
  EXPECT_FALSE(snapshot.gpus[1].mig_enabled);
  EXPECT_TRUE(snapshot.mig_instances.empty());
}

void expect_failure(const std::string& scenario, const std::string& words, const std::string& hint) {
  use_scenario(scenario);
  try {
    NvmlSource(FAKE_NVML_FULL).read(1s);
    FAIL() << "read() did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 125);
    EXPECT_THAT(e.what(), HasSubstr(words));
    EXPECT_THAT(e.what(), HasSubstr(hint));
  }
  const NvmlProbe probe = probe_nvml_source(FAKE_NVML_FULL);
  EXPECT_EQ(probe.source, nullptr);
  EXPECT_THAT(probe.failure, HasSubstr(words));
}

TEST_F(NvmlSourceTest, DriverNotLoaded) {
  expect_failure("driver_not_loaded.json", "did not initialise: Driver Not Loaded (NVML error 9)",
                 "Is the NVIDIA driver installed and loaded (lsmod | grep nvidia)?");
}

TEST_F(NvmlSourceTest, DriverLibraryVersionMismatch) {
  expect_failure("version_mismatch.json", "RM has detected an NVML/RM version mismatch. (NVML error 18)",
                 "reboot, or reload the nvidia kernel modules");
}

TEST_F(NvmlSourceTest, LostGpusAreLeftOutWithAWarning) {
  const Snapshot snapshot = read_with(FAKE_NVML_FULL, "gpu_lost.json");
  ASSERT_EQ(snapshot.gpus.size(), 2U);
  EXPECT_EQ(snapshot.gpus[0].index, 0);
  EXPECT_EQ(snapshot.gpus[1].index, 2);
  EXPECT_EQ(rows(snapshot.gpus[1].processes),
            (std::vector<ProcessRow>{{"GPU-2c3d4e5f-6a7b-4c8d-8e9f-1a2b3c4d5e6f", 4242, 10234.0}}));
  const std::string hint = "A GPU fell off the bus or needs a reset: see dmesg, reset it (nvidia-smi -r) or reboot.";
  EXPECT_EQ(snapshot.warnings,
            (std::vector<std::string>{
                "GPU 1 is unusable: NVML says GPU is lost (NVML error 15) reading its memory; left out. " + hint,
                "GPU 3 is unusable: NVML says GPU is lost (NVML error 15) reading its handle; left out. " + hint}));
}

TEST_F(NvmlSourceTest, GpusWithoutPermissionAreSkipped) {
  const Snapshot snapshot = read_with(FAKE_NVML_FULL, "no_permission.json");
  ASSERT_EQ(snapshot.gpus.size(), 1U);
  EXPECT_EQ(snapshot.gpus[0].index, 0);
  EXPECT_EQ(snapshot.gpus[0].name, "NVIDIA L40S");
  EXPECT_EQ(snapshot.warnings,
            (std::vector<std::string>{
                "GPU 1: NVML says Insufficient Permissions (NVML error 4) reading its handle; left out "
                "(this user may not open it)",
                "GPU 2: NVML says Insufficient Permissions (NVML error 4) reading its processes; left out "
                "(this user may not open it)"}));
}

TEST_F(NvmlSourceTest, InsufficientSizeGrowsAndRetries) {
  const Snapshot snapshot = read_with(FAKE_NVML_FULL, "insufficient_size.json");
  ASSERT_EQ(snapshot.gpus.size(), 1U);
  const Gpu& gpu = snapshot.gpus[0];
  std::vector<ProcessRow> expected;
  for (long i = 0; i < 40; ++i) expected.emplace_back(gpu.uuid, 20000 + i, static_cast<double>(100 + i));
  EXPECT_EQ(rows(gpu.processes), expected);
  // A driver that never has room enough: that GPU's processes are unknown, so it is left out.
  EXPECT_EQ(
      snapshot.warnings,
      (std::vector<std::string>{"GPU 1: NVML says Insufficient Size (NVML error 7) listing its processes; left out"}));
}

TEST_F(NvmlSourceTest, ThirtyTwoByteV3RecordsOfEarlyR535Drivers) {
  const Snapshot snapshot = read_with(FAKE_NVML_FULL, "r535_record.json");
  ASSERT_EQ(snapshot.gpus.size(), 2U);
  const std::string uuid0 = snapshot.gpus[0].uuid;
  EXPECT_EQ(snapshot.gpus[0].memory_used_mib, 30410.0);  // 30409.81 MiB rounds as nvidia-smi rounds it
  EXPECT_EQ(rows(snapshot.gpus[0].processes),
            (std::vector<ProcessRow>{{uuid0, 51001, 20480.0}, {uuid0, 51002, 9216.0}, {uuid0, 51003, std::nullopt}}));
  EXPECT_EQ(rows(snapshot.gpus[1].processes), (std::vector<ProcessRow>{{snapshot.gpus[1].uuid, 52001, 1.0}}));
}

TEST_F(NvmlSourceTest, ReadsAgainWithTheLibraryStillLoaded) {
  use_scenario("busy_8.json");
  NvmlSource source(FAKE_NVML_FULL);
  expect_busy_box(source.read(1s));
  expect_busy_box(source.read(1s));
}

TEST_F(NvmlSourceTest, ProbeGivesAWorkingSource) {
  use_scenario("idle_8.json");
  const NvmlProbe probe = probe_nvml_source(FAKE_NVML_FULL);
  ASSERT_NE(probe.source, nullptr);
  EXPECT_EQ(probe.failure, "");
  EXPECT_EQ(probe.source->name(), "nvml");
  EXPECT_EQ(probe.source->read(1s).gpus.size(), 8U);
}

TEST_F(NvmlSourceTest, MissingLibrarySaysWhatToDo) {
  const auto source = make_nvml_source("/nonexistent/libnvidia-ml.so.1");
  try {
    source->read(1s);
    FAIL() << "read() did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 125);
    EXPECT_THAT(e.what(), HasSubstr("cannot load the NVML library /nonexistent/libnvidia-ml.so.1"));
    EXPECT_THAT(e.what(), HasSubstr("--gpu-source nvidia-smi"));
  }
}

TEST_F(NvmlSourceTest, ALibraryPathThatIsNoFileIsRefusedNotWaitedOn) {
  // dlopen waited for ever on a FIFO.
  const test::TempDir dir;
  const std::string fifo = dir / "libnvidia-ml.so.1";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, dir.str()})
    EXPECT_THAT(test::caught_error([&] { make_nvml_source(path)->read(1s); }).message,
                HasSubstr("cannot load the NVML library " + path + ": it is not a regular file"));
}

TEST_F(NvmlSourceTest, LibraryWithoutNvmlIsRefused) {
  const NvmlProbe probe = probe_nvml_source("libm.so.6");
  EXPECT_EQ(probe.source, nullptr);
  EXPECT_THAT(probe.failure, HasSubstr("the NVML library libm.so.6 lacks nvmlInit_v2"));
}

// The same box seen through the nvidia-smi stand-in and through the NVML stand-in.
void expect_parity(const std::string& smi_scenario, const std::string& nvml_scenario) {
  const std::string smi_path = std::string(GPURUN_TEST_DATA_DIR) + "/scenarios/" + smi_scenario;
  ASSERT_EQ(::setenv("FAKE_SMI_SCENARIO", smi_path.c_str(), 1), 0);
  GpuSourceSpec spec;
  spec.nvidia_smi = std::string(GPURUN_FAKES_DIR) + "/nvidia-smi";
  const std::vector<Gpu> from_smi = make_gpu_source(spec)->read(10s).gpus;
  ::unsetenv("FAKE_SMI_SCENARIO");
  const Snapshot from_nvml = read_with(FAKE_NVML_FULL, nvml_scenario);
  expect_same_gpus(from_smi, from_nvml.gpus);
}

TEST_F(NvmlSourceTest, SameGpusAsNvidiaSmiOnABusyBox) { expect_parity("busy_dgx.json", "busy_8.json"); }

TEST_F(NvmlSourceTest, SameGpusAsNvidiaSmiOnAnIdleBox) { expect_parity("all_free_8.json", "idle_8.json"); }

}  // namespace
}  // namespace gpurun
