// Unit tests for take_inventory's container side: an in-process fake engine says which containers
// hold GPUs; the GPU table comes from the stand-in nvidia-smi (tests/fakes/nvidia-smi).
#include "gpurun/select/inventory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <vector>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Answers gpu_holders from a list (or throws), and counts how often it was asked.
class FakeEngine final : public ContainerEngine {
 public:
  std::vector<GpuContainer> holders;
  bool unreachable = false;
  int asked = 0;

  std::string name() const override { return "fake"; }
  std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds /*timeout*/, Listing /*listing*/) override {
    ++asked;
    if (unreachable) throw Error("the fake engine is out of reach");
    return holders;
  }
  CdiSupport cdi_support(std::chrono::milliseconds /*timeout*/) override { return {false, "fake"}; }
  std::vector<std::string> run_argv(const DockerRunRequest& /*request*/) const override { return {"fake", "run"}; }
  std::vector<std::string> stop_argv(const std::string& c, std::optional<int> /*timeout_s*/) const override {
    return {"fake", "stop", c};
  }
  std::vector<std::string> logs_argv(const std::string& c, const LogsRequest& /*request*/) const override {
    return {"fake", "logs", c};
  }
  std::vector<std::string> attach_argv(const std::string& c) const override { return {"fake", "attach", c}; }
  std::vector<std::string> remove_argv(const std::string& c) const override { return {"fake", "rm", c}; }
  std::vector<std::string> inspect_argv(const std::string& c) const override { return {"fake", "inspect", c}; }
  std::vector<std::string> image_inspect_argv(const std::string& i) const override { return {"fake", "inspect", i}; }
};

class TakeInventoryFromEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("FAKE_SMI_SCENARIO", GPURUN_TEST_DATA_DIR "/scenarios/all_free_8.json", 1);
    options.nvidia_smi = GPURUN_FAKES_DIR "/nvidia-smi";
    GpuContainer job;
    job.name = "bob_gpu1_12345678";
    job.user = "bob";
    job.image = "bob/train:1";
    job.devices = {"1"};
    engine.holders = {job};
  }
  void TearDown() override { ::unsetenv("FAKE_SMI_SCENARIO"); }

  std::vector<int> free_indices(const Inventory& inventory) const {
    std::vector<int> indices;
    for (const auto& a : inventory.assessed)
      if (a.free) indices.push_back(a.gpu.index);
    return indices;
  }

  Inventory inventory_with(ContainerEngine* asked) {
    const auto source = make_gpu_source(gpu_source_spec(options));
    return take_inventory(options, "", *source, asked);
  }

  Options options;
  FakeEngine engine;
};

TEST_F(TakeInventoryFromEngine, AGpuAContainerHoldsIsBusyAndSaysWho) {
  const Inventory inventory = inventory_with(&engine);
  EXPECT_EQ(engine.asked, 1);
  ASSERT_EQ(inventory.containers.size(), 1U);
  EXPECT_EQ(inventory.containers[0].name, "bob_gpu1_12345678");
  ASSERT_EQ(inventory.assessed.size(), 8U);
  EXPECT_FALSE(inventory.assessed[1].free);
  EXPECT_THAT(inventory.assessed[1].reasons, ElementsAre("in use by container bob_gpu1_12345678 (bob, bob/train:1)"));
  EXPECT_THAT(free_indices(inventory), ElementsAre(0, 2, 3, 4, 5, 6, 7));
}

TEST_F(TakeInventoryFromEngine, WithoutAnEngineNvidiaSmiAloneDecides) {
  const Inventory inventory = inventory_with(nullptr);
  EXPECT_THAT(inventory.containers, IsEmpty());
  EXPECT_THAT(free_indices(inventory), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST_F(TakeInventoryFromEngine, ContainerAwarenessOffLeavesTheEngineUnasked) {
  options.ignore_containers = true;
  const Inventory inventory = inventory_with(&engine);
  EXPECT_EQ(engine.asked, 0);
  EXPECT_THAT(inventory.containers, IsEmpty());
  EXPECT_THAT(free_indices(inventory), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST_F(TakeInventoryFromEngine, AnEngineOutOfReachIsAWarningNotAFailure) {
  engine.unreachable = true;
  const Inventory inventory = inventory_with(&engine);
  EXPECT_EQ(engine.asked, 1);
  EXPECT_THAT(inventory.containers, IsEmpty());
  EXPECT_THAT(free_indices(inventory), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

// A GPU process in another user's rootless podman container (one no engine we ask can show): its
// /proc/PID/cgroup, in a fake /proc under GPURUN_SYSFS_ROOT, names the container and its user.
TEST_F(TakeInventoryFromEngine, AGpuProcessInARootlessContainerMakesItsGpuBusyAndNamesTheUser) {
  const std::string id(64, 'c');
  test::TempDir root("gpurun-proc");
  test::write_file(root.path() / "proc/4242/status", "Name:\tpython3\nUid:\t4100000\t4100000\t4100000\t4100000\n");
  test::write_file(
      root.path() / "proc/4242/cgroup",
      "0::/user.slice/user-3999999.slice/user@3999999.service/user.slice/libpod-" + id + ".scope/container\n");
  test::write_file(root.path() / "scenario.json", R"({"gpus": [
    {"index": 0, "uuid": "GPU-0", "name": "A100", "memory.used": 4, "memory.total": 81920, "utilization.gpu": 0},
    {"index": 1, "uuid": "GPU-1", "name": "A100", "memory.used": 4, "memory.total": 81920, "utilization.gpu": 0},
    {"index": 2, "uuid": "GPU-2", "name": "A100", "memory.used": 4, "memory.total": 81920, "utilization.gpu": 0}],
    "processes": [{"gpu_uuid": "GPU-2", "pid": 4242, "process_name": "python3", "used_memory": 2}]})");
  test::EnvGuard scenario("FAKE_SMI_SCENARIO", root / "scenario.json");
  test::EnvGuard proc("GPURUN_SYSFS_ROOT", root.str());
  engine.holders.clear();

  const Inventory inventory = inventory_with(&engine);
  ASSERT_EQ(inventory.containers.size(), 1U);
  EXPECT_EQ(inventory.containers[0].id, id);
  EXPECT_EQ(inventory.containers[0].user, "uid 3999999");
  EXPECT_THAT(inventory.containers[0].devices, ElementsAre("GPU-2"));
  EXPECT_FALSE(inventory.assessed[2].free);
  EXPECT_THAT(inventory.assessed[2].reasons,
              ::testing::Contains("in use by container cccccccccccc (uid 3999999, rootless podman container)"));
  EXPECT_THAT(free_indices(inventory), ElementsAre(0, 1));
}

TEST_F(TakeInventoryFromEngine, ContainerAwarenessOffLooksAtNoProcessEither) {
  test::TempDir root("gpurun-proc");
  test::write_file(root.path() / "proc/4242/status", "Uid:\t0\t0\t0\t0\n");
  test::write_file(root.path() / "proc/4242/cgroup", "0::/system.slice/docker-" + std::string(64, 'd') + ".scope\n");
  test::write_file(root.path() / "scenario.json", R"({"gpus": [
    {"index": 0, "uuid": "GPU-0", "name": "A100", "memory.used": 4, "memory.total": 81920, "utilization.gpu": 0}],
    "processes": [{"gpu_uuid": "GPU-0", "pid": 4242, "process_name": "python3", "used_memory": 2}]})");
  test::EnvGuard scenario("FAKE_SMI_SCENARIO", root / "scenario.json");
  test::EnvGuard proc("GPURUN_SYSFS_ROOT", root.str());
  options.ignore_containers = true;
  EXPECT_THAT(inventory_with(&engine).containers, IsEmpty());
}

}  // namespace
}  // namespace gpurun
