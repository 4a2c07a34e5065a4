// Unit tests for how GPUs are shown: the status table, the watch table and the JSON, exactly.
#include "gpurun/render/views.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::make_gpu;

// Process ids above any pid_max: no such process, so no user or command is shown for them.
constexpr long kGonePid1 = 99999998;
constexpr long kGonePid2 = 99999999;

// Three GPUs: one free, one busy with two processes, one the driver could tell nothing about.
std::vector<GpuAssessment> three_gpus() {
  std::vector<GpuAssessment> list(3);
  list[0].gpu = make_gpu(0, 4, 81920, 0);
  list[0].free = true;
  list[0].score = 0.0;

  list[1].gpu = make_gpu(1, 40960, 81920, 93);
  list[1].gpu.processes = {{"GPU-1", kGonePid1, 20480, {}}, {"GPU-1", kGonePid2, std::nullopt, {}}};
  list[1].score = 71.5;
  list[1].reasons = {"utilization 93% > limit 10%", "2 compute processes (pid 99999998, 99999999)"};

  list[2].gpu = make_gpu(2, std::nullopt, std::nullopt, std::nullopt);
  list[2].gpu.name.clear();
  list[2].score = 100;
  list[2].reasons = {"memory use unknown"};
  list[2].notes = {"utilization unknown"};
  return list;
}

TEST(FormatGpuTable, OneAlignedRowPerGpuUnderTheHeader) {
  EXPECT_EQ(format_gpu_table(three_gpus()),
            "GPU  NAME                     MEMORY USED/TOTAL  UTIL  PROCS  SCORE  STATE\n"
            "  0  NVIDIA A100-SXM4-80GB        4 / 81920 MiB    0%      0    0.0  free\n"
            "  1  NVIDIA A100-SXM4-80GB    40960 / 81920 MiB   93%      2   71.5  busy: utilization 93% > limit 10%; "
            "2 compute processes (pid 99999998, 99999999)\n"
            "  2  ?                                ? / ? MiB     ?      0  100.0  busy: memory use unknown "
            "(utilization unknown)\n");
}

TEST(FormatGpuTable, TheNameColumnIsAtLeastFourWide) {
  std::vector<GpuAssessment> one(1);
  one[0].gpu = make_gpu(5, 1, 2, 3);
  one[0].gpu.name = "X";
  one[0].free = true;
  EXPECT_EQ(format_gpu_table(one),
            "GPU  NAME    MEMORY USED/TOTAL  UTIL  PROCS  SCORE  STATE\n"
            "  5  X               1 / 2 MiB    3%      0    0.0  free\n");
}

TEST(FormatWatchTable, ShowsBarsAndWhoHoldsEachGpu) {
  GpuContainer alice;
  alice.name = "alice_gpu1_1a2b3c4d";
  alice.user = "alice";
  alice.devices = {"GPU-1"};  // by UUID
  GpuContainer elsewhere;
  elsewhere.name = "on_a_gpu_not_listed";
  elsewhere.devices = {"7"};
  EXPECT_EQ(format_watch_table(three_gpus(), {alice, elsewhere}, 200),
            "GPU  NAME                   UTILIZATION                   MEMORY  HELD BY\n"
            "  0  NVIDIA A100-SXM4-80GB  [..........]   0%      4 / 81920 MiB  -\n"
            "  1  NVIDIA A100-SXM4-80GB  [#########.]  93%  40960 / 81920 MiB  container alice_gpu1_1a2b3c4d (alice), "
            "process pid 99999998, process pid 99999999\n"
            "  2  ?                      [          ]    ?          ? / ? MiB  busy\n");
  // In 80 columns the vendor's name goes, then who holds it is cut.
  EXPECT_EQ(format_watch_table(three_gpus(), {alice, elsewhere}, 80),
            "GPU  NAME            UTILIZATION                   MEMORY  HELD BY\n"
            "  0  A100-SXM4-80GB  [..........]   0%      4 / 81920 MiB  -\n"
            "  1  A100-SXM4-80GB  [#########.]  93%  40960 / 81920 MiB  container alice_gpu1…\n"
            "  2  ?               [          ]    ?          ? / ? MiB  busy\n");
}

TEST(GpuJson, UnknownValuesAreNullNeverZero) {
  const auto gpus = three_gpus();
  EXPECT_EQ(gpu_json(gpus[1]).dump(),
            R"j({"index":1,"uuid":"GPU-1","name":"NVIDIA A100-SXM4-80GB","memory_used_mib":40960.0,)j"
            R"j("memory_total_mib":81920.0,"utilization_percent":93.0,"mig_enabled":false,)j"
            R"j("processes":[{"pid":99999998,"used_memory_mib":20480.0,"user":null},)j"
            R"j({"pid":99999999,"used_memory_mib":null,"user":null}],)j"
            R"j("score":71.5,"free":false,"state":"busy: 2 procs 93%","users":[],"holders":[],)j"
            R"j("reasons":["utilization 93% > limit 10%",)j"
            R"j("2 compute processes (pid 99999998, 99999999)"],"notes":[]})j");
  EXPECT_EQ(gpu_json(gpus[2]).dump(),
            R"j({"index":2,"uuid":"GPU-2","name":"","memory_used_mib":null,"memory_total_mib":null,)j"
            R"j("utilization_percent":null,"mig_enabled":false,"processes":[],"score":100.0,"free":false,)j"
            R"j("state":"busy","users":[],"holders":[],)j"
            R"j("reasons":["memory use unknown"],"notes":["utilization unknown"]})j");
}

TEST(StatusJson, ListsEveryGpuInOrder) {
  const auto gpus = three_gpus();
  const auto json = status_json(gpus);
  ASSERT_EQ(json.size(), 1u);
  ASSERT_EQ(json.at("gpus").size(), 3u);
  for (std::size_t i = 0; i < gpus.size(); ++i) EXPECT_EQ(json.at("gpus").at(i), gpu_json(gpus[i]));
  EXPECT_EQ(status_json({}).dump(), R"j({"gpus":[]})j");
}

TEST(PickJson, HasTheChosenIndicesAndTheirGpus) {
  const auto gpus = three_gpus();
  const std::vector<GpuAssessment> chosen{gpus[0], gpus[2]};
  const auto json = pick_json(chosen);
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json.at("indices").dump(), "[0,2]");
  EXPECT_EQ(json.at("gpus"), status_json(chosen).at("gpus"));
}

TEST(IndexList, JoinsIndicesWithCommas) {
  const auto gpus = three_gpus();
  EXPECT_EQ(index_list(gpus), "0,1,2");
  EXPECT_EQ(index_list({gpus[2]}), "2");
  EXPECT_EQ(index_list({}), "");
}

}  // namespace
}  // namespace gpurun
