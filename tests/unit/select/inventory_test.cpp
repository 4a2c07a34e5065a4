// Unit tests for the inventory: a --from-csv snapshot joined with the reservations in a lock
// directory and the site policy's allowed GPUs, assessed in index order. Kept small: they go
// through the public functions only.
#include "select/inventory.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "locks/reservation.hpp"
#include "support/test_support.hpp"
#include "util/error.hpp"
#include "util/proc_info.hpp"

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

  test::TempDir dir_{"gpurun-inventory"};
  Options options_;
};

TEST_F(InventoryTest, ReadGpusSortsTheSnapshotByIndex) {
  EXPECT_THAT(indices_of(take_inventory(options_, "").assessed), ElementsAre(0, 1, 2));
  std::vector<int> read;
  for (const Gpu& g : read_gpus(options_, 1s)) read.push_back(g.index);
  EXPECT_THAT(read, ElementsAre(0, 1, 2));
}

TEST_F(InventoryTest, ASnapshotAloneLeavesEveryIdleGpuFreeAndAsksNoEngine) {
  const Inventory inventory = take_inventory(options_, "");
  EXPECT_THAT(inventory.containers, IsEmpty());
  for (const auto& a : inventory.assessed) {
    EXPECT_TRUE(a.free) << "GPU " << a.gpu.index;
    EXPECT_FALSE(a.withheld);
  }
}

TEST_F(InventoryTest, ReservedGpusAreBusyAndPolicyWithheldOnesAreMarked) {
  const std::string lock_dir = prepare_lock_dir(dir_ / "locks");
  const auto held = reserve_gpus(lock_dir, {test::make_gpu(1, 4, 81920, 0)});
  options_.allowed_gpus = std::vector<int>{0, 1};
  options_.not_allowed_reason = "not in allowed_gpus of /etc/gpurun/config.json";

  const Inventory inventory = take_inventory(options_, lock_dir);
  ASSERT_EQ(inventory.assessed.size(), 3u);
  const auto& [gpu0, gpu1, gpu2] = std::tie(inventory.assessed[0], inventory.assessed[1], inventory.assessed[2]);
  EXPECT_TRUE(gpu0.free);
  EXPECT_THAT(gpu0.reasons, IsEmpty());
  EXPECT_FALSE(gpu1.free);
  EXPECT_FALSE(gpu1.withheld);
  EXPECT_THAT(gpu1.reasons, ElementsAre("reserved by another gpurun launch (pid " + std::to_string(::getpid()) +
                                        ", " + process_user(::getpid()).value_or("?") + ", " +
                                        process_command(::getpid()) + ")"));
  EXPECT_FALSE(gpu2.free);
  EXPECT_TRUE(gpu2.withheld);
  EXPECT_THAT(gpu2.reasons, ElementsAre("not in allowed_gpus of /etc/gpurun/config.json"));
}

TEST_F(InventoryTest, ThresholdsComeFromTheOptions) {
  options_.max_util = "25%";
  options_.max_memory = "2GiB";
  const Thresholds t = thresholds_from(options_);
  EXPECT_DOUBLE_EQ(t.max_utilization_percent, 25);
  EXPECT_EQ(t.max_memory.kind, MemoryLimit::Kind::mib);
  EXPECT_DOUBLE_EQ(t.max_memory.value, 2048);
}

TEST_F(InventoryTest, SmiTimeoutMustBeAboveZeroAndAtMostAnHour) {
  options_.smi_timeout_s = 2.5;
  EXPECT_EQ(smi_timeout(options_), 2500ms);
  options_.smi_timeout_s = 3600;
  EXPECT_EQ(smi_timeout(options_), 3600s);
  for (double bad : {0.0, -1.0, 3600.5}) {
    options_.smi_timeout_s = bad;
    const auto e = test::caught_error([&] { take_inventory(options_, ""); });
    EXPECT_EQ(e.message, fmt::format("--smi-timeout {:g} must be between 0 and 3600 seconds", bad));
    EXPECT_EQ(e.exit_code, exit_code::failure);
  }
}

TEST_F(InventoryTest, AnUnusableLockDirectoryIsOnlyAWarningWhenReading) {
  options_.lock_dir = test::write_file(dir_ / "a-file", "");
  EXPECT_EQ(lock_dir_for_reading(options_), "");
  options_.lock_dir = dir_ / "locks";
  EXPECT_EQ(lock_dir_for_reading(options_), dir_ / "locks");
}

}  // namespace
}  // namespace gpurun
