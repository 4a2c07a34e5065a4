// Unit tests for take_inventory's GPU side with an in-process fake GpuSource, and for the issue-16
// decisions it feeds (unified memory, MIG, snapshots without processes, lost GPUs, N > GPUs).
#include "gpurun/select/inventory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "gpurun/render/views.hpp"
#include "smi/smi_csv.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A GpuSource that hands out a fixed snapshot and counts the reads.
class FakeGpuSource final : public GpuSource {
 public:
  explicit FakeGpuSource(Snapshot snapshot) : snapshot_(std::move(snapshot)) {}
  Snapshot read(std::chrono::milliseconds) override {
    ++reads;
    return snapshot_;
  }
  std::string name() const override { return "fake"; }
  int reads = 0;

 private:
  Snapshot snapshot_;
};

std::string capture(const std::string& name) {
  std::ifstream file(std::string(GPURUN_TEST_DATA_DIR) + "/captures/" + name, std::ios::binary);
  std::ostringstream content;
  content << file.rdbuf();
  return content.str();
}

Snapshot snapshot_of(const std::string& capture_name, bool processes_known = true) {
  GpuTable table = parse_gpu_table(capture(capture_name));
  Snapshot s;
  s.gpus = std::move(table.gpus);
  s.lost = std::move(table.lost);
  s.warnings = std::move(table.warnings);
  s.processes_known = processes_known;
  return s;
}

Options offline() {
  Options options;
  options.ignore_containers = true;  // no docker in a unit test
  return options;
}

std::vector<int> indices(const std::vector<GpuAssessment>& gpus) {
  std::vector<int> out;
  for (const auto& a : gpus) out.push_back(a.gpu.index);
  return out;
}

TEST(TakeInventory, ReadsTheGivenSourceOnce) {
  FakeGpuSource source(snapshot_of("dgx-a100-80gb-x8.noheader-nounits.csv"));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  EXPECT_EQ(source.reads, 1);
  EXPECT_THAT(indices(inventory.assessed), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(indices(pick(inventory.assessed, 2, false).gpus_or_throw()), ElementsAre(2, 7));
}

TEST(TakeInventory, TheSitePolicyWithholdsGpus) {
  FakeGpuSource source(snapshot_of("dgx-a100-80gb-x8.noheader-nounits.csv"));
  Options options = offline();
  options.policy.allowed_gpus = std::vector<int>{2, 4};
  const Inventory inventory = take_inventory(options, "", source, nullptr);
  EXPECT_TRUE(inventory.assessed[7].withheld);
  const PickResult result = pick(inventory.assessed, 3, true);
  EXPECT_FALSE(result.waiting_can_help);
  EXPECT_EQ(result.shortfall, "need 3 GPUs but this machine has 8, of which the site policy lets gpurun hand out 2");
}

TEST(TakeInventory, UnifiedMemoryIsJudgedByProcessesAndUtilization) {
  FakeGpuSource source(snapshot_of("gb10-unified-memory.header-units.csv"));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  ASSERT_EQ(inventory.assessed.size(), 1u);
  const GpuAssessment& gb10 = inventory.assessed[0];
  EXPECT_TRUE(gb10.free);
  EXPECT_THAT(gb10.notes, ElementsAre("memory could not be judged, the driver reports none (unified memory): judged "
                                      "by processes and utilization"));
  EXPECT_THAT(format_gpu_table(inventory.assessed), HasSubstr("free (memory could not be judged"));
  EXPECT_THAT(indices(pick(inventory.assessed, 1, false).gpus_or_throw()), ElementsAre(0));
}

TEST(TakeInventory, UnifiedMemoryWithAProcessIsBusy) {
  Snapshot s = snapshot_of("gb10-unified-memory.header-units.csv");
  s.gpus[0].processes.push_back({s.gpus[0].uuid, 4242, 1024.0, {}});
  FakeGpuSource source(s);
  const GpuAssessment gb10 = take_inventory(offline(), "", source, nullptr).assessed[0];
  EXPECT_FALSE(gb10.free);
  EXPECT_THAT(gb10.reasons, ElementsAre("1 compute process (pid 4242)"));
}

TEST(TakeInventory, MemoryUnknownOnOneGpuOfManyIsStillBusy) {
  FakeGpuSource source(snapshot_of("error-values.noheader-nounits.csv"));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  EXPECT_THAT(inventory.assessed[1].reasons, testing::Contains("memory use unknown"));
}

TEST(TakeInventory, MoreGpusThanTheMachineHasFailsWithoutWaiting) {
  FakeGpuSource source(snapshot_of("gb10-unified-memory.header-units.csv"));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  for (bool allow_busy : {false, true}) {
    const PickResult result = pick(inventory.assessed, 2, allow_busy);
    EXPECT_FALSE(result.ok());
    EXPECT_FALSE(result.waiting_can_help);
    EXPECT_EQ(result.shortfall, "need 2 GPUs but this machine has 1 GPU");
  }
}

TEST(TakeInventory, AMigGpuIsNeverHandedOutWholeEvenWithAllowBusy) {
  FakeGpuSource source(snapshot_of("a100-40gb-mig.header-units.csv"));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  EXPECT_THAT(indices(pick(inventory.assessed, 3, true).gpus_or_throw()), ElementsAre(0, 2, 3));
  const PickResult all = pick(inventory.assessed, 4, true);
  EXPECT_FALSE(all.waiting_can_help);
  EXPECT_EQ(all.shortfall,
            "need 4 GPUs but this machine has 4, of which gpurun can hand out 3 (1 has MIG enabled and "
            "is never handed out whole)");
}

TEST(TakeInventory, TooFewFreeIsAShortfallWaitingCanHelp) {
  FakeGpuSource source(snapshot_of("dgx-a100-80gb-x8.noheader-nounits.csv"));
  const PickResult result = pick(take_inventory(offline(), "", source, nullptr).assessed, 4, false);
  EXPECT_FALSE(result.ok());
  EXPECT_TRUE(result.waiting_can_help);
  EXPECT_EQ(result.available, 3u);
  EXPECT_TRUE(result.chosen.empty());
  EXPECT_THAT(result.shortfall, HasSubstr("need 4 free GPUs but 3 of 8 are free"));
}

TEST(TakeInventory, ASnapshotWithoutProcessesShowsThemAsNotChecked) {
  FakeGpuSource source(snapshot_of("dgx-a100-80gb-x8.noheader-nounits.csv", /*processes_known=*/false));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  EXPECT_FALSE(inventory.processes_known);
  EXPECT_THAT(unchecked_processes_warning(inventory), HasSubstr("processes were not checked"));
  EXPECT_THAT(inventory.assessed[2].notes,
              testing::Contains("processes not checked: the snapshot has no process list"));
  EXPECT_TRUE(status_json(inventory.assessed)["gpus"][2]["processes"].is_null());
  const std::string table = format_gpu_table(inventory.assessed);
  EXPECT_THAT(table, HasSubstr("0 / 81920 MiB    0%      ?"));
}

TEST(TakeInventory, ProcessesKnownHaveNoWarning) {
  FakeGpuSource source(snapshot_of("dgx-a100-80gb-x8.noheader-nounits.csv"));
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  EXPECT_EQ(unchecked_processes_warning(inventory), "");
  EXPECT_TRUE(status_json(inventory.assessed)["gpus"][2]["processes"].is_array());
}

TEST(TakeInventory, LostGpusAndWarningsComeThrough) {
  Snapshot s = snapshot_of("lost-gpu-among-rows.noheader-nounits.csv");
  s.warnings.push_back("a warning");
  FakeGpuSource source(s);
  const Inventory inventory = take_inventory(offline(), "", source, nullptr);
  EXPECT_THAT(indices(inventory.assessed), ElementsAre(0, 2, 3));
  ASSERT_EQ(inventory.lost.size(), 1u);
  EXPECT_THAT(inventory.warnings, ElementsAre("a warning"));
  EXPECT_EQ(format_lost_gpus(inventory.lost),
            "lost: the GPU at PCI bus 0000:34:00.0 cannot be reached (Unknown Error); nvidia-smi lists the others\n");
  EXPECT_EQ(status_json(inventory.assessed, inventory.lost)["lost"][0]["pci_bus_id"], "0000:34:00.0");
}

}  // namespace
}  // namespace gpurun
