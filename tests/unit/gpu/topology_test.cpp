// gpu/topology: bus ids as sysfs names them, CPU lists, GPUs placed from fake sysfs trees of the
// three hosts of issue 14, and `nvidia-smi topo -m` captures (tests/data/topology) parsed.
#include "gpurun/gpu/topology.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "support/fake_sysfs.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

std::string capture(const std::string& name) {
  return test::read_file(std::string(GPURUN_TEST_DATA_DIR) + "/topology/" + name);
}

// The links as "a-b:KIND" words, for exact comparisons.
std::vector<std::string> words(const std::vector<GpuLink>& links) {
  std::vector<std::string> out;
  for (const GpuLink& l : links) out.push_back(fmt::format("{}-{}:{}", l.a, l.b, l.kind));
  return out;
}

std::vector<Gpu> gpus_of(const test::FakeHost& host) {
  std::vector<Gpu> gpus;
  for (std::size_t i = 0; i < host.gpus.size(); ++i) {
    Gpu gpu = test::make_gpu(static_cast<int>(i), 4, 81920, 0);
    gpu.pci_bus_id = host.gpus[i].bus_id;
    gpus.push_back(gpu);
  }
  return gpus;
}

TEST(SysfsPciBusId, NvidiaSmiNvmlAndShortFormsBecomeTheSysfsName) {
  EXPECT_EQ(sysfs_pci_bus_id("00000000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(sysfs_pci_bus_id("00000000:BD:00.0"), "0000:bd:00.0");
  EXPECT_EQ(sysfs_pci_bus_id("0000:4e:00.0"), "0000:4e:00.0");
  EXPECT_EQ(sysfs_pci_bus_id("4E:00.0"), "0000:4e:00.0");
  EXPECT_EQ(sysfs_pci_bus_id(" 00000001:C1:00.0 "), "0001:c1:00.0");
  for (const char* bad : {"", "[N/A]", "07:00", "zz:00.0", "0000:07:00.0.1", "../../etc:00.0", "0000:07:0/.0"})
    EXPECT_EQ(sysfs_pci_bus_id(bad), "") << bad;
}

TEST(Cpulist, ParsesAndFormatsKernelLists) {
  const auto cpus = parse_cpulist("48-63,176-191\n");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(cpus->size(), 32u);
  EXPECT_EQ(format_cpulist(*cpus), "48-63,176-191");
  EXPECT_EQ(format_cpulist(*parse_cpulist("5,0-2,3")), "0-3,5");
  EXPECT_EQ(format_cpulist({7}), "7");
  for (const char* bad : {"", "a-b", "3-1", "1,,2", "-1", "0-8192"}) EXPECT_FALSE(parse_cpulist(bad)) << bad;
  EXPECT_EQ(parse_cpulist("0-8191")->size(), 8192U);
  // More CPUs than the kernel counts, named again and again: refused, not seconds of work.
  std::string repeated = "0-999";
  for (int i = 0; i < 300; ++i) repeated += ",0-999";
  EXPECT_FALSE(parse_cpulist(repeated));
}

TEST(LocateGpus, DgxA100FollowsNvidiasPublishedAffinity) {
  test::TempDir dir;
  const std::string root = test::write_fake_sysfs(dir.path(), test::dgx_a100());
  EXPECT_TRUE(pci_sysfs_readable(root));
  std::vector<Gpu> gpus = gpus_of(test::dgx_a100());
  locate_gpus(gpus, root);
  const std::vector<int> nodes{3, 3, 1, 1, 7, 7, 5, 5};
  for (std::size_t i = 0; i < gpus.size(); ++i) EXPECT_EQ(gpus[i].numa_node, nodes[i]) << "GPU " << i;
  EXPECT_EQ(gpus[0].local_cpus, "48-63,176-191");
  EXPECT_EQ(gpus[2].local_cpus, "16-31,144-159");
  EXPECT_EQ(gpus[4].local_cpus, "112-127,240-255");
  EXPECT_EQ(gpus[0].socket, 0);
  EXPECT_EQ(gpus[6].socket, 1);
}

TEST(LocateGpus, DgxH100HasFourGpusPerSocket) {
  test::TempDir dir;
  const std::string root = test::write_fake_sysfs(dir.path(), test::dgx_h100());
  std::vector<Gpu> gpus = gpus_of(test::dgx_h100());
  locate_gpus(gpus, root);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].numa_node, i < 4 ? 0 : 1) << "GPU " << i;
    EXPECT_EQ(gpus[i].local_cpus, i < 4 ? "0-55,112-167" : "56-111,168-223") << "GPU " << i;
    EXPECT_EQ(gpus[i].socket, i < 4 ? 0 : 1) << "GPU " << i;
  }
}

TEST(LocateGpus, TwoSocketPcieBoxAndANodelessWorkstation) {
  test::TempDir dir;
  std::vector<Gpu> gpus = gpus_of(test::pcie_2socket());
  locate_gpus(gpus, test::write_fake_sysfs(dir.path() / "pcie", test::pcie_2socket()));
  EXPECT_EQ(gpus[0].numa_node, 1);
  EXPECT_EQ(gpus[0].local_cpus, "8-15,24-31");
  EXPECT_EQ(gpus[1].numa_node, 0);
  EXPECT_EQ(gpus[4].local_cpus, "0-7,16-23");

  std::vector<Gpu> workstation = gpus_of(test::workstation_nv4());
  locate_gpus(workstation, test::write_fake_sysfs(dir.path() / "ws", test::workstation_nv4()));
  EXPECT_FALSE(workstation[0].numa_node) << "numa_node -1 means no node";
  EXPECT_EQ(workstation[0].local_cpus, "0-31");
}

TEST(LocateGpus, WhatSysfsDoesNotSayStaysUnknown) {
  test::TempDir dir;
  const std::string root = test::write_fake_sysfs(dir.path(), test::dgx_h100());
  std::vector<Gpu> gpus{test::make_gpu(0, 4, 81920, 0), test::make_gpu(1, 4, 81920, 0), test::make_gpu(2, 4, 81920, 0)};
  gpus[1].pci_bus_id = "00000000:AA:00.0";  // no such device
  gpus[2].pci_bus_id = "[N/A]";
  locate_gpus(gpus, root);
  for (const Gpu& g : gpus) {
    EXPECT_FALSE(g.numa_node);
    EXPECT_EQ(g.local_cpus, "");
    EXPECT_FALSE(g.socket);
  }
  EXPECT_FALSE(pci_sysfs_readable(dir / "nowhere"));
}

TEST(SysfsRoot, ComesFromTheEnvironment) {
  {
    test::EnvGuard root("GPURUN_SYSFS_ROOT", "/tmp/fake-sysfs");
    EXPECT_EQ(sysfs_root(), "/tmp/fake-sysfs");
  }
  test::EnvGuard unset("GPURUN_SYSFS_ROOT", std::nullopt);
  EXPECT_EQ(sysfs_root(), "/");
}

TEST(TopoMatrix, Dgx1HybridCubeMesh) {
  const auto links = parse_topo_matrix(capture("dgx1_v100.txt"));
  ASSERT_EQ(links.size(), 28u);  // 8 choose 2; the mlx5_0 column and row are not GPUs
  EXPECT_THAT(words(links),
              ::testing::IsSupersetOf({"0-1:NV1", "0-2:NV1", "0-3:NV2", "0-4:NV2", "0-5:SYS", "1-2:NV2", "1-3:NV1",
                                       "1-5:NV2", "2-6:NV1", "3-7:NV1", "4-7:NV2", "5-7:NV1", "6-7:NV2"}));
}

TEST(TopoMatrix, DgxA100IsAllNv12) {
  const auto links = parse_topo_matrix(capture("dgx_a100.txt"));
  ASSERT_EQ(links.size(), 28u);
  for (const GpuLink& l : links) EXPECT_EQ(l.kind, "NV12") << l.a << "-" << l.b;
}

TEST(TopoMatrix, DgxH100WithTabsAndRunTogetherNicCells) {
  const auto links = parse_topo_matrix(capture("dgx_h100.txt"));
  ASSERT_EQ(links.size(), 28u);
  for (const GpuLink& l : links) EXPECT_EQ(l.kind, "NV18") << l.a << "-" << l.b;
}

TEST(TopoMatrix, WorkstationNvlinkBridgesAndAPcieBox) {
  EXPECT_EQ(words(parse_topo_matrix(capture("workstation_nv4.txt"))),
            (std::vector<std::string>{"0-1:PHB", "0-2:NODE", "0-3:NV4", "1-2:NV4", "1-3:NODE", "2-3:PHB"}));
  EXPECT_EQ(words(parse_topo_matrix(capture("pcie_2socket.txt"))),
            (std::vector<std::string>{"0-1:SYS", "0-2:SYS", "0-3:SYS", "0-4:SYS", "1-2:PHB", "1-3:NODE", "1-4:NODE",
                                      "2-3:NODE", "2-4:NODE", "3-4:PHB"}));
}

TEST(TopoMatrix, OneGpuWithTerminalEscapesHasNoLinks) {
  // The real H100 capture (driver 580) underlines its header with escape codes.
  EXPECT_TRUE(parse_topo_matrix(capture("h100_single.txt")).empty());
  EXPECT_TRUE(parse_topo_matrix("").empty());
  EXPECT_TRUE(parse_topo_matrix("No devices were found\n").empty());
}

TEST(LinkRank, NvlinkAbovePcieAboveTheSocketLink) {
  EXPECT_GT(link_rank("NV2"), link_rank("NV1"));
  EXPECT_GT(link_rank("NV1"), link_rank("PIX"));
  EXPECT_GT(link_rank("PIX"), link_rank("PXB"));
  EXPECT_GT(link_rank("PXB"), link_rank("PHB"));
  EXPECT_GT(link_rank("PHB"), link_rank("NODE"));
  EXPECT_GT(link_rank("NODE"), link_rank("SYS"));
  EXPECT_EQ(link_rank("SOC"), link_rank("SYS"));
  EXPECT_EQ(link_rank("X"), 0);
  EXPECT_EQ(link_rank("NV"), 0);
}

TEST(TopoQuery, IsOneProcessWithoutAShell) {
  EXPECT_EQ(topo_query("/usr/bin/nvidia-smi").argv, (std::vector<std::string>{"/usr/bin/nvidia-smi", "topo", "-m"}));
}

}  // namespace
}  // namespace gpurun
