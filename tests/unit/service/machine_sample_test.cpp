// Unit tests for the service's look at the machine (gpurun/service/machine_sample.hpp): holders
// from the engine's containers, from GPU processes' cgroups, and bare processes, on a fake /proc.
#include "gpurun/service/machine_sample.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using test::make_gpu;
using ::testing::ElementsAre;

const std::string kId = std::string(64, 'a');

class MachineSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "gpurun-sample-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  // A process of uid 0 (root exists everywhere) in `cgroup`, started at `ticks`, running `cmdline`.
  void add(long pid, const std::string& cgroup, const std::string& ticks, const std::string& cmdline) {
    const fs::path dir = fs::path(root_) / std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir / "status") << "Name:\tpython3\nPid:\t" << pid << "\nPPid:\t1\nUid:\t0\t0\t0\t0\n";
    std::ofstream(dir / "cgroup") << cgroup;
    std::ofstream(dir / "cmdline") << cmdline;
    std::ofstream(dir / "stat") << pid << " (py thon) S 1 " << pid << " " << pid
                                << " 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 " << ticks << " 1000 100\n";
  }
  std::string root_;
};

Snapshot two_gpus() {
  Snapshot s;
  s.gpus = {make_gpu(0, 4000, 81920, 90), make_gpu(1, 2000, 81920, 3)};
  return s;
}

// A MIG instance of GPU 0: a 1g.20gb of 20 GiB (the share 0.25 of an 80 GiB GPU) unless told,
// with these processes in it.
MigInstance small_instance(std::vector<long> pids, std::optional<double> total_mib = 20480.0,
                           const std::string& uuid = "MIG-small", const std::string& profile = "1g.20gb") {
  MigInstance mig{.uuid = uuid,
                  .gpu_index = 0,
                  .gpu_instance_id = 9,
                  .compute_instance_id = 0,
                  .profile = profile,
                  .memory_used_mib = 500.0,
                  .memory_total_mib = total_mib,
                  .processes = {},
                  .device_index = -1};
  for (const long pid : pids)
    mig.processes.push_back({.gpu_uuid = uuid, .pid = pid, .used_memory_mib = 100.0, .user = ""});
  return mig;
}

TEST_F(MachineSampleTest, ABareProcessIsAHolderKeyedByPidAndStartTime) {
  add(4242, "0::/user.slice/user-0.slice/session-1.scope\n", "987654", "python3\0train.py\0--lr\0"s + "0.1\0"s);
  Snapshot s = two_gpus();
  s.gpus[1].processes.push_back({.gpu_uuid = s.gpus[1].uuid, .pid = 4242, .used_memory_mib = 1900.0, .user = ""});
  const MachineSample sample = machine_sample(WallTime{}, s, {}, root_);
  ASSERT_EQ(sample.gpus.size(), 2u);
  EXPECT_EQ(sample.gpus[0].utilization_percent, 90);
  ASSERT_EQ(sample.holders.size(), 1u);
  const HolderSample& h = sample.holders[0];
  EXPECT_EQ(h.key, "process:4242:987654");
  EXPECT_EQ(h.name, "python3 train.py --lr 0.1");
  EXPECT_EQ(h.user, "root");
  EXPECT_EQ(h.container_id, "");
  EXPECT_THAT(h.gpus, ElementsAre(1));
  EXPECT_EQ(h.memory_used_mib, 1900.0);
}

// Arguments may be megabytes: the service keeps 4 KiB of them, stored and copied into every answer.
TEST_F(MachineSampleTest, ALongCommandIsKeptShortened) {
  add(4242, "0::/user.slice\n", "1", "python3\0"s + std::string(100'000, 'x') + "\0"s);
  add(4243, "0::/user.slice\n", "2", std::string(4096, 'p') + "\0second\0"s);  // cut at the NUL after the first
  Snapshot s = two_gpus();
  s.gpus[0].processes.push_back({.gpu_uuid = s.gpus[0].uuid, .pid = 4242, .used_memory_mib = 10.0, .user = ""});
  s.gpus[0].processes.push_back({.gpu_uuid = s.gpus[0].uuid, .pid = 4243, .used_memory_mib = 10.0, .user = ""});
  GpuContainer c;
  c.id = kId;
  c.name = "job";
  c.command = std::string(4095, 'y') + "\u00e9" + std::string(10, 'z');  // cut inside the é: before it
  c.devices = {"1"};
  const MachineSample sample = machine_sample(WallTime{}, s, {c}, root_);
  ASSERT_EQ(sample.holders.size(), 3u);
  for (const HolderSample& h : sample.holders) {
    EXPECT_LE(h.command.size(), 4096U + 3) << h.key;
    EXPECT_TRUE(h.command.ends_with("\u2026")) << h.key;
  }
  const auto container = std::find_if(sample.holders.begin(), sample.holders.end(),
                                      [](const HolderSample& h) { return !h.container_id.empty(); });
  ASSERT_NE(container, sample.holders.end());
  EXPECT_EQ(container->command, std::string(4095, 'y') + "\u2026");
}

TEST_F(MachineSampleTest, AContainersProcessIsCountedAsTheContainerOnlyOnce) {
  add(5000, "0::/system.slice/docker-" + kId + ".scope\n", "1", "python3\0"s);
  Snapshot s = two_gpus();
  s.gpus[0].processes.push_back({.gpu_uuid = s.gpus[0].uuid, .pid = 5000, .used_memory_mib = 3000.0, .user = ""});
  GpuContainer c;
  c.id = kId;
  c.name = "alice_gpu0_1234";
  c.image = "me/torch:1";
  c.user = "alice";
  c.command = "python3 train.py";
  c.devices = {"0"};
  const MachineSample sample = machine_sample(WallTime{}, s, {c}, root_);
  ASSERT_EQ(sample.holders.size(), 1u);
  EXPECT_EQ(sample.holders[0].key, "container:" + kId);
  EXPECT_EQ(sample.holders[0].name, "alice_gpu0_1234");
  EXPECT_EQ(sample.holders[0].user, "alice");
  EXPECT_THAT(sample.holders[0].gpus, ElementsAre(0));
  EXPECT_THAT(sample.holders[0].pids, ElementsAre(5000));  // should it leave /proc before the driver lets go
}

TEST_F(MachineSampleTest, AContainerTheEngineDidNotNameIsFoundThroughItsProcess) {
  add(6000, "0::/system.slice/docker-" + kId + ".scope\n", "1", "python3\0"s);
  Snapshot s = two_gpus();
  s.gpus[1].processes.push_back({.gpu_uuid = s.gpus[1].uuid, .pid = 6000, .used_memory_mib = 10.0, .user = ""});
  const MachineSample sample = machine_sample(WallTime{}, s, {}, root_);
  ASSERT_EQ(sample.holders.size(), 1u);
  EXPECT_EQ(sample.holders[0].key, "container:" + kId);
  EXPECT_THAT(sample.holders[0].gpus, ElementsAre(1));
}

// GPU 0 in MIG mode, 80 GB: a 1g.20gb instance (a quarter) runs a bare process, a 3g.40gb (a half)
// a container's process; GPU 1 is whole.
TEST_F(MachineSampleTest, OnAMigGpuEachHolderHoldsItsInstancesShareNotTheGpu) {
  add(100, "0::/user.slice/user-0.slice/session-1.scope\n", "1", "python3\0"s);
  add(200, "0::/system.slice/docker-" + kId + ".scope\n", "1", "python3\0"s);
  Snapshot s = two_gpus();
  s.gpus[0].mig_enabled = true;
  s.gpus[0].utilization_percent.reset();
  s.gpus[0].processes = {{.gpu_uuid = s.gpus[0].uuid, .pid = 100, .used_memory_mib = 500.0, .user = ""},
                         {.gpu_uuid = s.gpus[0].uuid, .pid = 200, .used_memory_mib = 900.0, .user = ""}};
  s.mig_instances = {small_instance({100}), small_instance({200}, std::nullopt, "MIG-half", "3g.40gb")};
  GpuContainer c;
  c.id = kId;
  c.name = "bob_mig";
  c.devices = {"MIG-half"};
  const MachineSample sample = machine_sample(WallTime{}, s, {c}, root_);
  ASSERT_EQ(sample.holders.size(), 2u);
  EXPECT_EQ(sample.holders[0].key, "container:" + kId);
  EXPECT_THAT(sample.holders[0].gpus, ElementsAre(0));
  ASSERT_EQ(sample.holders[0].mig_share.size(), 1u);
  EXPECT_NEAR(sample.holders[0].mig_share.at(0), 3.0 / 7, 1e-9);  // no memory size: 3 of 7 slices
  EXPECT_EQ(sample.holders[1].key, "process:100:1");
  EXPECT_EQ(sample.holders[1].mig_share, (std::map<int, double>{{0, 0.25}}));

  // Given the instance as "GPU:N" (--gpus device=0:1, its second MIG device), it holds the same.
  c.devices = {"0:1"};
  EXPECT_EQ(machine_sample(WallTime{}, s, {c}, root_).holders[0].mig_share, (std::map<int, double>{{0, 3.0 / 7}}));

  // A container given every GPU (--gpus all) holds each whole, MIG or not, but where its
  // processes run in an instance: that instance is its share, as anyone's there.
  c.all_gpus = true;
  EXPECT_EQ(machine_sample(WallTime{}, s, {c}, root_).holders[0].mig_share, (std::map<int, double>{{0, 3.0 / 7}}));
  s.mig_instances[1].processes.clear();
  EXPECT_THAT(machine_sample(WallTime{}, s, {c}, root_).holders[0].mig_share, ::testing::IsEmpty());
}

// podman shows a CDI MIG device as its parent's node and one instance's capabilities: the
// container holds that instance's share, not the whole GPU it was credited before.
TEST_F(MachineSampleTest, AParentNodeWithMigCapabilitiesHoldsTheInstanceTheyOpen) {
  Snapshot s = two_gpus();
  s.gpus[0].mig_enabled = true;
  s.gpus[0].utilization_percent.reset();
  s.mig_instances = {small_instance({}), small_instance({}, std::nullopt, "MIG-half", "3g.40gb")};
  s.mig_instances[1].gpu_instance_id = 2;
  const test::TempDir driver("gpurun-caps");
  std::filesystem::create_directories(driver / "proc/driver/nvidia-caps");
  test::write_file(driver / "proc/driver/nvidia-caps/mig-minors",
                   "gpu0/gi9/access 90\ngpu0/gi9/ci0/access 91\ngpu0/gi2/access 20\ngpu0/gi2/ci0/access 21\n");
  const test::EnvGuard at("GPURUN_SYSFS_ROOT", driver.str());
  GpuContainer c;
  c.id = kId;
  c.name = "podman_mig";
  c.devices = {"minor:0"};
  c.mig_caps = {90, 91};
  const MachineSample sample = machine_sample(WallTime{}, s, {c}, root_);
  ASSERT_EQ(sample.holders.size(), 1u);
  EXPECT_THAT(sample.holders[0].gpus, ElementsAre(0));
  EXPECT_EQ(sample.holders[0].mig_share, (std::map<int, double>{{0, 0.25}}));  // MIG-small, 20 of 80 GiB
}

// A container given an instance, idle in it, beside a process that works there: the instance is
// the process's whole (the idle holder takes none of it, as on a whole GPU).
TEST_F(MachineSampleTest, AnInstanceIsTheirsWhoWorkInIt) {
  add(100, "0::/user.slice/user-0.slice/session-1.scope\n", "1", "python3\0"s);
  Snapshot s = two_gpus();
  s.gpus[0].mig_enabled = true;
  s.gpus[0].processes = {{.gpu_uuid = s.gpus[0].uuid, .pid = 100, .used_memory_mib = 500.0, .user = ""}};
  s.mig_instances = {small_instance({100})};
  GpuContainer idle;
  idle.id = kId;
  idle.name = "given_it";
  idle.devices = {"MIG-small"};
  const MachineSample sample = machine_sample(WallTime{}, s, {idle}, root_);
  ASSERT_EQ(sample.holders.size(), 2u);
  EXPECT_EQ(sample.holders[0].mig_share, (std::map<int, double>{{0, 0.0}}));  // the idle container
  EXPECT_EQ(sample.holders[1].mig_share, (std::map<int, double>{{0, 0.25}}));
}

// Two users' processes in one instance: each is credited half of it, so that their shares add up
// to the instance's; a pid listed twice on the GPU is still one holder.
TEST_F(MachineSampleTest, AMigInstanceHeldBySeveralIsSplitAmongThem) {
  add(100, "0::/user.slice/user-0.slice/session-1.scope\n", "1", "python3\0"s);
  add(300, "0::/user.slice/user-0.slice/session-2.scope\n", "7", "python3\0"s);
  Snapshot s = two_gpus();
  s.gpus[0].mig_enabled = true;
  s.gpus[0].processes = {{.gpu_uuid = s.gpus[0].uuid, .pid = 100, .used_memory_mib = 500.0, .user = ""},
                         {.gpu_uuid = s.gpus[0].uuid, .pid = 300, .used_memory_mib = 100.0, .user = ""},
                         {.gpu_uuid = s.gpus[0].uuid, .pid = 300, .used_memory_mib = 100.0, .user = ""}};
  s.mig_instances = {small_instance({100, 300})};
  const MachineSample sample = machine_sample(WallTime{}, s, {}, root_);
  ASSERT_EQ(sample.holders.size(), 3u);
  EXPECT_EQ(sample.holders[0].mig_share, (std::map<int, double>{{0, 0.125}}));
  EXPECT_EQ(sample.holders[1].mig_share, (std::map<int, double>{{0, 0.125}}));
  EXPECT_EQ(sample.holders[1].key, sample.holders[2].key);
}

TEST_F(MachineSampleTest, AProcessGoneFromProcIsStillAHolder) {
  Snapshot s = two_gpus();
  s.gpus[0].processes.push_back({.gpu_uuid = s.gpus[0].uuid, .pid = 7777, .used_memory_mib = 1.0, .user = "bob"});
  const MachineSample sample = machine_sample(WallTime{}, s, {}, root_);
  ASSERT_EQ(sample.holders.size(), 1u);
  EXPECT_EQ(sample.holders[0].key, "process:7777:");
  EXPECT_EQ(sample.holders[0].name, "pid 7777");
  EXPECT_EQ(sample.holders[0].user, "bob");
}

}  // namespace
}  // namespace gpurun
