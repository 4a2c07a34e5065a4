// Unit tests for mapping a GPU process to its container and owner through /proc (fake trees).
//
// The cgroup lines follow what real systems show:
//  - cgroup v2, docker's systemd driver: 0::/system.slice/docker-<id>.scope (docs.docker.com,
//    "Runtime metrics", "Find the cgroup for a given container").
//  - cgroup v1, docker's cgroupfs driver: N:controller:/docker/<id> (same page), on a hybrid
//    host with 0::/system.slice/containerd.service beside them.
//  - cgroup v1, rootful podman: 12:pids:/machine.slice/libpod-<id>.scope ...
//    1:name=systemd:/machine.slice/libpod-<id>.scope/init.scope (containers/podman#10602).
//  - cgroup v2, rootless podman: 0::/user.slice/user-1000.slice/user@1000.service/user.slice/
//    libpod-<id>.scope/container (containers/podman#8290: crun's "<scope>/container").
//  - cgroup v1, rootless podman 4.3 with the cgroupfs driver (captured on this project's CI VM,
//    tests/e2e/real_podman_rootless.sh): no cgroup of its own, the container's processes stay in
//    the user's ("9:name=systemd:/" ... "0::/"); their parent is conmon, "-c <id>" in its argv.
//  - Kubernetes: kubepods-…-pod<uid>.slice/cri-containerd-<id>.scope (systemd driver) and
//    /kubepods/besteffort/pod<uid>/<id> (cgroupfs driver), kubernetes.io "cgroup drivers".
#include "gpurun/engine/gpu_process_owner.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpurun {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;  // argv with NULs
using ::testing::ElementsAre;

const std::string kId = "2521e906f0a0c758c3a7dc4fd68c197e32e96abb4b36807d0b0ede6d014a7c24";
const std::string kId2 = "9f3c2b1a0e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b5a6f7e8d9c0b";

TEST(ContainerFromCgroup, DockerSystemdDriverOnCgroupV2) {
  const auto c = container_from_cgroup("0::/system.slice/docker-" + kId + ".scope\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "docker");
  EXPECT_FALSE(c->kubernetes);
  EXPECT_FALSE(c->rootless_uid);
}

TEST(ContainerFromCgroup, DockerCgroupfsDriverOnAHybridV1Host) {
  const auto c =
      container_from_cgroup("12:pids:/docker/" + kId + "\n11:memory:/docker/" + kId + "\n2:cpu,cpuacct:/docker/" + kId +
                            "\n1:name=systemd:/docker/" + kId + "\n0::/system.slice/containerd.service\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "docker");
}

TEST(ContainerFromCgroup, RootfulPodmanOnCgroupV1) {
  const auto c =
      container_from_cgroup("12:pids:/machine.slice/libpod-" + kId + ".scope\n9:devices:/machine.slice/libpod-" + kId +
                            ".scope\n1:name=systemd:/machine.slice/libpod-" + kId + ".scope/init.scope\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "podman");
  EXPECT_FALSE(c->rootless_uid);
}

// Podman's cgroupfs driver (no systemd): the cgroup is named like the scope, without ".scope".
TEST(ContainerFromCgroup, PodmanWithTheCgroupfsDriver) {
  const auto c =
      container_from_cgroup("9:name=systemd:/libpod_parent/libpod-" + kId + "\n0::/libpod_parent/libpod-" + kId + "\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "podman");
  EXPECT_FALSE(container_from_cgroup("0::/libpod_parent/conmon\n"));
}

TEST(ContainerFromCgroup, RootlessEnginesRunUnderTheirUsersManager) {
  const auto podman = container_from_cgroup("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" +
                                            kId + ".scope/container\n");
  ASSERT_TRUE(podman);
  EXPECT_EQ(podman->id, kId);
  EXPECT_EQ(podman->engine, "podman");
  EXPECT_EQ(podman->rootless_uid, 1000U);
  const auto docker =
      container_from_cgroup("0::/user.slice/user-1001.slice/user@1001.service/user.slice/docker-" + kId2 + ".scope\n");
  ASSERT_TRUE(docker);
  EXPECT_EQ(docker->id, kId2);
  EXPECT_EQ(docker->engine, "docker");
  EXPECT_EQ(docker->rootless_uid, 1001U);
}

// A user makes any cgroup below their own manager, one named like another's manager too: the
// first user@N.service, beside user-N.slice, is the one systemd delegated.
TEST(ContainerFromCgroup, AManagerNamedBelowTheUsersOwnIsTheUsersStill) {
  for (const std::string forged : {"user@0.service", "user@1001.service", "user-0.slice/user@0.service"}) {
    const auto found = container_from_cgroup("0::/user.slice/user-1000.slice/user@1000.service/x/" + forged +
                                             "/docker-" + kId + ".scope\n");
    ASSERT_TRUE(found) << forged;
    EXPECT_EQ(found->id, kId);
    EXPECT_EQ(found->rootless_uid, 1000U) << forged;
  }
  // A manager's part without its own slice is nothing systemd makes: no container to vouch for.
  EXPECT_FALSE(container_from_cgroup("0::/user.slice/user-1000.slice/user@1001.service/docker-" + kId + ".scope\n"));
  EXPECT_FALSE(container_from_cgroup("0::/system.slice/user@0.service/docker-" + kId + ".scope\n"));
}

TEST(ContainerFromCgroup, KubernetesPodsWithEitherDriver) {
  const auto systemd = container_from_cgroup(
      "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice/"
      "cri-containerd-" +
      kId + ".scope\n");
  ASSERT_TRUE(systemd);
  EXPECT_EQ(systemd->id, kId);
  EXPECT_EQ(systemd->engine, "containerd");
  EXPECT_TRUE(systemd->kubernetes);
  const auto cgroupfs =
      container_from_cgroup("11:memory:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/" + kId2 + "\n");
  ASSERT_TRUE(cgroupfs);
  EXPECT_EQ(cgroupfs->id, kId2);
  EXPECT_EQ(cgroupfs->engine, "");
  EXPECT_TRUE(cgroupfs->kubernetes);
}

TEST(ContainerFromCgroup, TheOutermostContainerOfANestedOneIsTheHosts) {
  const auto c = container_from_cgroup("0::/system.slice/docker-" + kId + ".scope/docker/" + kId2 + "\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
}

TEST(ContainerFromCgroup, ProcessesOutsideContainersAndConmonAreNone) {
  EXPECT_FALSE(container_from_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n"));
  EXPECT_FALSE(container_from_cgroup("0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n"));
  EXPECT_FALSE(container_from_cgroup("0::/machine.slice/libpod-conmon-" + kId + ".scope\n"));
  EXPECT_FALSE(container_from_cgroup("0::/system.slice/docker-" + kId.substr(1) + ".scope\n"));  // 63 digits
  EXPECT_FALSE(container_from_cgroup("0::/\n"));
  EXPECT_FALSE(container_from_cgroup("garbage\n\n::\n"));
  EXPECT_FALSE(container_from_cgroup(""));
}

// A fake /proc: <root>/<pid>/status and <root>/<pid>/cgroup.
class ProcessOwnerInFakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "gpurun-proc-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(long pid, const std::string& uid, const std::string& cgroup) {
    fs::create_directories(fs::path(root_) / std::to_string(pid));
    std::ofstream(fs::path(root_) / std::to_string(pid) / "status")
        << "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" << pid << "\nPid:\t" << pid
        << "\nPPid:\t1\nUid:\t" << uid << "\t" << uid << "\t" << uid << "\t" << uid << "\nGid:\t0\t0\t0\t0\n";
    std::ofstream(fs::path(root_) / std::to_string(pid) / "cgroup") << cgroup;
  }
  // A process whose parent is `ppid`, with argv `cmdline` (NUL-separated, as /proc shows it).
  void add_child(long pid, long ppid, const std::string& uid, const std::string& cgroup, const std::string& cmdline) {
    add(pid, uid, cgroup);
    std::ofstream(fs::path(root_) / std::to_string(pid) / "status")
        << "Name:\tx\nPid:\t" << pid << "\nPPid:\t" << ppid << "\nUid:\t" << uid << "\t" << uid << "\t" << uid << "\t"
        << uid << "\n";
    std::ofstream(fs::path(root_) / std::to_string(pid) / "cmdline") << cmdline;
  }
  std::string root_;
};

// What /proc/PID/cgroup holds for a rootless podman container on a cgroup v1 host (podman 4.3,
// --cgroup-manager=cgroupfs, no systemd user session): the user's own cgroups, nothing podman's.
const std::string kRootlessV1Cgroup =
    "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n4:memory:/\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/"
    "\n0::/\n";
// Its conmon's argv as podman 4.3 starts it (shortened after the container's name).
std::string conmon_argv(const std::string& id) {
  return "/usr/bin/conmon\0--api-version\0"
         "1\0-c\0"s +
         id + "\0-u\0"s + id +
         "\0-r\0/usr/bin/runc\0-b\0/home/gpurun-e2e-rl/.local/share/containers/storage/vfs-containers/"s + id +
         "/userdata\0-n\0rl\0--exit-dir\0/tmp/rt/libpod/tmp/exits\0"s;
}

TEST_F(ProcessOwnerInFakeProc, RootlessPodmanOnCgroupV1IsFoundThroughItsConmon) {
  EXPECT_FALSE(container_from_cgroup(kRootlessV1Cgroup));
  add_child(17272, 1, "1001", kRootlessV1Cgroup, conmon_argv(kId));  // conmon, the user's
  add_child(17281, 17272, "1001", kRootlessV1Cgroup,
            "sleep\0"
            "300\0"s);                                                         // the container's init
  add_child(17300, 17281, "1001", kRootlessV1Cgroup, "python3\0train.py\0"s);  // its GPU process
  for (long pid : {17281L, 17300L}) {
    const auto owner = process_owner(pid, root_);
    ASSERT_TRUE(owner);
    ASSERT_TRUE(owner->container) << pid;
    EXPECT_EQ(owner->container->id, kId);
    EXPECT_EQ(owner->container->engine, "podman");
    EXPECT_EQ(owner->container->rootless_uid, 1001U);
    EXPECT_EQ(owner->uid, 1001U);
  }
  // conmon itself, and a process of no container (its parent is no conmon), are in none.
  add_child(17400, 17272, "1001", kRootlessV1Cgroup, "bash\0");
  add_child(17401, 17400, "1001", kRootlessV1Cgroup, "python3\0");
  const auto conmon = process_owner(17272, root_);
  ASSERT_TRUE(conmon);
  EXPECT_FALSE(conmon->container);
  add_child(17500, 1, "1001", kRootlessV1Cgroup, "bash\0");
  add_child(17501, 17500, "1001", kRootlessV1Cgroup, "python3\0");
  const auto outside = process_owner(17501, root_);
  ASSERT_TRUE(outside);
  EXPECT_FALSE(outside->container);
}

TEST_F(ProcessOwnerInFakeProc, ARootConmonIsRootfulPodmansAndOnlyAConmonNamesAContainer) {
  add_child(300, 1, "0", "0::/\n", "conmon\0--cid="s + kId2 + "\0"s);
  add_child(301, 300, "0", "0::/\n", "sleep\0");
  const auto rootful = process_owner(301, root_);
  ASSERT_TRUE(rootful && rootful->container);
  EXPECT_EQ(rootful->container->id, kId2);
  EXPECT_FALSE(rootful->container->rootless_uid);
  EXPECT_EQ(rootful->user, "root");
  // Something else whose argv holds "-c <hex id>" is no conmon.
  add_child(400, 1, "0", "0::/\n", "/usr/bin/notconmon\0-c\0"s + kId + "\0"s);
  add_child(401, 400, "0", "0::/\n", "sleep\0");
  const auto other = process_owner(401, root_);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->container);
}

TEST_F(ProcessOwnerInFakeProc, TheOwnerIsTheProcesssUserOutsideARootlessEngine) {
  add(4242, "0", "0::/system.slice/docker-" + kId + ".scope\n");
  const auto owner = process_owner(4242, root_);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->pid, 4242);
  EXPECT_EQ(owner->uid, 0U);
  EXPECT_EQ(owner->user, "root");
  ASSERT_TRUE(owner->container);
  EXPECT_EQ(owner->container->id, kId);
}

TEST_F(ProcessOwnerInFakeProc, InARootlessEngineTheOwnerIsTheEnginesUser) {
  // Inside the user namespace the process runs as one of uid 3999999's subordinate uids.
  add(5151, "4100000",
      "0::/user.slice/user-3999999.slice/user@3999999.service/user.slice/libpod-" + kId + ".scope/container\n");
  const auto owner = process_owner(5151, root_);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->uid, 4100000U);
  EXPECT_EQ(owner->user, "uid 3999999");  // no such login here
}

TEST_F(ProcessOwnerInFakeProc, AGoneProcessHasNoOwner) { EXPECT_FALSE(process_owner(999999, root_)); }

TEST_F(ProcessOwnerInFakeProc, ProcessHoldersAddContainersTheEngineCouldNotSee) {
  add(100, "4100000", "0::/user.slice/user-3999999.slice/user@3999999.service/user.slice/docker-" + kId2 + ".scope\n");
  add(200, "0", "0::/system.slice/docker-" + kId + ".scope\n");
  add(300, "0", "0::/user.slice/user-0.slice/session-1.scope\n");  // not in a container
  std::vector<Gpu> gpus(4);
  for (int i = 0; i < 4; ++i) {
    gpus[static_cast<std::size_t>(i)].index = i;
    gpus[static_cast<std::size_t>(i)].uuid = "GPU-0000000" + std::to_string(i);
  }
  gpus[3].processes = {{"GPU-00000003", 100, 1024.0, {}}};
  gpus[1].processes = {{"GPU-00000001", 200, 512.0, {}}, {"GPU-00000001", 300, 10.0, {}}};
  gpus[2].processes = {{"GPU-00000002", 200, 512.0, {}}, {"GPU-00000002", 999999, 1.0, {}}};  // one gone

  GpuContainer known;  // the engine's answer: the rootful container, on GPU 1
  known.id = kId;
  known.name = "train";
  known.devices = {"1"};
  std::vector<GpuContainer> holders{known};
  add_process_holders(holders, gpus, root_);

  ASSERT_EQ(holders.size(), 2U);
  EXPECT_EQ(holders[0].name, "train");
  EXPECT_THAT(holders[0].devices, ElementsAre("1", "GPU-00000002"));  // its process on GPU 2 too
  EXPECT_EQ(holders[1].id, kId2);
  EXPECT_EQ(holders[1].name, kId2.substr(0, 12));
  EXPECT_EQ(holders[1].user, "uid 3999999");
  EXPECT_EQ(holders[1].image, "rootless docker container");
  EXPECT_THAT(holders[1].devices, ElementsAre("GPU-00000003"));
}

// A plain `docker run` of an image whose user is uid 1000 (Jupyter's), seen through its process
// alone (the engine did not answer): uid 1000 is an account inside the image, not the login of
// that uid on the host, who would be mailed about it and shown its runs.
TEST_F(ProcessOwnerInFakeProc, ARootfulContainerSeenThroughItsProcessesHasNoUserOfItsProcessesUid) {
  add(200, "0", "0::/system.slice/docker-" + kId + ".scope\n");
  std::vector<Gpu> gpus(1);
  gpus[0].index = 0;
  gpus[0].uuid = "GPU-00000000";
  gpus[0].processes = {{"GPU-00000000", 200, 512.0, {}}};
  std::vector<GpuContainer> holders;
  add_process_holders(holders, gpus, root_);
  ASSERT_EQ(holders.size(), 1U);
  EXPECT_EQ(holders[0].id, kId);
  EXPECT_EQ(holders[0].user, "");  // not root, whose uid the process had
  ASSERT_TRUE(process_owner(200, root_));
  EXPECT_EQ(process_owner(200, root_)->user, "root");  // the process's own owner, as a bare one shows
}

TEST_F(ProcessOwnerInFakeProc, UnderRootAUsersScopeNamedAfterRootsContainerClaimsNothingOfIt) {
  // A user's own cgroup (user@UID.service is delegated to them) holding a scope named after the
  // ID of a container of root's engine, with an idle GPU process in it.
  add(100, "3999999", "0::/user.slice/user-3999999.slice/user@3999999.service/app.slice/docker-" + kId + ".scope\n");
  std::vector<Gpu> gpus(2);
  for (int i = 0; i < 2; ++i) {
    gpus[static_cast<std::size_t>(i)].index = i;
    gpus[static_cast<std::size_t>(i)].uuid = "GPU-0000000" + std::to_string(i);
  }
  gpus[1].processes = {{"GPU-00000001", 100, 1024.0, {}}};
  GpuContainer known;  // root's engine: the container, on GPU 0
  known.id = kId;
  known.devices = {"0"};

  std::vector<GpuContainer> as_root{known};
  add_process_holders(as_root, gpus, root_, /*asking_uid=*/0);
  ASSERT_EQ(as_root.size(), 2U);
  EXPECT_THAT(as_root[0].devices, ElementsAre("0"));  // the real container gets nothing
  EXPECT_FALSE(as_root[0].from_processes);
  EXPECT_TRUE(as_root[1].from_processes);  // the user's own holder, never stopped through root's engine
  EXPECT_EQ(as_root[1].rootless_uid, 3999999U);
  EXPECT_THAT(as_root[1].devices, ElementsAre("GPU-00000001"));

  // Nor does a scope below a manager's name the user made inside their own: still theirs.
  add(101, "3999999",
      "0::/user.slice/user-3999999.slice/user@3999999.service/x/user-0.slice/user@0.service/docker-" + kId +
          ".scope\n");
  gpus[1].processes = {{"GPU-00000001", 101, 1024.0, {}}};
  std::vector<GpuContainer> nested{known};
  add_process_holders(nested, gpus, root_, /*asking_uid=*/0);
  ASSERT_EQ(nested.size(), 2U);
  EXPECT_THAT(nested[0].devices, ElementsAre("0"));
  EXPECT_EQ(nested[1].rootless_uid, 3999999U);
  gpus[1].processes = {{"GPU-00000001", 100, 1024.0, {}}};

  // Asked by that user, of their own rootless engine, the same container is theirs.
  std::vector<GpuContainer> as_user{known};
  add_process_holders(as_user, gpus, root_, /*asking_uid=*/3999999);
  ASSERT_EQ(as_user.size(), 1U);
  EXPECT_THAT(as_user[0].devices, ElementsAre("0", "GPU-00000001"));
}

}  // namespace
}  // namespace gpurun
