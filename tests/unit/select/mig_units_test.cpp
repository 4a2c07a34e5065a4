// MIG instances as units: made from a Snapshot, matched to a requested profile, picked.
#include "gpurun/select/mig_units.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurun {
namespace {

using ::testing::HasSubstr;

MigInstance instance(int gpu, int gi, const std::string& profile, double used, double total,
                     std::vector<long> pids = {}) {
  MigInstance m;
  m.uuid = "MIG-" + std::to_string(gpu) + "-" + std::to_string(gi);
  m.gpu_index = gpu;
  m.gpu_instance_id = gi;
  m.profile = profile;
  m.memory_used_mib = used;
  m.memory_total_mib = total;
  for (long pid : pids) m.processes.push_back({m.uuid, pid, 100.0, {}});
  return m;
}

Snapshot mig_box() {
  Snapshot s;
  s.mig_instances = {instance(1, 2, "3g.40gb", 10, 40320),           // unit 0: free
                     instance(1, 3, "2g.20gb", 15, 20096),           // unit 1: free
                     instance(1, 9, "1g.10gb", 3891, 9984, {8301}),  // unit 2: busy
                     instance(1, 10, "1g.10gb", 12, 9984)};          // unit 3: free
  return s;
}

std::vector<GpuAssessment> assessed_units() { return assess(mig_units(mig_box()), Thresholds{10.0, {}}); }

std::vector<std::string> uuids(const PickResult& result) {
  std::vector<std::string> out;
  for (const auto& a : result.chosen) out.push_back(a.gpu.uuid);
  return out;
}

TEST(MigUnits, EachInstanceIsAUnitNamedByItsMigUuidWithoutUtilization) {
  const std::vector<Gpu> units = mig_units(mig_box());
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[2].index, 2);
  EXPECT_EQ(units[2].uuid, "MIG-1-9");
  EXPECT_EQ(units[2].name, "GPU 1 MIG 1g.10gb");
  EXPECT_EQ(units[2].memory_used_mib, 3891);
  EXPECT_EQ(units[2].utilization_percent, std::nullopt);
  ASSERT_TRUE(units[2].mig.has_value());
  EXPECT_EQ(units[2].mig->gpu_index, 1);
  EXPECT_EQ(units[2].mig->gpu_instance_id, 9);
  EXPECT_EQ(units[2].mig->profile, "1g.10gb");
  EXPECT_EQ(units[2].processes.size(), 1u);
  EXPECT_EQ(units[2].mig->device_index, 2);  // GPU 1's third MIG device: "1:2"
}

TEST(MigUnits, EachUnitKnowsItsPlaceOnItsGpuAndItsParent) {
  Snapshot s = mig_box();
  s.gpus.resize(2);
  s.gpus[1].index = 1;
  s.gpus[1].uuid = "GPU-one";
  s.gpus[1].pci_bus_id = "00000000:0F:00.0";
  s.mig_instances.insert(s.mig_instances.begin(), instance(0, 1, "7g.80gb", 0, 81920));
  const std::vector<Gpu> units = mig_units(s);
  ASSERT_EQ(units.size(), 5u);
  EXPECT_EQ(units[0].mig->device_index, 0);
  EXPECT_EQ(units[1].mig->device_index, 0);  // each GPU counts its own from 0
  EXPECT_EQ(units[4].mig->device_index, 3);
  EXPECT_EQ(units[4].mig->parent_uuid, "GPU-one");
  EXPECT_EQ(units[4].pci_bus_id, "00000000:0F:00.0");
  EXPECT_EQ(units[0].mig->parent_uuid, "");  // GPU 0 not in the snapshot
  // Where NVML says the slot (an empty slot or an instance left out before it), the slot.
  s.mig_instances[2].device_index = 5;
  EXPECT_EQ(mig_units(s)[2].mig->device_index, 5);
  EXPECT_EQ(mig_units(s)[3].mig->device_index, 2);
}

TEST(MigUnits, ProfileServes) {
  EXPECT_TRUE(profile_serves("1g.10gb", "1g.10gb", false));
  EXPECT_TRUE(profile_serves("3g.40gb", "any", false));
  EXPECT_FALSE(profile_serves("2g.20gb", "1g.10gb", false));
  EXPECT_TRUE(profile_serves("2g.20gb", "1g.10gb", true));
  EXPECT_FALSE(profile_serves("1g.10gb", "2g.20gb", true));
  EXPECT_FALSE(profile_serves("1g.20gb", "2g.20gb", true));  // more memory, fewer slices
  EXPECT_FALSE(profile_serves("3g.40gb", "weird", true));
}

TEST(MigUnits, PickTakesTheRequestedProfileOnlyUnlessLargerIsAllowed) {
  const auto units = assessed_units();
  EXPECT_EQ(uuids(pick_mig(units, 1, "1g.10gb", false, false)), std::vector<std::string>{"MIG-1-10"});
  const PickResult two = pick_mig(units, 2, "1g.10gb", false, false);
  EXPECT_FALSE(two.ok());
  EXPECT_THAT(two.shortfall, HasSubstr("need 2 free MIG instances of profile 1g.10gb but 1 of 2 is free:"));
  EXPECT_THAT(two.shortfall, HasSubstr("GPU 1 MIG 1g.10gb (GI 9 CI 0) busy: 1 compute process (pid 8301)"));
  // Larger allowed: the smallest that fit first (2g.20gb before 3g.40gb).
  EXPECT_EQ(uuids(pick_mig(units, 2, "1g.10gb", true, false)), (std::vector<std::string>{"MIG-1-3", "MIG-1-10"}));
  EXPECT_EQ(uuids(pick_mig(units, 3, "1g.10gb", true, false)),
            (std::vector<std::string>{"MIG-1-2", "MIG-1-3", "MIG-1-10"}));
}

TEST(MigUnits, AnyProfileAndUnknownProfiles) {
  const auto units = assessed_units();
  EXPECT_EQ(uuids(pick_mig(units, 3, "any", false, false)).size(), 3u);
  const PickResult unknown = pick_mig(units, 1, "4g.40gb", false, false);
  EXPECT_FALSE(unknown.ok());
  EXPECT_FALSE(unknown.waiting_can_help);
  EXPECT_THAT(unknown.shortfall, HasSubstr("no MIG instance has that profile (there are: 3g.40gb, 2g.20gb, 1g.10gb)"));
  const PickResult none = pick_mig({}, 1, "any", false, false);
  EXPECT_THAT(none.shortfall, HasSubstr("no GPU of this machine has MIG instances"));
}

}  // namespace
}  // namespace gpurun
