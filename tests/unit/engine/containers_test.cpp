// Unit tests for container awareness: what parse_gpu_containers reads out of `docker inspect`.
// (The fuzz corpus in tests/fuzz/corpus/fuzz_docker_inspect/ holds fuller, realistic documents;
// tests/unit/fuzz_replay_test.cpp replays them.)
#include "engine/containers.hpp"
#include "select/claims.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<Gpu> four_gpus() {
  std::vector<Gpu> gpus(4);
  for (int i = 0; i < 4; ++i) {
    gpus[static_cast<std::size_t>(i)].index = i;
    gpus[static_cast<std::size_t>(i)].uuid = "GPU-0000000" + std::to_string(i);
  }
  return gpus;
}

// NVIDIA's images set NVIDIA_VISIBLE_DEVICES=all in their own environment; with --gpus, docker
// hands the runtime the requested devices instead. The request is what the container holds.
TEST(ParseGpuContainers, AGpusRequestWinsOverTheImagesNvidiaVisibleDevices) {
  const auto containers = parse_gpu_containers(R"([{
    "Name": "/alice_gpu2-3_1a2b3c4d",
    "Config": {"Image": "nvcr.io/nvidia/pytorch:24.05-py3", "Labels": {"gpurun.user": "alice"},
               "Env": ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"]},
    "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 0, "DeviceIDs": ["2", "3"], "Capabilities": [["gpu"]]}]}
  }])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_FALSE(containers[0].all_gpus);
  EXPECT_THAT(containers[0].devices, ElementsAre("2", "3"));
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(2, 3));
  EXPECT_EQ(containers[0].user, "alice");
  EXPECT_TRUE(containers[0].started_by_gpurun);
}

TEST(ParseGpuContainers, WithoutARequestNvidiaVisibleDevicesSaysWhatIsHeld) {
  const auto containers = parse_gpu_containers(R"([{
    "Name": "/legacy", "Config": {"Image": "old/tf:18", "User": "1001",
    "Env": ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=GPU-00000001,3"]}, "HostConfig": {"DeviceRequests": null}
  }])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(1, 3));
  EXPECT_EQ(containers[0].user, "1001");
  EXPECT_FALSE(containers[0].started_by_gpurun);
}

TEST(ParseGpuContainers, CountMinusOneIsAllGpusAndCountNIsTheFirstN) {
  const auto containers = parse_gpu_containers(R"([
    {"Name": "/all", "HostConfig": {"DeviceRequests": [{"Count": -1, "Capabilities": [["gpu"]]}]}},
    {"Name": "/two", "HostConfig": {"DeviceRequests": [{"Driver": "nvidia", "Count": 2}]}}
  ])");
  ASSERT_EQ(containers.size(), 2U);
  EXPECT_TRUE(containers[0].all_gpus);
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(held_gpu_indices(containers[1], four_gpus()), ElementsAre(0, 1));
}

TEST(ParseGpuContainers, ContainersWithoutGpusAreLeftOut) {
  EXPECT_THAT(parse_gpu_containers(R"([
    {"Name": "/web", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=void"]}, "HostConfig": {"DeviceRequests": []}},
    {"Name": "/none", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=none"]}},
    {"Name": "/other-driver", "HostConfig": {"DeviceRequests": [{"Driver": "fpga", "Count": 1}]}},
    "not an object", 42
  ])"),
              IsEmpty());
}

TEST(ParseGpuContainers, TextThatIsNotAJsonArrayIsAnError) {
  EXPECT_THROW(parse_gpu_containers("Error: No such container: c1"), Error);
  EXPECT_THROW(parse_gpu_containers(R"({"Id": "c1"})"), Error);
  EXPECT_THROW(parse_gpu_containers(""), Error);
}

TEST(ParseGpuContainers, DeepNestingIsNoStackOverflow) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(parse_gpu_containers(R"([{"HostConfig": {"DeviceRequests": [)" + deep + "]}}]"), IsEmpty());
  EXPECT_THAT(parse_gpu_containers(R"([{"Config": {"Labels": )" + deep + ", \"Env\": " + deep + "}}]"), IsEmpty());
}

TEST(ContainerClaims, NameTheContainerAndWhoRunsItForEachHeldGpu) {
  const auto containers = parse_gpu_containers(R"([{
    "Name": "/bob_gpu1_12345678", "Config": {"Image": "bob/train:1", "Labels": {"gpurun.user": "bob"}},
    "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["GPU-00000001"], "Capabilities": [["gpu"]]}]}
  }])");
  ExternalClaims claims = container_claims(containers, four_gpus());
  ASSERT_EQ(claims.size(), 1U);
  EXPECT_THAT(claims[1], ElementsAre("in use by container bob_gpu1_12345678 (bob, bob/train:1)"));
  add_claims(claims, {{1, {"reserved"}}, {2, {"reserved too"}}});
  EXPECT_THAT(claims[1], ElementsAre("in use by container bob_gpu1_12345678 (bob, bob/train:1)", "reserved"));
  EXPECT_THAT(claims[2], ElementsAre("reserved too"));
}

}  // namespace
}  // namespace gpurun
