// Unit tests for take_inventory's container side: an in-process fake engine says which containers
// hold GPUs; the GPU table comes from the stand-in nvidia-smi (tests/fakes/nvidia-smi).
#include "select/inventory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <vector>

#include "util/error.hpp"

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
  std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds /*timeout*/) override {
    ++asked;
    if (unreachable) throw Error("the fake engine is out of reach");
    return holders;
  }
  std::vector<std::string> run_argv(const DockerRunRequest& /*request*/) const override { return {"fake", "run"}; }
  std::vector<std::string> stop_argv(const std::string& c) const override { return {"fake", "stop", c}; }
  std::vector<std::string> logs_argv(const std::string& c) const override { return {"fake", "logs", c}; }
  std::vector<std::string> attach_argv(const std::string& c) const override { return {"fake", "attach", c}; }
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

}  // namespace
}  // namespace gpurun
