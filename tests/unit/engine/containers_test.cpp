// Unit tests for container awareness: what parse_gpu_containers reads out of `docker inspect`.
// (The fuzz corpus in tests/fuzz/corpus/fuzz_docker_inspect/ holds fuller, realistic documents;
// tests/unit/fuzz_replay_test.cpp replays them.)
#include "gpurun/engine/containers.hpp"
#include "gpurun/select/claims.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpurun/gpu/topology.hpp"
#include "gpurun/select/mig_units.hpp"
#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
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
  EXPECT_EQ(containers[0].user, "") << "an image's Config.User is an account inside it, not who ran it";
  EXPECT_FALSE(containers[0].started_by_gpurun);
}

// A CPU job of an NVIDIA image under docker's default runtime (runc), `docker run
// nvcr.io/nvidia/pytorch python prep.py`: its ENV says NVIDIA_VISIBLE_DEVICES=all, which runc never
// reads, so it holds no GPU; under the nvidia runtime (or a daemon defaulting to it) the same
// container holds them all.
TEST(ParseGpuContainers, NvidiaVisibleDevicesCountsOnlyWhereARuntimeReadsIt) {
  const auto containers = parse_gpu_containers(R"([
    {"Name": "/prep", "Config": {"Image": "nvcr.io/nvidia/pytorch:24.05-py3", "Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "runc", "DeviceRequests": null}},
    {"Name": "/containerd-runc", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "io.containerd.runc.v2"}},
    {"Name": "/by-default", "Config": {"Image": "nvcr.io/nvidia/pytorch:24.05-py3", "Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "nvidia", "DeviceRequests": null}},
    {"Name": "/podman-hook", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=1"]}, "HostConfig": {"Runtime": "oci"}}
  ])");
  ASSERT_EQ(containers.size(), 2U);
  EXPECT_EQ(containers[0].name, "by-default");
  EXPECT_TRUE(containers[0].all_gpus);
  EXPECT_EQ(containers[1].name, "podman-hook");
  EXPECT_THAT(containers[1].devices, ElementsAre("1"));
}

// `docker commit` of a gpurun container, then a plain `docker run` of the image: the labels it
// carries name the committed container, not this one, so none of them holds (its user, its time
// limit, the GPUs its uuid label names).
TEST(ParseGpuContainers, LabelsNamingAnotherContainerAreNotItsOwn) {
  const auto containers = parse_gpu_containers(R"([
    {"Name": "/quirky_turing", "Config": {"Labels": {"gpurun.user": "alice", "gpurun.gpus": "1",
       "gpurun.gpu-uuids": "GPU-00000001", "gpurun.time-limit": "60", "gpurun.name": "alice_gpu1_1a2b3c4d"}},
     "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": 1, "Capabilities": [["gpu"]]}]}},
    {"Name": "/cpu_only", "Config": {"Labels": {"gpurun.user": "alice", "gpurun.gpus": "1",
       "gpurun.gpu-uuids": "GPU-00000001", "gpurun.name": "alice_gpu1_1a2b3c4d"}}},
    {"Name": "/alice_gpu2_5e6f7a8b", "Config": {"Labels": {"gpurun.user": "alice", "gpurun.gpus": "2",
       "gpurun.gpu-uuids": "GPU-00000002", "gpurun.time-limit": "60", "gpurun.name": "alice_gpu2_5e6f7a8b"}}}
  ])");
  ASSERT_EQ(containers.size(), 2U);
  EXPECT_EQ(containers[0].name, "quirky_turing");
  EXPECT_FALSE(containers[0].started_by_gpurun);
  EXPECT_EQ(containers[0].user, "");
  EXPECT_FALSE(containers[0].time_limit.has_value());
  EXPECT_EQ(containers[1].name, "alice_gpu2_5e6f7a8b");  // its own labels: the uuid it was given
  EXPECT_TRUE(containers[1].started_by_gpurun);
  EXPECT_THAT(containers[1].devices, ElementsAre("GPU-00000002"));
  EXPECT_EQ(containers[1].time_limit, std::chrono::seconds(60));
}

// What the service's clean-up of ended detached jobs reads: when the job ended or the container
// was made, and whether a launch labelled it (gpurun.name naming it, not only its image's labels).
TEST(ParseGpuContainers, ReadsWhenItEndedAndWhetherALaunchLabelledIt) {
  const auto containers = parse_gpu_containers(R"([
    {"Name": "/alice_gpu2_5e6f7a8b", "Created": "2026-11-20T08:00:00.1Z",
     "State": {"Status": "exited", "StartedAt": "2026-11-20T08:00:01Z", "FinishedAt": "2026-11-21T09:30:00.5Z",
               "ExitCode": 2},
     "Config": {"Labels": {"gpurun.user": "alice", "gpurun.gpus": "2", "gpurun.name": "alice_gpu2_5e6f7a8b",
                           "gpurun.detached": "true"}},
     "HostConfig": {"DeviceRequests": [{"Driver": "", "DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}},
    {"Name": "/old_launch", "Config": {"Labels": {"gpurun.user": "bob", "gpurun.gpus": "1"}},
     "HostConfig": {"DeviceRequests": [{"Driver": "", "DeviceIDs": ["1"], "Capabilities": [["gpu"]]}]}}
  ])");
  ASSERT_EQ(containers.size(), 2U);
  EXPECT_EQ(containers[0].finished_at, "2026-11-21T09:30:00.5Z");
  EXPECT_EQ(containers[0].created_at, "2026-11-20T08:00:00.1Z");
  EXPECT_EQ(containers[0].exit_code, 2);
  EXPECT_TRUE(has_ended(containers[0]));
  EXPECT_FALSE(containers[1].exit_code.has_value());  // no state: not said to have ended
  EXPECT_TRUE(containers[0].labelled_by_launch);
  EXPECT_TRUE(containers[0].detached);
  EXPECT_FALSE(containers[1].detached);
  EXPECT_TRUE(containers[1].started_by_gpurun);  // labels from before gpurun.name was written
  EXPECT_FALSE(containers[1].labelled_by_launch);
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

TEST(ParseGpuContainers, AnyCapabilitySetOfDockersNvidiaDriverGetsGpus) {
  // compose's `capabilities: [compute, utility]` with no driver: docker's nvidia driver serves it.
  const auto containers = parse_gpu_containers(R"([
    {"Name": "/compose", "HostConfig": {"DeviceRequests": [{"Count": -1, "Capabilities": [["compute", "utility"]]}]}},
    {"Name": "/nvidia", "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["1"], "Capabilities": [["nvidia"]]}]}},
    {"Name": "/mixed", "HostConfig": {"DeviceRequests": [{"Count": -1, "Capabilities": [["gpu", "fpga"]]}]}},
    {"Name": "/empty", "HostConfig": {"DeviceRequests": [{"Count": -1, "Capabilities": [[]]}]}}
  ])");
  ASSERT_EQ(containers.size(), 2U);
  EXPECT_TRUE(containers[0].all_gpus);
  EXPECT_THAT(held_gpu_indices(containers[1], four_gpus()), ElementsAre(1));
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

// docker 25+ (CDI by default from 28.2) stores `--device nvidia.com/gpu=…` as a device request
// with Driver "cdi", no Count and no Capabilities (docker/cli opts/devices; `docker inspect` of
// `docker run --device nvidia.com/gpu=0 --device nvidia.com/gpu=GPU-… ubuntu`).
TEST(ParseGpuContainers, CdiDeviceRequestsNameGpusByIndexUuidOrAll) {
  const auto containers = parse_gpu_containers(R"([
    {"Id": "5f0c5e1a6a0a", "Name": "/cdi-two", "Config": {"Image": "ubuntu:24.04", "Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "runc", "Devices": [], "DeviceRequests": [
       {"Driver": "cdi", "Count": 0, "DeviceIDs": ["nvidia.com/gpu=0"], "Capabilities": null, "Options": null},
       {"Driver": "cdi", "Count": 0, "DeviceIDs": ["nvidia.com/gpu=GPU-00000003"], "Capabilities": null, "Options": null}]}},
    {"Id": "77aa", "Name": "/cdi-all", "Config": {"Image": "ubuntu:24.04"},
     "HostConfig": {"DeviceRequests": [{"Driver": "cdi", "Count": 0, "DeviceIDs": ["nvidia.com/gpu=all"], "Capabilities": null}]}},
    {"Id": "88bb", "Name": "/not-nvidia", "Config": {"Image": "intel/oneapi"},
     "HostConfig": {"DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["intel.com/gpu=0", "vendor.com/device=nvidia.com/gpu=1"]}]}}
  ])");
  ASSERT_EQ(containers.size(), 2U);
  EXPECT_EQ(containers[0].name, "cdi-two");
  EXPECT_FALSE(containers[0].all_gpus);  // the image's NVIDIA_VISIBLE_DEVICES=all is not what it holds
  EXPECT_THAT(containers[0].devices, ElementsAre("0", "GPU-00000003"));
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(0, 3));
  EXPECT_EQ(containers[1].name, "cdi-all");
  EXPECT_TRUE(containers[1].all_gpus);
  EXPECT_THAT(held_gpu_indices(containers[1], four_gpus()), ElementsAre(0, 1, 2, 3));
}

// `docker run --gpus all` as docker 20.10-28 store it.
TEST(ParseGpuContainers, GpusAllIsCountMinusOneAndHoldsEveryGpu) {
  const auto containers = parse_gpu_containers(R"([{"Id": "c0ffee", "Name": "/everything",
    "Config": {"Image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
    "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": -1, "DeviceIDs": null, "Capabilities": [["gpu"]], "Options": {}}]}}])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_TRUE(containers[0].all_gpus);
  EXPECT_THAT(containers[0].devices, IsEmpty());
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(0, 1, 2, 3));
}

// The legacy form: `docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=1,2` (nvidia-docker2).
TEST(ParseGpuContainers, TheNvidiaRuntimeWithNvidiaVisibleDevices) {
  const auto containers = parse_gpu_containers(R"([{"Id": "0ld", "Name": "/legacy-runtime",
    "Config": {"Image": "tensorflow/tensorflow:1.15.5-gpu", "Env": ["NVIDIA_VISIBLE_DEVICES=1,2", "PATH=/usr/bin"]},
    "HostConfig": {"Runtime": "nvidia", "Devices": [], "DeviceRequests": null, "Privileged": false}}])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_THAT(containers[0].devices, ElementsAre("1", "2"));
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(1, 2));
}

// Under the nvidia runtime (DGX OS's default) the toolkit reads an image's NVIDIA_VISIBLE_DEVICES=all
// beside CDI devices and device nodes: such a container holds every GPU. Not beside --gpus, for
// which docker gives the runtime its own variable.
TEST(ParseGpuContainers, TheNvidiaRuntimeReadsTheImagesVariableBesideCdiAndDeviceNodes) {
  const auto containers = parse_gpu_containers(R"([
    {"Name": "/cdi", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "nvidia", "DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=0"]}]}},
    {"Name": "/node", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "nvidia", "Devices": [{"PathOnHost": "/dev/nvidia0", "PathInContainer": "/dev/nvidia0"}]}},
    {"Name": "/gpus", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "nvidia", "DeviceRequests": [{"Driver": "", "DeviceIDs": ["1"], "Capabilities": [["gpu"]]}]}},
    {"Name": "/runc", "Config": {"Env": ["NVIDIA_VISIBLE_DEVICES=all"]},
     "HostConfig": {"Runtime": "runc", "DeviceRequests": [{"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=0"]}]}}
  ])");
  ASSERT_EQ(containers.size(), 4U);
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(held_gpu_indices(containers[1], four_gpus()), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(held_gpu_indices(containers[2], four_gpus()), ElementsAre(1));
  EXPECT_THAT(held_gpu_indices(containers[3], four_gpus()), ElementsAre(0));
}

// `docker run --device /dev/nvidia3 --device /dev/nvidiactl --device /dev/nvidia-uvm …`: the GPU's
// own node is held; the control nodes every GPU user shares are not GPUs.
TEST(ParseGpuContainers, DeviceNodesAreRecordedByMinorNumber) {
  const auto containers = parse_gpu_containers(R"([{"Id": "dev3", "Name": "/node3", "Config": {"Image": "cuda"},
    "HostConfig": {"DeviceRequests": null, "Devices": [
      {"PathOnHost": "/dev/nvidia3", "PathInContainer": "/dev/nvidia3", "CgroupPermissions": "rwm"},
      {"PathOnHost": "/dev/nvidiactl", "PathInContainer": "/dev/nvidiactl", "CgroupPermissions": "rwm"},
      {"PathOnHost": "/dev/nvidia-uvm", "PathInContainer": "/dev/nvidia-uvm", "CgroupPermissions": "rwm"},
      {"PathOnHost": "/dev/nvidia-caps/nvidia-cap1", "PathInContainer": "/dev/nvidia-caps/nvidia-cap1", "CgroupPermissions": "rwm"}]}},
    {"Id": "ctl", "Name": "/ctl-only", "Config": {"Image": "cuda"},
     "HostConfig": {"Devices": [{"PathOnHost": "/dev/nvidiactl", "PathInContainer": "/dev/nvidiactl", "CgroupPermissions": "rwm"}]}}])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_THAT(containers[0].devices, ElementsAre("minor:3"));
  EXPECT_EQ(device_minor(containers[0].devices[0]), 3);
  EXPECT_EQ(device_minor("3"), std::nullopt);
  EXPECT_EQ(device_minor("minor:x"), std::nullopt);
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(3));
}

// Where the driver's minor numbers are not the indices (/proc/driver/nvidia/gpus/BUS/information
// says which), /dev/nvidia3 is the GPU of minor 3, not GPU 3: judged on GPU 3, a busy container
// was stopped for another GPU's idling, and its own GPU handed out.
TEST(HeldGpuIndices, ADeviceNodeIsTheGpuOfThatMinorNumberAsTheDriverSaysIt) {
  const test::TempDir root("gpurun-proc");
  std::vector<Gpu> gpus = four_gpus();
  const std::vector<std::string> buses{"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0"};
  const std::vector<int> minors{2, 3, 0, 1};
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].pci_bus_id = buses[i];
    const std::string dir = root / ("proc/driver/nvidia/gpus/" + sysfs_pci_bus_id(buses[i]));
    std::filesystem::create_directories(dir);
    test::write_file(dir + "/information",
                     fmt::format("Model: \t\t NVIDIA H100\nBus Location: \t {}\nDevice Minor: \t {}\n",
                                 sysfs_pci_bus_id(buses[i]), minors[i]));
  }
  GpuContainer node;
  node.devices = {"minor:3"};
  {
    const test::EnvGuard at("GPURUN_SYSFS_ROOT", root.str());
    EXPECT_THAT(held_gpu_indices(node, gpus), ElementsAre(1));
  }
  const test::EnvGuard nowhere("GPURUN_SYSFS_ROOT", root / "none");
  EXPECT_THAT(held_gpu_indices(node, gpus), ElementsAre(3));  // the driver says nothing: the index
}

// A 3g.40gb instance "MIG-GPU-GI" of GPU `gpu`, GPU instance `gi`.
MigInstance mig_instance(int gpu, int gi) {
  return {.uuid = fmt::format("MIG-{}-{}", gpu, gi),
          .gpu_index = gpu,
          .gpu_instance_id = gi,
          .compute_instance_id = 0,
          .profile = "3g.40gb",
          .memory_used_mib = {},
          .memory_total_mib = {},
          .processes = {},
          .device_index = -1};
}

// On a MIG host the units are numbered 0.. among the instances: unit 1 is GPU 0's second
// instance, not GPU 1. A container holds an instance by its MIG UUID, by "GPU:N", or by its
// whole parent (index, UUID, device node); it held the unit of its GPU's number before.
TEST(HeldGpuIndices, AMigUnitIsHeldByItsUuidItsPlaceOrItsParentNotByItsNumber) {
  Snapshot snapshot;
  snapshot.gpus = four_gpus();
  for (int gpu : {0, 1})
    for (int gi : {1, 2}) snapshot.mig_instances.push_back(mig_instance(gpu, gi));
  const std::vector<Gpu> units = mig_units(snapshot);  // 0: 0:0, 1: 0:1, 2: 1:0, 3: 1:1
  const auto held = [&](std::vector<std::string> devices) {
    GpuContainer c;
    c.devices = std::move(devices);
    return held_gpu_indices(c, units);
  };
  EXPECT_THAT(held({"1"}), ElementsAre(2, 3));  // the whole GPU 1
  EXPECT_THAT(held({"GPU-00000001"}), ElementsAre(2, 3));
  EXPECT_THAT(held({"1:0"}), ElementsAre(2));
  EXPECT_THAT(held({"0:1", "MIG-1-2"}), ElementsAre(1, 3));
  EXPECT_THAT(held({"3"}), IsEmpty());  // GPU 3 has no instances
  const test::EnvGuard nowhere("GPURUN_SYSFS_ROOT", "/nonexistent/sysfs");
  EXPECT_THAT(held({"minor:0"}), ElementsAre(0, 1));  // /dev/nvidia0: GPU 0's node, both instances
}

// podman shows a CDI MIG device as its parent's node and the capabilities of one instance: those
// say which (the driver's mig-minors); where the driver does not say, the parent's every instance.
TEST(HeldGpuIndices, ParentNodeWithMigCapabilitiesHoldsTheInstanceTheyOpen) {
  const auto containers = parse_gpu_containers(R"([{
    "Name": "/bob_mig", "Config": {"Image": "img"},
    "HostConfig": {"Devices": [{"PathOnHost": "/dev/nvidia1", "PathInContainer": "/dev/nvidia1"},
                               {"PathOnHost": "/dev/nvidia-caps/nvidia-cap21", "PathInContainer": "/dev/nvidia-caps/nvidia-cap21"},
                               {"PathOnHost": "/dev/nvidia-caps/nvidia-cap22", "PathInContainer": "/dev/nvidia-caps/nvidia-cap22"},
                               {"PathOnHost": "/dev/nvidiactl", "PathInContainer": "/dev/nvidiactl"}]}}])");
  ASSERT_EQ(containers.size(), 1u);
  EXPECT_THAT(containers[0].devices, ElementsAre("minor:1"));
  EXPECT_THAT(containers[0].mig_caps, ElementsAre(21, 22));
  Snapshot snapshot;
  snapshot.gpus = four_gpus();
  for (int gi : {1, 2}) snapshot.mig_instances.push_back(mig_instance(1, gi));
  const std::vector<Gpu> units = mig_units(snapshot);
  const test::TempDir root("gpurun-caps");
  std::filesystem::create_directories(root / "proc/driver/nvidia-caps");
  test::write_file(root / "proc/driver/nvidia-caps/mig-minors",
                   "config 1\nmonitor 2\ngpu0/gi1/access 3\ngpu0/gi1/ci0/access 4\ngpu1/gi1/access 12\n"
                   "gpu1/gi1/ci0/access 13\ngpu1/gi2/access 21\ngpu1/gi2/ci0/access 22\n");
  {
    const test::EnvGuard at("GPURUN_SYSFS_ROOT", root.str());
    EXPECT_THAT(held_gpu_indices(containers[0], units), ElementsAre(1));  // GI 2, not GI 1
  }
  const test::EnvGuard nowhere("GPURUN_SYSFS_ROOT", root / "none");
  EXPECT_THAT(held_gpu_indices(containers[0], units), ElementsAre(0, 1));
}

// podman (and docker compose before 2.30) keep a CDI name given to --device as a device mapping.
TEST(ParseGpuContainers, CdiNamesAmongDeviceMappings) {
  const auto containers =
      parse_gpu_containers(R"([{"Id": "p0d", "Name": "/ollama", "Config": {"Image": "ollama/ollama"},
    "HostConfig": {"Devices": [{"PathOnHost": "nvidia.com/gpu=1", "PathInContainer": "nvidia.com/gpu=1", "CgroupPermissions": ""}]}}])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(1));
}

// Podman 4 resolves a CDI device at creation: its inspect shows the spec's device node (here a
// stand-in's /dev/null), so a container gpurun started is read by its label.
TEST(ParseGpuContainers, AResolvedCdiDeviceIsReadFromGpurunsLabel) {
  const auto containers = parse_gpu_containers(R"([{"Id": "p0d", "Name": "alice_gpu2_1", "Config": {"Image": "img",
    "Labels": {"gpurun.user": "alice", "gpurun.gpus": "2", "gpurun.gpu-uuids": "GPU-00000002"}},
    "HostConfig": {"Devices": [{"PathOnHost": "/dev/null", "PathInContainer": "/dev/nvidia2", "CgroupPermissions": ""}]}},
    {"Id": "n0", "Name": "plain", "Config": {"Image": "img", "Labels": {"gpurun.user": "bob"}}, "HostConfig": {}}])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_THAT(containers[0].devices, ElementsAre("GPU-00000002"));
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(2));
}

TEST(ParseGpuContainers, ReadsTheTimeLimitAndNotifyLabelsOfGpurunsContainersOnly) {
  const auto containers = parse_gpu_containers(R"([
    {"Id": "a", "Name": "/a", "Config": {"Image": "img", "Labels": {"gpurun.user": "alice", "gpurun.gpus": "0",
     "gpurun.time-limit": "3600", "gpurun.notify": "run_ended", "gpurun.name": "a"}},
     "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]}},
    {"Id": "b", "Name": "/b", "Config": {"Image": "img", "Labels": {"gpurun.user": "bob", "gpurun.gpus": "1",
     "gpurun.time-limit": "-5", "gpurun.notify": "yes"}},
     "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["1"], "Capabilities": [["gpu"]]}]}},
    {"Id": "c", "Name": "/c", "Config": {"Image": "img", "Labels": {"gpurun.time-limit": "60"}},
     "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["2"], "Capabilities": [["gpu"]]}]}},
    {"Id": "d", "Name": "/d", "Config": {"Image": "img", "Labels": {"gpurun.user": "dan", "gpurun.gpus": "3",
     "gpurun.time-limit": "9000000000000000000", "gpurun.name": "d"}},
     "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["3"], "Capabilities": [["gpu"]]}]}},
    {"Id": "e", "Name": "/e", "Config": {"Image": "img", "Labels": {"gpurun.user": "eve", "gpurun.gpus": "3",
     "gpurun.time-limit": "60", "gpurun.notify": "run_ended"}},
     "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["3"], "Capabilities": [["gpu"]]}]}}])");
  ASSERT_EQ(containers.size(), 5U);
  // Policy labels without gpurun.name (written with them by every launch that writes them) are
  // an image's LABELs: a plain `docker run` of it is not stopped after 60 s.
  EXPECT_TRUE(containers[4].started_by_gpurun);
  EXPECT_FALSE(containers[4].time_limit);
  EXPECT_FALSE(containers[4].notify_end);
  EXPECT_FALSE(containers[3].time_limit);  // past a year: written by hand, and past the clock's range
  EXPECT_EQ(containers[0].time_limit, std::chrono::seconds(3600));
  EXPECT_TRUE(containers[0].notify_end);
  EXPECT_FALSE(containers[1].time_limit);  // not a value gpurun writes
  EXPECT_FALSE(containers[1].notify_end);
  EXPECT_FALSE(containers[2].time_limit);  // not gpurun's container: its labels are someone else's
}

TEST(ParseGpuContainers, APrivilegedContainerHoldsEveryGpu) {
  const auto containers = parse_gpu_containers(R"([
    {"Id": "priv", "Name": "/privileged", "Config": {"Image": "debian:12", "Env": ["NVIDIA_VISIBLE_DEVICES=0"]},
     "HostConfig": {"Privileged": true, "Devices": [], "DeviceRequests": null}},
    {"Id": "plain", "Name": "/plain", "Config": {"Image": "debian:12"}, "HostConfig": {"Privileged": false}}])");
  ASSERT_EQ(containers.size(), 1U);
  EXPECT_EQ(containers[0].name, "privileged");
  EXPECT_TRUE(containers[0].all_gpus);
  EXPECT_THAT(held_gpu_indices(containers[0], four_gpus()), ElementsAre(0, 1, 2, 3));
}

TEST(ContainerClaims, NameTheContainerAndWhoRunsItForEachHeldGpu) {
  const auto containers = parse_gpu_containers(R"([{
    "Name": "/bob_gpu1_12345678", "Config": {"Image": "bob/train:1", "Labels": {"gpurun.user": "bob"}},
    "HostConfig": {"DeviceRequests": [{"DeviceIDs": ["GPU-00000001"], "Capabilities": [["gpu"]]}]}
  }])");
  ExternalClaims claims = container_claims(containers, four_gpus());
  ASSERT_EQ(claims.size(), 1U);
  const auto reason = [](const std::string& text) { return Field(&Claim::reason, text); };
  EXPECT_THAT(claims[1], ElementsAre(reason("in use by container bob_gpu1_12345678 (bob, bob/train:1)")));
  ASSERT_TRUE(claims[1][0].holder);
  EXPECT_EQ(claims[1][0].holder->kind, Holder::Kind::container);
  EXPECT_EQ(claims[1][0].holder->user, "bob");
  EXPECT_EQ(claims[1][0].holder->name, "bob_gpu1_12345678");
  add_claims(claims,
             {{1, {Claim{.reason = "reserved", .holder = {}}}}, {2, {Claim{.reason = "reserved too", .holder = {}}}}});
  EXPECT_THAT(claims[1],
              ElementsAre(reason("in use by container bob_gpu1_12345678 (bob, bob/train:1)"), reason("reserved")));
  EXPECT_THAT(claims[2], ElementsAre(reason("reserved too")));
}

}  // namespace
}  // namespace gpurun
