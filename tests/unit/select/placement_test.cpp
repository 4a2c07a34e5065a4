// select/placement: which of several equally free GPU sets pick() takes, and the container's
// CPUs and memory nodes, on the hosts of issue 14 (as select sees them: assessed GPUs).
#include "gpurun/select/placement.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpurun/gpu/topology.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

struct Place {
  int node;
  int socket;
  const char* cpus;
};

// Assessed GPUs of a host, all free at score 0 unless `busy` (assessed busy, score 50).
std::vector<GpuAssessment> host(const std::vector<Place>& places, const std::vector<int>& busy = {}) {
  std::vector<GpuAssessment> assessed;
  for (std::size_t i = 0; i < places.size(); ++i) {
    GpuAssessment a;
    a.gpu = test::make_gpu(static_cast<int>(i), 4, 81920, 0);
    a.gpu.numa_node = places[i].node;
    a.gpu.socket = places[i].socket;
    a.gpu.local_cpus = places[i].cpus;
    a.free = std::find(busy.begin(), busy.end(), static_cast<int>(i)) == busy.end();
    a.score = a.free ? 0.0 : 50.0;
    if (!a.free) a.reasons.emplace_back("1 compute process (pid 1)");
    assessed.push_back(a);
  }
  return assessed;
}

std::vector<GpuAssessment> dgx_a100(const std::vector<int>& busy = {}) {
  const char* n3 = "48-63,176-191";
  const char* n1 = "16-31,144-159";
  const char* n7 = "112-127,240-255";
  const char* n5 = "80-95,208-223";
  return host({{3, 0, n3}, {3, 0, n3}, {1, 0, n1}, {1, 0, n1}, {7, 1, n7}, {7, 1, n7}, {5, 1, n5}, {5, 1, n5}}, busy);
}

std::vector<GpuAssessment> dgx_h100(const std::vector<int>& busy = {}) {
  const char* n0 = "0-55,112-167";
  const char* n1 = "56-111,168-223";
  return host({{0, 0, n0}, {0, 0, n0}, {0, 0, n0}, {0, 0, n0}, {1, 1, n1}, {1, 1, n1}, {1, 1, n1}, {1, 1, n1}}, busy);
}

// The DGX-1's hybrid cube mesh: GPUs 0-3 on node 0, 4-7 on node 1.
std::vector<GpuAssessment> dgx1(const std::vector<int>& busy = {}) {
  const char* n0 = "0-11,24-35";
  const char* n1 = "12-23,36-47";
  return host({{0, 0, n0}, {0, 0, n0}, {0, 0, n0}, {0, 0, n0}, {1, 1, n1}, {1, 1, n1}, {1, 1, n1}, {1, 1, n1}}, busy);
}

std::vector<GpuLink> links_of(const std::string& capture) {
  return parse_topo_matrix(test::read_file(std::string(GPURUN_TEST_DATA_DIR) + "/topology/" + capture));
}

// pick() with these links, counting how often it asks for them.
struct Picker {
  std::vector<GpuLink> links;
  int asked = 0;
  std::string operator()(const std::vector<GpuAssessment>& assessed, int count) {
    PlacementHints hints;
    hints.links = [this] {
      ++asked;
      return links;
    };
    std::string out;
    for (const auto& a : pick(assessed, count, false, hints).gpus_or_throw())
      out += (out.empty() ? "" : ",") + std::to_string(a.gpu.index);
    return out;
  }
};

TEST(Placement, DgxH100TakesTwoFromTheSocketAlreadyInUse) {
  Picker picker{links_of("dgx_h100.txt")};
  EXPECT_EQ(picker(dgx_h100({5}), 2), "4,6") << "node 0's four GPUs stay whole for a larger job";
  EXPECT_EQ(picker(dgx_h100({5}), 4), "0,1,2,3") << "four fit only on node 0";
  EXPECT_EQ(picker(dgx_h100({5}), 3), "4,6,7");
  EXPECT_EQ(picker(dgx_h100(), 2), "0,1");
}

TEST(Placement, DgxA100KeepsSetsOnOneNodeThenOneSocket) {
  Picker picker{links_of("dgx_a100.txt")};
  EXPECT_EQ(picker(dgx_a100(), 2), "0,1");
  EXPECT_EQ(picker(dgx_a100(), 4), "0,1,2,3") << "nodes 3 and 1 share socket 0";
  EXPECT_EQ(picker(dgx_a100({0}), 1), "1") << "node 3 already has a job: leave node 1's pair whole";
  EXPECT_EQ(picker(dgx_a100({0}), 2), "2,3") << "a pair of one node, in the socket in use";
  EXPECT_EQ(picker(dgx_a100({0}), 3), "1,2,3");
  EXPECT_EQ(picker(dgx_a100({2, 4}), 2), "0,1");
  EXPECT_EQ(picker(dgx_a100({0, 2}), 2), "4,5") << "nodes 3 and 1 have one free each: a whole pair of socket 1";
}

TEST(Placement, Dgx1PrefersTheDoubleNvlinkPair) {
  Picker picker{links_of("dgx1_v100.txt")};
  EXPECT_EQ(picker(dgx1({0}), 2), "1,2") << "1-2 is NV2, 1-3 NV1, 2-3 NV2: the lower pair of the best";
  EXPECT_EQ(picker(dgx1({1}), 2), "0,3");
  EXPECT_EQ(picker(dgx1({0, 1, 2, 3}), 2), "4,7");
}

TEST(Placement, WorkstationBridgesWithoutNumaNodes) {
  std::vector<GpuAssessment> ws = host({{0, 0, "0-31"}, {0, 0, "0-31"}, {0, 0, "0-31"}, {0, 0, "0-31"}});
  for (auto& a : ws) {
    a.gpu.numa_node.reset();
    a.gpu.socket.reset();
  }
  Picker picker{links_of("workstation_nv4.txt")};
  EXPECT_EQ(picker(ws, 2), "0,3") << "the NVLink-bridged pair, not 0,1 over a host bridge";
  ws[3].free = false;
  ws[3].score = 50;
  EXPECT_EQ(picker(ws, 2), "1,2");
}

TEST(Placement, LinksAreAskedOnlyWhenSetsTieOnNumaNodes) {
  Picker picker{links_of("dgx_h100.txt")};
  EXPECT_EQ(picker(dgx_h100(), 1), "0");
  EXPECT_EQ(picker.asked, 0) << "N = 1: no links needed";
  EXPECT_EQ(picker(dgx_h100({0, 1, 2, 3}), 4), "4,5,6,7");
  EXPECT_EQ(picker.asked, 0) << "one set only";
  EXPECT_EQ(picker(dgx_h100(), 2), "0,1");
  EXPECT_EQ(picker.asked, 1);
}

TEST(Placement, ClearlyFreerGpusStillWin) {
  std::vector<GpuAssessment> h = dgx_h100();
  for (int i : {0, 1, 2, 3}) h[static_cast<std::size_t>(i)].score = 5.0;  // free, but busier than node 1's
  Picker picker{links_of("dgx_h100.txt")};
  EXPECT_EQ(picker(h, 2), "4,5");
  h[4].score = 0.5;  // within the margin: equally placed, and then the freest
  EXPECT_EQ(picker(h, 2), "5,6");
}

TEST(Placement, UnknownTopologyKeepsTheRanking) {
  std::vector<GpuAssessment> plain;
  for (int i = 0; i < 4; ++i) {
    GpuAssessment a;
    a.gpu = test::make_gpu(i, 4, 81920, 0);
    a.free = true;
    a.score = i == 2 ? 0.5 : 0.0;
    plain.push_back(a);
  }
  const auto chosen = pick(plain, 3, false).chosen;
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(chosen[2].gpu.index, 3) << "GPU 2 scores 0.5: without topology the ranking alone decides";
  const auto set = choose_gpu_set(ranked(plain), 2, PlacementHints{});
  ASSERT_EQ(set.size(), 2u);
  EXPECT_EQ(set[1].gpu.index, 1);
}

TEST(CpuPlacement, TheUnionOfTheChosenGpusNodes) {
  const auto a100 = dgx_a100();
  const auto place = cpu_placement({a100[0], a100[1], a100[2], a100[3]});
  ASSERT_TRUE(place);
  EXPECT_EQ(place->cpus, "16-31,48-63,144-159,176-191");
  EXPECT_EQ(place->mems, "1,3");
  const auto one = cpu_placement({dgx_h100()[5]});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->cpus, "56-111,168-223");
  EXPECT_EQ(one->mems, "1");
  EXPECT_EQ(cpu_placement({dgx_h100()[0], dgx_h100()[7]})->mems, "0-1");
}

TEST(CpuPlacement, NoneWhenAnyChosenGpuIsUnplaced) {
  auto h = dgx_h100();
  h[1].gpu.numa_node.reset();
  EXPECT_FALSE(cpu_placement({h[0], h[1]}));
  h[0].gpu.local_cpus.clear();
  EXPECT_FALSE(cpu_placement({h[0]}));
  EXPECT_FALSE(cpu_placement({}));
}

}  // namespace
}  // namespace gpurun
