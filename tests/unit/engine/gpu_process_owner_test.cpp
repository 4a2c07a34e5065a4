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
//  - Kubernetes: kubepods-…-pod<uid>.slice/cri-containerd-<id>.scope (systemd driver) and
//    /kubepods/besteffort/pod<uid>/<id> (cgroupfs driver), kubernetes.io "cgroup drivers".
#include "engine/gpu_process_owner.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpurun {
namespace {

namespace fs = std::filesystem;
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
  const auto c = container_from_cgroup("12:pids:/docker/" + kId + "\n11:memory:/docker/" + kId +
                                       "\n2:cpu,cpuacct:/docker/" + kId + "\n1:name=systemd:/docker/" + kId +
                                       "\n0::/system.slice/containerd.service\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "docker");
}

TEST(ContainerFromCgroup, RootfulPodmanOnCgroupV1) {
  const auto c = container_from_cgroup("12:pids:/machine.slice/libpod-" + kId + ".scope\n9:devices:/machine.slice/libpod-" +
                                       kId + ".scope\n1:name=systemd:/machine.slice/libpod-" + kId + ".scope/init.scope\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "podman");
  EXPECT_FALSE(c->rootless_uid);
}

// Podman's cgroupfs driver (no systemd): the cgroup is named like the scope, without ".scope".
TEST(ContainerFromCgroup, PodmanWithTheCgroupfsDriver) {
  const auto c = container_from_cgroup("9:name=systemd:/libpod_parent/libpod-" + kId + "\n0::/libpod_parent/libpod-" + kId + "\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->engine, "podman");
  EXPECT_FALSE(container_from_cgroup("0::/libpod_parent/conmon\n"));
}

TEST(ContainerFromCgroup, RootlessEnginesRunUnderTheirUsersManager) {
  const auto podman = container_from_cgroup("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
                                            ".scope/container\n");
  ASSERT_TRUE(podman);
  EXPECT_EQ(podman->id, kId);
  EXPECT_EQ(podman->engine, "podman");
  EXPECT_EQ(podman->rootless_uid, 1000U);
  const auto docker = container_from_cgroup("0::/user.slice/user-1001.slice/user@1001.service/user.slice/docker-" + kId2 +
                                            ".scope\n");
  ASSERT_TRUE(docker);
  EXPECT_EQ(docker->id, kId2);
  EXPECT_EQ(docker->engine, "docker");
  EXPECT_EQ(docker->rootless_uid, 1001U);
}

TEST(ContainerFromCgroup, KubernetesPodsWithEitherDriver) {
  const auto systemd = container_from_cgroup(
      "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice/"
      "cri-containerd-" + kId + ".scope\n");
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
  std::string root_;
};

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
  add(5151, "4100000", "0::/user.slice/user-3999999.slice/user@3999999.service/user.slice/libpod-" + kId + ".scope/container\n");
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
  gpus[3].processes = {{"GPU-00000003", 100, 1024.0}};
  gpus[1].processes = {{"GPU-00000001", 200, 512.0}, {"GPU-00000001", 300, 10.0}};
  gpus[2].processes = {{"GPU-00000002", 200, 512.0}, {"GPU-00000002", 999999, 1.0}};  // one gone

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

}  // namespace
}  // namespace gpurun
