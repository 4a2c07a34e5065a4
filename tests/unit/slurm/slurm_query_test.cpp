// Unit tests for the parsing of sinfo and squeue output (recorded from Slurm 22.05).
#include "gpurun/slurm/slurm_query.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::caught_error;
using ::testing::HasSubstr;

TEST(IndexRanges, SlurmLists) {
  EXPECT_EQ(parse_index_ranges("0,2-3"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parse_index_ranges("5"), (std::vector<int>{5}));
  EXPECT_TRUE(parse_index_ranges("").empty());
  EXPECT_TRUE(parse_index_ranges("GPU-a84bba07").empty());
  EXPECT_TRUE(parse_index_ranges("3-1").empty());
  EXPECT_TRUE(parse_index_ranges("1,x").empty());
}

TEST(GresGpuCount, Forms) {
  EXPECT_EQ(gres_gpu_count("gpu:4"), 4);
  EXPECT_EQ(gres_gpu_count("gpu:a100:2(S:0-1)"), 2);
  EXPECT_EQ(gres_gpu_count("gpu:h100:3(IDX:0,2-3),shard:8"), 3);
  EXPECT_EQ(gres_gpu_count("gpu:a100:2,gpu:v100:1"), 3);
  EXPECT_EQ(gres_gpu_count("(null)"), 0);
  EXPECT_EQ(gres_gpu_count(""), 0);
}

TEST(Partitions, DefaultAndSmallestGpuNode) {
  const auto partitions = parse_partitions("gpu*|64|gpu:4\ncpu|128|(null)\nbig|96|gpu:8\nbig|64|gpu:4(S:0)\n");
  ASSERT_EQ(partitions.size(), 3U);
  const SlurmPartition gpu = choose_partition(partitions, "");
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_EQ(gpu.cpus_per_node, 64);
  EXPECT_EQ(gpu.gpus_per_node, 4);
  const SlurmPartition big = choose_partition(partitions, "big");
  EXPECT_EQ(big.cpus_per_node, 64);
  EXPECT_EQ(big.gpus_per_node, 4);
  EXPECT_EQ(big.most_gpus_per_node, 8);  // a job of 8 fits its larger nodes
  EXPECT_EQ(gpu.most_gpus_per_node, 4);
  EXPECT_THAT(caught_error([&] { choose_partition(partitions, "cpu"); }).message, HasSubstr("has no GPUs"));
  EXPECT_THAT(caught_error([&] { choose_partition(partitions, "nope"); }).message,
              HasSubstr("no such partition (the cluster has: gpu, cpu, big)"));
  EXPECT_THAT(caught_error([&] { choose_partition(parse_partitions("a|8|gpu:1\n"), ""); }).message,
              HasSubstr("no default partition"));
}

TEST(Nodes, RecordedSinfo) {
  const auto nodes = parse_nodes(
      "localhost           |gpu*                |mixed               |40/24/0/64          |gpu:4               "
      "|gpu:3(IDX:0-2)      |\n");
  ASSERT_EQ(nodes.size(), 1U);
  EXPECT_EQ(nodes[0].name, "localhost");
  EXPECT_EQ(nodes[0].partition, "gpu*");
  EXPECT_EQ(nodes[0].state, "mixed");
  EXPECT_EQ(nodes[0].cpus_allocated, 40);
  EXPECT_EQ(nodes[0].cpus_total, 64);
  EXPECT_EQ(nodes[0].gpus_total, 4);
  EXPECT_EQ(nodes[0].gpus_allocated, 3);
}

TEST(Jobs, OnlyGpuJobs) {
  const auto jobs = parse_jobs(
      "4|root|PENDING|0:00|UNLIMITED|gres:gpu:2|N/A|N/A|1||Resources|N/A|*|1|c|\n"
      "2|ada|RUNNING|1:01|4:00:00|gres/gpu:a100:2|N/A|N/A|1|node7|None|N/A|*|1|a|b|c|\n"  // a name of "a|b|c"
      "5|bob|RUNNING|0:10|UNLIMITED|N/A|N/A|N/A|1|node1|None|N/A|*|1|cpu-only|\n"
      "6|cy|RUNNING|0:10|UNLIMITED|N/A|gres:gpu:3|N/A|1|node1|None|N/A|*|1|whole-job|\n"     // --gpus=3
      "7|di|RUNNING|0:10|UNLIMITED|N/A|N/A|gres:gpu:1|4|node2|None|N/A|*|1|per-task|\n"      // -n 4 --gpus-per-task=1
      "8|ed|RUNNING|0:10|UNLIMITED|N/A|N/A|N/A|1|node3|None|gres:gpu:2|2|1|per-socket|\n");  // 2 per socket, 2 sockets
  ASSERT_EQ(jobs.size(), 5U);
  EXPECT_EQ(jobs[4].name, "per-socket");
  EXPECT_EQ(jobs[4].gpus, 4);
  EXPECT_EQ(jobs[2].name, "whole-job");
  EXPECT_EQ(jobs[2].gpus, 3);  // squeue's %b said N/A: the job was not listed
  EXPECT_EQ(jobs[2].gres, "gres:gpu:3");
  EXPECT_EQ(jobs[3].gpus, 4);
  EXPECT_EQ(jobs[3].nodes, "node2");
  EXPECT_EQ(jobs[0].name, "c");
  EXPECT_EQ(jobs[1].name, "a|b|c");
  EXPECT_EQ(jobs[0].id, "4");
  EXPECT_EQ(jobs[0].state, "PENDING");
  EXPECT_EQ(jobs[0].reason, "Resources");
  EXPECT_EQ(jobs[0].gpus, 2);
  EXPECT_EQ(jobs[1].user, "ada");
  EXPECT_EQ(jobs[1].time_limit, "4:00:00");
  EXPECT_EQ(jobs[1].nodes, "node7");
  EXPECT_EQ(jobs[1].gpus, 2);
}

}  // namespace
}  // namespace gpurun
