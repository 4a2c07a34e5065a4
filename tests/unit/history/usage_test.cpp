// Unit tests for the runs as JSON and their sums (gpurun/history/run_json.hpp, usage.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpurun/history/run_json.hpp"
#include "gpurun/history/time_text.hpp"
#include "gpurun/history/usage.hpp"
#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;

const WallTime kT0 = WallTime{} + std::chrono::seconds(1'795'953'600);

// `runs` summed per `by`, as the service sums them.
std::vector<UsageRow> usage(const std::vector<RunRecord>& runs, UsageKey by) {
  UsageTally tally(by);
  for (const RunRecord& run : runs) tally.add(run);
  return tally.rows();
}

RunRecord run_of(std::int64_t id, const std::string& user, const std::string& image, std::vector<int> gpus,
                 double gpu_seconds, double busy, double idle) {
  RunRecord run;
  run.id = id;
  run.name = "run-" + std::to_string(id);
  run.user = user;
  run.image = image;
  run.gpus = std::move(gpus);
  run.start = kT0;
  run.last_seen = kT0 + 1h;
  run.gpu_seconds = gpu_seconds;
  run.busy_gpu_seconds = busy;
  run.idle_seconds = idle;
  return run;
}

TEST(RunJsonTest, HasTheIssuesFieldsAndReadsBack) {
  RunRecord run = run_of(7, "alice", "", {0, 3}, 7200, 1800, 600);
  run.command = "python train.py";
  run.end = kT0 + 1h;
  run.ended_by = "gone";
  const auto json = run_json(run);
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  EXPECT_THAT(keys, ::testing::ElementsAre("id", "name", "user", "container", "image", "command", "gpus", "start",
                                           "end", "gpu_seconds", "busy_gpu_seconds", "unmeasured_gpu_seconds",
                                           "efficiency", "idle_seconds", "max_memory_mib", "ended_by"));
  EXPECT_TRUE(json["container"].is_null());  // a process
  EXPECT_EQ(json["end"], "2026-11-29T13:00:00Z");
  EXPECT_DOUBLE_EQ(json["efficiency"].get<double>(), 25.0);
  const RunRecord back = run_from_json(json);
  EXPECT_EQ(back.id, 7);
  EXPECT_EQ(back.user, "alice");
  EXPECT_EQ(back.gpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(back.start, kT0);
  EXPECT_EQ(back.end, kT0 + 1h);
  EXPECT_DOUBLE_EQ(back.busy_gpu_seconds, 1800);
  EXPECT_EQ(back.ended_by, "gone");
  EXPECT_THROW(run_from_json(nlohmann::ordered_json{{"name", "no id"}}), Error);
  EXPECT_THROW(runs_from_json(nlohmann::ordered_json::object()), Error);
}

TEST(RunJsonTest, TheHistoryTablesRowsReadBackAndAnotherShapeIsAnError) {
  RunRecord ended = run_of(7, "alice", "", {0, 3}, 7200, 1800, 600);
  ended.name = "train";
  ended.command = "python train.py --token=x";  // not in the table: not sent
  ended.end = kT0 + 1h;
  ended.ended_by = "idle_policy";
  const RunRecord running = run_of(8, "", "pid 42", {}, 0, 0, 0);
  const nlohmann::json table = runs_table_json({ended, running});
  EXPECT_EQ(table.dump().find("token"), std::string::npos);
  const std::vector<RunRecord> back = runs_from_table_json(nlohmann::json::parse(table.dump()));
  ASSERT_EQ(back.size(), 2U);
  EXPECT_EQ(back[0].id, 7);
  EXPECT_EQ(back[0].name, "train");
  EXPECT_EQ(back[0].user, "alice");
  EXPECT_EQ(back[0].gpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(back[0].start, kT0);
  EXPECT_EQ(back[0].end, kT0 + 1h);
  EXPECT_DOUBLE_EQ(back[0].gpu_seconds, 7200);
  EXPECT_DOUBLE_EQ(back[0].busy_gpu_seconds, 1800);
  EXPECT_DOUBLE_EQ(back[0].idle_seconds, 600);
  EXPECT_EQ(back[0].ended_by, "idle_policy");
  EXPECT_EQ(back[1].end, std::nullopt);  // still running
  EXPECT_EQ(back[1].efficiency(), std::nullopt);
  nlohmann::json other = table;
  other["columns"][0] = "ID";
  EXPECT_THROW(runs_from_table_json(other), Error);
  other = table;
  other["rows"][0][4] = "2026-11-29T12:00:00Z";
  EXPECT_THROW(runs_from_table_json(other), Error);
  EXPECT_THROW(runs_from_table_json(nlohmann::json::array()), Error);
}

// A run on a MIG instance (NVML gives no utilization there): its GPU-hours count, but no
// efficiency is made of time nobody measured, rather than 0 % and advice to mend the job. The
// history table carries it, and a table of an older service (without the column) still reads.
TEST(RunJsonTest, TimeWithUnknownUtilizationIsNoPartOfTheEfficiency) {
  RunRecord mig = run_of(9, "carol", "", {1}, 3600, 0, 0);
  mig.unmeasured_gpu_seconds = 3600;
  EXPECT_EQ(mig.efficiency(), std::nullopt);
  RunRecord half = run_of(10, "carol", "", {1}, 3600, 900, 0);
  half.unmeasured_gpu_seconds = 1800;
  EXPECT_DOUBLE_EQ(*half.efficiency(), 50.0);  // 900 busy of the 1800 measured
  EXPECT_TRUE(run_json(mig)["efficiency"].is_null());
  EXPECT_DOUBLE_EQ(run_from_json(run_json(half)).unmeasured_gpu_seconds, 1800);
  const nlohmann::json table = runs_table_json({half});
  EXPECT_DOUBLE_EQ(runs_from_table_json(table)[0].unmeasured_gpu_seconds, 1800);
  nlohmann::json older = table;  // an older service's table: ten columns
  older["columns"].erase(older["columns"].size() - 1);
  older["rows"][0].erase(older["rows"][0].size() - 1);
  const std::vector<RunRecord> read = runs_from_table_json(older);
  ASSERT_EQ(read.size(), 1U);
  EXPECT_DOUBLE_EQ(read[0].unmeasured_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(read[0].busy_gpu_seconds, 900);
  nlohmann::json newer = table;  // a newer service's: a column this one does not know, first
  newer["columns"].insert(newer["columns"].begin(), "energy_joules");
  newer["rows"][0].insert(newer["rows"][0].begin(), 1.5e6);
  ASSERT_EQ(runs_from_table_json(newer).size(), 1U);
  EXPECT_DOUBLE_EQ(runs_from_table_json(newer)[0].unmeasured_gpu_seconds, 1800);
  EXPECT_EQ(runs_from_table_json(newer)[0].id, 10);
  const std::vector<UsageRow> rows = usage({mig, half}, UsageKey::user);
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_DOUBLE_EQ(rows[0].unmeasured_gpu_hours, 1.5);
  EXPECT_DOUBLE_EQ(*rows[0].efficiency(), 100.0 * 0.25 / 0.5);  // 0.25 busy hours of the 0.5 measured
  EXPECT_DOUBLE_EQ(usage_from_json(usage_json(rows))[0].unmeasured_gpu_hours, 1.5);
}

TEST(UsageTest, SumsPerUserWithIdleTimesTheGpus) {
  const std::vector<RunRecord> runs{run_of(1, "alice", "a", {0, 1}, 7200, 3600, 1800),
                                    run_of(2, "bob", "b", {2}, 3600, 3600, 0),
                                    run_of(3, "alice", "b", {3}, 3600, 0, 3600)};
  const std::vector<UsageRow> rows = usage(runs, UsageKey::user);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "alice");  // the most GPU-hours first
  EXPECT_EQ(rows[0].runs, 2);
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours, 3.0);
  EXPECT_DOUBLE_EQ(rows[0].busy_gpu_hours, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].idle_gpu_hours, 2.0);  // half an hour on 2 GPUs, an hour on 1
  EXPECT_NEAR(*rows[0].efficiency(), 33.333, 0.001);
  EXPECT_EQ(rows[1].key, "bob");
  EXPECT_DOUBLE_EQ(*rows[1].efficiency(), 100.0);
}

// Idle on GPU 2 for a minute, GPU 3 touched for 1.5 s: the run's idle time is not on GPU 3 too.
TEST(UsageTest, IdleGpuHoursNeverExceedGpuHours) {
  const std::vector<RunRecord> runs{run_of(1, "root", "a", {2, 3}, 61.5, 0, 60)};
  for (const UsageKey by : {UsageKey::user, UsageKey::image, UsageKey::gpu})
    for (const UsageRow& row : usage(runs, by)) EXPECT_LE(row.idle_gpu_hours, row.gpu_hours) << row.key;
  EXPECT_DOUBLE_EQ(usage(runs, UsageKey::user)[0].idle_gpu_hours, 61.5 / 3600);
}

// A run that began before the window counts its part inside it: a two-month run was more
// GPU-hours than "the last 30 days" could hold.
TEST(UsageTest, ARunThatBeganBeforeTheWindowCountsItsPartInsideIt) {
  const RunRecord before = run_of(1, "alice", "a", {0, 1}, 7200, 3600, 1800);  // kT0 to kT0 + 1h
  RunRecord within = run_of(2, "alice", "a", {2}, 3600, 3600, 0);
  within.start = kT0 + 50min;
  for (const UsageKey by : {UsageKey::user, UsageKey::gpu}) {
    UsageTally tally(by, kT0 + 45min);
    tally.add(before);  // a quarter of its hour inside
    tally.add(within);  // whole
    double gpu_hours = 0;
    double busy = 0;
    double idle = 0;
    for (const UsageRow& row : tally.rows()) {
      gpu_hours += row.gpu_hours;
      busy += row.busy_gpu_hours;
      idle += row.idle_gpu_hours;
    }
    EXPECT_DOUBLE_EQ(gpu_hours, 0.5 + 1.0) << static_cast<int>(by);
    EXPECT_DOUBLE_EQ(busy, 0.25 + 1.0) << static_cast<int>(by);
    EXPECT_DOUBLE_EQ(idle, 0.25) << static_cast<int>(by);
  }
  UsageTally whole(UsageKey::user);
  whole.add(before);
  EXPECT_DOUBLE_EQ(whole.rows()[0].gpu_hours, 2.0);
  // A run still open that was last seen before the window starts has none of it: not a run of
  // anyone's in it (a row of 0.00 GPU-hours and one run).
  UsageTally later(UsageKey::user, kT0 + 2h);
  later.add(before);
  EXPECT_TRUE(later.rows().empty());
}

TEST(UsageTest, PerGpuSharesARunsHoursAndPerImageGroupsThem) {
  const std::vector<RunRecord> runs{run_of(1, "alice", "a", {0, 1}, 7200, 3600, 1800),
                                    run_of(2, "bob", "a", {1}, 3600, 0, 0)};
  const std::vector<UsageRow> by_gpu = usage(runs, UsageKey::gpu);
  ASSERT_EQ(by_gpu.size(), 2u);
  EXPECT_EQ(by_gpu[0].key, "1");
  EXPECT_EQ(by_gpu[0].runs, 2);
  EXPECT_DOUBLE_EQ(by_gpu[0].gpu_hours, 2.0);
  EXPECT_DOUBLE_EQ(by_gpu[0].busy_gpu_hours, 0.5);
  EXPECT_DOUBLE_EQ(by_gpu[0].idle_gpu_hours, 0.5);
  EXPECT_EQ(by_gpu[1].key, "0");
  EXPECT_DOUBLE_EQ(by_gpu[1].gpu_hours, 1.0);
  const std::vector<UsageRow> by_image = usage(runs, UsageKey::image);
  ASSERT_EQ(by_image.size(), 1u);
  EXPECT_DOUBLE_EQ(by_image[0].gpu_hours, 3.0);
  EXPECT_FALSE(usage({}, UsageKey::user).size());
}

TEST(UsageTest, JsonRoundTripsAndZeroHoursHaveNoEfficiency) {
  std::vector<UsageRow> rows{{.key = "alice", .runs = 2, .gpu_hours = 4, .busy_gpu_hours = 1, .idle_gpu_hours = 2},
                             {.key = "bob", .runs = 1, .gpu_hours = 0, .busy_gpu_hours = 0, .idle_gpu_hours = 0}};
  const auto json = usage_json(rows);
  EXPECT_DOUBLE_EQ(json[0]["efficiency"].get<double>(), 25.0);
  EXPECT_TRUE(json[1]["efficiency"].is_null());
  const auto back = usage_from_json(json);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].key, "alice");
  EXPECT_DOUBLE_EQ(back[0].idle_gpu_hours, 2);
  EXPECT_THROW(usage_from_json(nlohmann::ordered_json::array({1})), Error);
}

}  // namespace
}  // namespace gpurun
