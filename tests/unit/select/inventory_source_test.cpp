// Unit tests for the inventory through a real source: a --from-csv snapshot joined with the reservations in a lock
// directory and the site policy's allowed GPUs, assessed in index order. Kept small: they go
// through the public functions only.
#include "gpurun/select/inventory.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "gpurun/gpu/gpu_source.hpp"
#include "gpurun/locks/reservation.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/proc_info.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<int> indices_of(const std::vector<GpuAssessment>& assessed) {
  std::vector<int> indices;
  for (const auto& a : assessed) indices.push_back(a.gpu.index);
  return indices;
}

class InventoryTest : public ::testing::Test {
 protected:
  InventoryTest() {
    // Three idle GPUs, not in index order.
    options_.from_csv = test::write_file(dir_ / "snapshot.csv",
                                         "2, GPU-2, NVIDIA A100-SXM4-80GB, 4, 81920, 0, Disabled\n"
                                         "0, GPU-0, NVIDIA A100-SXM4-80GB, 4, 81920, 0, Disabled\n"
                                         "1, GPU-1, NVIDIA A100-SXM4-80GB, 4, 81920, 0, Disabled\n");
    options_.docker = dir_ / "no-docker";  // a snapshot never asks the engine
  }

  Inventory inventory(const std::string& lock_dir = "") {
    const auto source = make_gpu_source(gpu_source_spec(options_));
    return take_inventory(options_, lock_dir, *source, nullptr);
  }

  test::TempDir dir_{"gpurun-inventory"};
  Options options_;
};

TEST_F(InventoryTest, TheSnapshotIsSortedByIndex) {
  EXPECT_THAT(indices_of(inventory().assessed), ElementsAre(0, 1, 2));
  std::vector<int> read;
  for (const Gpu& g : make_gpu_source(gpu_source_spec(options_))->read(1s).gpus) read.push_back(g.index);
  EXPECT_THAT(read, ElementsAre(0, 1, 2));
}

TEST_F(InventoryTest, ASnapshotAloneLeavesEveryIdleGpuFreeAndAsksNoEngine) {
  const Inventory taken = inventory();
  EXPECT_THAT(taken.containers, IsEmpty());
  for (const auto& a : taken.assessed) {
    EXPECT_TRUE(a.free) << "GPU " << a.gpu.index;
    EXPECT_FALSE(a.withheld);
  }
}

TEST_F(InventoryTest, ReservedGpusAreBusyAndPolicyWithheldOnesAreMarked) {
  const std::string lock_dir = prepare_lock_dir({.dir = dir_ / "locks", .group = "docker", .shared = false});
  const auto held = reserve_gpus(lock_dir, {test::make_gpu(1, 4, 81920, 0)});
  options_.policy.allowed_gpus = std::vector<int>{0, 1};

  const Inventory taken = inventory(lock_dir);
  ASSERT_EQ(taken.assessed.size(), 3u);
  const auto& [gpu0, gpu1, gpu2] = std::tie(taken.assessed[0], taken.assessed[1], taken.assessed[2]);
  EXPECT_TRUE(gpu0.free);
  EXPECT_THAT(gpu0.reasons, IsEmpty());
  EXPECT_FALSE(gpu1.free);
  EXPECT_FALSE(gpu1.withheld);
  EXPECT_THAT(gpu1.reasons,
              ElementsAre("reserved by another gpurun launch (pid " + std::to_string(::getpid()) + ", " +
                          process_user(::getpid()).value_or("?") + ", " + process_command(::getpid()) + ")"));
  EXPECT_FALSE(gpu2.free);
  EXPECT_TRUE(gpu2.withheld);
  EXPECT_THAT(gpu2.reasons, ElementsAre("not offered by the site policy \"allowed_gpus\" in the system file"));
}

TEST_F(InventoryTest, ThresholdsComeFromTheOptions) {
  options_.max_util = Percent{25};
  options_.max_memory = parse_memory_limit("2GiB");
  const Thresholds t = thresholds_from(options_);
  EXPECT_DOUBLE_EQ(t.max_utilization_percent, 25);
  EXPECT_EQ(t.max_memory.kind, MemoryLimit::Kind::mib);
  EXPECT_DOUBLE_EQ(t.max_memory.value, 2048);
}

TEST_F(InventoryTest, SmiTimeoutIsTheOptionsOwn) {  // its bounds are checked where it is read
  options_.smi_timeout = 2500ms;
  EXPECT_EQ(smi_timeout(options_), 2500ms);
}

TEST_F(InventoryTest, AnUnusableLockDirectoryIsOnlyAWarningWhenReading) {
  options_.lock_dir = test::write_file(dir_ / "a-file", "");
  EXPECT_EQ(lock_dir_for_reading(options_), "");
  options_.lock_dir = dir_ / "locks";
  EXPECT_EQ(lock_dir_for_reading(options_), dir_ / "locks");
}

}  // namespace
}  // namespace gpurun
