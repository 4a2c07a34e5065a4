// Placement that follows the topology (issue 14), through the stand-in nvidia-smi (answering
// `topo -m` from real captures) and fake sysfs trees of a DGX A100, a DGX H100, a 2-socket PCIe
// box and an NVLink-bridged workstation: the chosen GPUs and the exact --cpuset-cpus/--cpuset-mems.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpurun_fixture.hpp"
#include "support/fake_sysfs.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class TopologyTest : public GpurunTest {
 protected:
  // The stand-ins for `scenario_name`, with sysfs read from a fake tree of `host`; nvidia-smi's
  // calls are logged to smi_log().
  Env on(const test::FakeHost& host, const std::string& scenario_name) const {
    Env env = fakes(scenario_name);
    env.emplace_back("GPURUN_SYSFS_ROOT", test::write_fake_sysfs(dir() + "/sysfs", host));
    env.emplace_back("FAKE_SMI_LOG", smi_log());
    return env;
  }
  std::string smi_log() const { return dir() + "/smi.log"; }
  // The docker command a dry run prints.
  Outcome dry_run(const Env& env, const std::string& gpus, std::vector<std::string> more = {}) const {
    std::vector<std::string> args{"--dry-run", "-q", "--image", "img", "--cpus-per-gpu", "16", "--host-cpus", "256"};
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {gpus, "--", "true"});
    return gpurun(args, env);
  }
};

TEST_F(TopologyTest, DgxH100TwoGoIntoTheSocketAlreadyInUseWithItsCpusAndMemory) {
  const Outcome run = dry_run(on(test::dgx_h100(), "topo_dgx_h100_gpu5_busy.json"), "2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(" --gpus '\"device=4,6\"' --cpus 32 --cpuset-cpus 56-111,168-223 --cpuset-mems 1 --user "));
  EXPECT_THAT(read_file(smi_log()), HasSubstr("[\"topo\", \"-m\"]")) << "sets tied on NUMA nodes: links asked";
}

TEST_F(TopologyTest, NumaAffinityFalseKeepsTheChoiceAndDropsTheCpuset) {
  const Env env = on(test::dgx_h100(), "topo_dgx_h100_gpu5_busy.json");
  const Outcome run = dry_run(env, "2", {"--numa-affinity=false"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(" --gpus '\"device=4,6\"' --cpus 32 --user "));
  EXPECT_THAT(run.out, Not(HasSubstr("--cpuset")));
  Env configured = env;
  configured.emplace_back("GPURUN_NUMA_AFFINITY", "false");
  EXPECT_THAT(dry_run(configured, "2").out, Not(HasSubstr("--cpuset")));
}

TEST_F(TopologyTest, DgxA100FourGpusTakeOneSocketsTwoNodes) {
  const Outcome run = dry_run(on(test::dgx_a100(), "topo_dgx_a100.json"), "4");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(" --gpus '\"device=0,1,2,3\"' --cpus 64 --cpuset-cpus 16-31,48-63,144-159,176-191 "
                                 "--cpuset-mems 1,3 --user "));
}

TEST_F(TopologyTest, OneGpuAsksNoTopologyButGetsItsNode) {
  const Outcome run = dry_run(on(test::dgx_a100(), "topo_dgx_a100.json"), "1");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(" --gpus '\"device=0\"' --cpus 16 --cpuset-cpus 48-63,176-191 --cpuset-mems 3 --user "));
  const std::string log = read_file(smi_log());
  EXPECT_THAT(log, Not(HasSubstr("topo"))) << "a single-GPU launch costs no topo -m";
  EXPECT_THAT(log, HasSubstr("\"--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu,mig.mode.current,"
                             "pci.bus_id\""));
}

TEST_F(TopologyTest, TwoSocketPcieBoxPrefersTheHostBridgePairOnOneNode) {
  const Outcome pick = gpurun({"pick", "2"}, on(test::pcie_2socket(), "topo_pcie_2socket_gpu1_busy.json"));
  EXPECT_EQ(pick.exit_code, 0) << pick.err;
  EXPECT_EQ(pick.out, "3,4\n") << "2,3 and 2,4 cross host bridges (NODE); GPU 0 is on the other socket";
  const Outcome one = dry_run(on(test::pcie_2socket(), "topo_pcie_2socket_gpu1_busy.json"), "1");
  EXPECT_THAT(one.out, HasSubstr(" --gpus '\"device=0\"' --cpus 16 --cpuset-cpus 8-15,24-31 --cpuset-mems 1 --user "))
      << "the lone GPU of socket 1, leaving node 0's three together";
}

TEST_F(TopologyTest, WorkstationTakesTheNvlinkBridgedPairWithoutPinning) {
  const Env env = on(test::workstation_nv4(), "topo_workstation_nv4.json");
  const Outcome pick = gpurun({"pick", "2"}, env);
  EXPECT_EQ(pick.exit_code, 0) << pick.err;
  EXPECT_EQ(pick.out, "0,3\n");
  const Outcome run = dry_run(env, "2");
  EXPECT_THAT(run.out, HasSubstr(" --gpus '\"device=0,3\"' --cpus 32 --user ")) << "no NUMA node: no cpuset";
}

TEST_F(TopologyTest, WithoutSysfsThePickIsTheRankingAndNothingMoreIsAsked) {
  Env env = fakes("topo_dgx_h100_gpu5_busy.json");
  env.emplace_back("FAKE_SMI_LOG", smi_log());
  const Outcome pick = gpurun({"pick", "2"}, env);
  EXPECT_EQ(pick.out, "0,1\n") << pick.err;
  const std::string log = read_file(smi_log());
  EXPECT_THAT(log, Not(HasSubstr("topo")));
  EXPECT_THAT(log, Not(HasSubstr("pci.bus_id")));
  EXPECT_THAT(dry_run(env, "2").out, Not(HasSubstr("--cpuset")));
}

TEST_F(TopologyTest, StatusShowsTheNumaNodeWhereKnown) {
  const Outcome status = gpurun({"status"}, on(test::dgx_a100(), "topo_dgx_a100.json"));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("  UTIL  NUMA  USER  STATE\n"));
  EXPECT_THAT(status.out, HasSubstr("\n  0  NVIDIA A100-SXM4-80GB  4 / 81920 MiB    0%     3  -     free\n"));
  EXPECT_THAT(status.out, HasSubstr("\n  4  NVIDIA A100-SXM4-80GB  4 / 81920 MiB    0%     7  -     free\n"));
  const auto json = nlohmann::json::parse(gpurun({"status", "--json"}, on(test::dgx_a100(), "topo_dgx_a100.json")).out);
  EXPECT_EQ(json.at("gpus").at(2).at("numa_node"), 1);
  EXPECT_EQ(json.at("gpus").at(2).at("local_cpus"), "16-31,144-159");
  EXPECT_EQ(json.at("gpus").at(2).at("pci_bus_id"), "00000000:47:00.0");

  const Outcome plain = gpurun({"status"}, fakes("topo_dgx_a100.json"));
  EXPECT_THAT(plain.out, HasSubstr("  UTIL  USER  STATE\n")) << "no sysfs: no NUMA column";
}

TEST_F(TopologyTest, StatusTopologyPrintsTheLinkMatrix) {
  const Outcome status = gpurun({"status", "--topology"}, on(test::workstation_nv4(), "topo_workstation_nv4.json"));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("\n\n"
                                    "      GPU0  GPU1  GPU2  GPU3  NUMA  CPUS\n"
                                    "GPU0  X     PHB   NODE  NV4   -     0-31\n"
                                    "GPU1  PHB   X     NV4   NODE  -     0-31\n"
                                    "GPU2  NODE  NV4   X     PHB   -     0-31\n"
                                    "GPU3  NV4   NODE  PHB   X     -     0-31\n"));
  const Outcome h100 = gpurun({"status", "--topology"}, on(test::dgx_h100(), "topo_dgx_h100_gpu5_busy.json"));
  EXPECT_THAT(h100.out, HasSubstr("GPU5  NV18  NV18  NV18  NV18  NV18  X     NV18  NV18  1     56-111,168-223\n"));
  const Outcome json = gpurun({"status", "--topology", "--json"}, on(test::dgx_h100(), "topo_dgx_h100_gpu5_busy.json"));
  EXPECT_EQ(json.exit_code, 125);
}

TEST_F(TopologyTest, StatusTopologyWithoutLinksSaysSo) {
  const Outcome status = gpurun({"status", "--topology"}, fakes("topo_dgx_a100.json"));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("GPU0  X     ?     ?     ?     ?     ?     ?     ?     -     -\n"));
  EXPECT_THAT(status.out, HasSubstr("links unknown"));
}

}  // namespace
}  // namespace gpurun::testing
