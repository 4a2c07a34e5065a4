// Unit tests for the service's store (gpurun/service/run_store.hpp), on real SQLite files in a
// scratch directory.
#include "gpurun/service/run_store.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpurun/util/error.hpp"
#include "store_schema.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const WallTime kT0 = WallTime{} + std::chrono::hours(24 * 365 * 56);

RunRecord record(std::int64_t id, const std::string& user, std::chrono::seconds start) {
  RunRecord run;
  run.id = id;
  run.key = "container:c" + std::to_string(id);
  run.name = "job-" + std::to_string(id);
  run.user = user;
  run.container_id = "c" + std::to_string(id);
  run.image = "me/torch:1";
  run.command = "python train.py --name 'it''s'";
  run.gpus = {0, 3};
  run.start = kT0 + start;
  run.last_seen = run.start + 10s;
  run.gpu_seconds = 20;
  run.busy_gpu_seconds = 14.5;
  run.idle_seconds = 2;
  run.max_memory_mib = 4096;
  return run;
}

std::vector<std::int64_t> ids(const std::vector<RunRecord>& runs) {
  std::vector<std::int64_t> out;
  for (const RunRecord& r : runs) out.push_back(r.id);
  return out;
}

class RunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpurun-store-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return dir_ + "/gpurund.db"; }
  std::string dir_;
};

TEST_F(RunStoreTest, OpenRunsComeBackAsTheyWereSavedAfterAReopen) {
  {
    RunStore store(path());
    EXPECT_EQ(store.last_id(), 0);
    store.save({record(1, "alice", 0s), record(2, "bob", 5s)}, {});
  }
  RunStore again(path());
  EXPECT_EQ(again.last_id(), 2);
  const std::vector<RunRecord> open = again.open_runs();
  ASSERT_EQ(open.size(), 2u);
  const RunRecord& a = open[0];
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.key, "container:c1");
  EXPECT_EQ(a.command, "python train.py --name 'it''s'");
  EXPECT_THAT(a.gpus, ElementsAre(0, 3));
  EXPECT_EQ(a.start, kT0);
  EXPECT_EQ(a.last_seen, kT0 + 10s);
  EXPECT_FALSE(a.end);
  EXPECT_DOUBLE_EQ(a.gpu_seconds, 20);
  EXPECT_DOUBLE_EQ(a.busy_gpu_seconds, 14.5);
  EXPECT_DOUBLE_EQ(a.idle_seconds, 2);
  EXPECT_DOUBLE_EQ(a.max_memory_mib, 4096);
}

// A store an older gpurund wrote has no unmeasured_gpu_seconds: its runs read with none, and the
// first write adds the column (not the open: a store on a full disk must still open).
TEST_F(RunStoreTest, AnOlderStoreReadsAndGainsTheUnmeasuredColumnAtItsFirstWrite) {
  {
    SQLite::Database old(path(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    old.exec(R"(CREATE TABLE runs (id INTEGER PRIMARY KEY, key TEXT NOT NULL, name TEXT NOT NULL,
      user TEXT NOT NULL, container_id TEXT NOT NULL, image TEXT NOT NULL, command TEXT NOT NULL,
      gpus TEXT NOT NULL, start_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL, end_ms INTEGER,
      gpu_seconds REAL NOT NULL, busy_gpu_seconds REAL NOT NULL, idle_seconds REAL NOT NULL,
      max_memory_mib REAL NOT NULL, ended_by TEXT NOT NULL))");
    old.exec(
        "INSERT INTO runs VALUES (1, 'container:c1', 'job-1', 'alice', 'c1', 'img', 'python', '0', "
        "1000, 2000, NULL, 20, 10, 0, 0, '')");
  }
  RunStore store(path());
  ASSERT_EQ(store.open_runs().size(), 1U);
  EXPECT_DOUBLE_EQ(store.open_runs()[0].unmeasured_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(*store.open_runs()[0].efficiency(), 50.0);
  RunRecord mig = record(2, "carol", 0s);
  mig.unmeasured_gpu_seconds = 20;
  store.save({mig}, {});
  const std::vector<RunRecord> open = store.open_runs();
  ASSERT_EQ(open.size(), 2U);
  EXPECT_DOUBLE_EQ(open[0].unmeasured_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(open[1].unmeasured_gpu_seconds, 20);
  EXPECT_EQ(open[1].efficiency(), std::nullopt);
  RunStore again(path());  // a fresh one, and a store made new, have it too
  EXPECT_DOUBLE_EQ(again.open_runs()[1].unmeasured_gpu_seconds, 20);
}

TEST_F(RunStoreTest, TheRulesInForceAreKeptWithSinceWhenAcrossAReopen) {
  const WallTime t0 = WallTime{} + std::chrono::hours(500'000);
  {
    RunStore store(path());
    EXPECT_EQ(store.rules_in_force("idle 1h 2h", t0), std::nullopt);  // none kept: new from t0
    EXPECT_EQ(store.rules_in_force("idle 1h 2h", t0 + std::chrono::hours(1)), t0);
  }
  RunStore store(path());
  EXPECT_EQ(store.rules_in_force("idle 1h 2h", t0 + std::chrono::hours(2)), t0);
  EXPECT_EQ(store.rules_in_force("idle 1h 3h", t0 + std::chrono::hours(3)), std::nullopt);  // changed
  EXPECT_EQ(store.rules_in_force("idle 1h 3h", t0 + std::chrono::hours(4)), t0 + std::chrono::hours(3));
}

TEST_F(RunStoreTest, SavingARunAgainUpdatesItAndAnEndedOneLeavesTheOpenOnes) {
  RunStore store(path());
  RunRecord run = record(1, "alice", 0s);
  store.save({run}, {});
  run.gpu_seconds = 100;
  run.end = run.last_seen;
  run.ended_by = "gone";
  run.name = "renamed";  // what the engine said later (a placeholder before, or a docker rename)
  run.image = "me/torch:2";
  run.command = "python other.py";
  store.save({}, {run});
  EXPECT_THAT(store.open_runs(), IsEmpty());
  const std::vector<RunRecord> all = store.runs({});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_DOUBLE_EQ(all[0].gpu_seconds, 100);
  EXPECT_EQ(all[0].ended_by, "gone");
  EXPECT_EQ(all[0].end, kT0 + 10s);
  EXPECT_EQ(all[0].name, "renamed");
  EXPECT_EQ(all[0].image, "me/torch:2");
  EXPECT_EQ(all[0].command, "python other.py");
}

TEST_F(RunStoreTest, RunsAreNewestFirstFilteredByUserAndTime) {
  RunStore store(path());
  RunRecord old = record(1, "alice", 0s);
  old.end = old.last_seen;
  store.save({record(2, "bob", 100s), record(3, "alice", 200s)}, {old});
  EXPECT_THAT(ids(store.runs({})), ElementsAre(3, 2, 1));
  EXPECT_THAT(ids(store.runs({.since = std::nullopt, .user = "alice"})), ElementsAre(3, 1));
  EXPECT_THAT(ids(store.runs({.since = kT0 + 50s, .user = ""})), ElementsAre(3, 2));  // 1 ended at 10 s
  EXPECT_THAT(ids(store.runs({.since = std::nullopt, .user = "", .limit = 2})), ElementsAre(3, 2));
}

TEST_F(RunStoreTest, AWindowHoldsTheRunsThatEndedInItOrStillRunWhoeverAsks) {
  RunStore store(path());
  RunRecord old = record(1, "alice", 0s);
  old.end = old.last_seen;  // ended at 10 s
  RunRecord late = record(4, "alice", 60s);
  late.end = kT0 + 300s;  // began before the window, ended in it
  store.save({record(2, "bob", 100s), record(3, "alice", 200s)}, {old, late});
  EXPECT_THAT(ids(store.runs({.since = kT0 + 50s, .user = "alice"})), ElementsAre(3, 4));
  EXPECT_THAT(ids(store.runs({.since = kT0 + 50s, .user = "", .limit = 2})), ElementsAre(3, 2));
  EXPECT_THAT(ids(store.runs({.since = kT0 + 400s, .user = ""})), ElementsAre(3, 2));  // still running
}

// A window is read through the end index, not by reading every run ever stored (a year of a CI
// runner's jobs at every page load).
TEST_F(RunStoreTest, AWindowIsFoundThroughAnIndexNotAScanOfEveryRun) {
  { RunStore store(path()); }
  SQLite::Database db(path(), SQLite::OPEN_READONLY);
  for (const bool one_user : {false, true}) {
    SQLite::Statement plan(db, std::string("EXPLAIN QUERY PLAN ") + runs_query(true, one_user));
    std::string steps;
    while (plan.executeStep()) steps += plan.getColumn(3).getString() + "\n";
    EXPECT_THAT(steps, Not(HasSubstr("SCAN runs"))) << steps;
    EXPECT_THAT(steps, HasSubstr(one_user ? "runs_by_user_end" : "runs_by_end")) << steps;
  }
}

TEST_F(RunStoreTest, AFileThatIsNoDatabaseIsMovedAsideAndRecordingStartsAfresh) {
  std::ofstream(path()) << "this is not a database, but a file of some length that SQLite will refuse to read\n";
  std::string aside;
  RunStore store(path(), &aside);
  EXPECT_THAT(aside, HasSubstr(path() + ".unusable-"));
  EXPECT_TRUE(std::filesystem::exists(aside));
  store.save({record(1, "alice", 0s)}, {});
  EXPECT_EQ(store.last_id(), 1);
}

// A store a newer gpurund wrote (after a downgrade) is refused and left as it is; one with a
// column this gpurund must fill and does not know, where every write would fail, is moved aside.
TEST_F(RunStoreTest, ANewerStoreIsRefusedAndOneItCannotWriteIsMovedAside) {
  {
    RunStore store(path());
    store.save({record(1, "alice", 0s)}, {});
  }
  EXPECT_EQ(SQLite::Database(path()).execAndGet("PRAGMA user_version").getInt(), 1);  // written at the first save
  SQLite::Database(path(), SQLite::OPEN_READWRITE).exec("PRAGMA user_version = 7");
  const test::CaughtError caught = test::caught_error([&] { RunStore store(path()); });
  EXPECT_THAT(caught.message,
              HasSubstr(path() + " was written by a newer gpurund (store version 7; this one writes 1)"));
  EXPECT_TRUE(std::filesystem::exists(path()));

  std::filesystem::remove(path());
  {
    RunStore store(path());
    store.save({record(1, "alice", 0s)}, {});
  }
  SQLite::Database(path(), SQLite::OPEN_READWRITE)
      .exec(
          "DROP TABLE runs; "
          "CREATE TABLE runs (id INTEGER PRIMARY KEY, key TEXT NOT NULL, name TEXT NOT NULL, user TEXT NOT NULL, "
          "container_id TEXT NOT NULL, image TEXT NOT NULL, command TEXT NOT NULL, gpus TEXT NOT NULL, "
          "start_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL, end_ms INTEGER, gpu_seconds REAL NOT NULL, "
          "busy_gpu_seconds REAL NOT NULL, idle_seconds REAL NOT NULL, max_memory_mib REAL NOT NULL, "
          "ended_by TEXT NOT NULL, unmeasured_gpu_seconds REAL NOT NULL DEFAULT 0, cpu_seconds REAL NOT NULL)");
  std::string aside;
  RunStore store(path(), &aside);
  EXPECT_THAT(aside, HasSubstr(".unusable-"));
  store.save({record(1, "alice", 0s)}, {});
  EXPECT_EQ(store.last_id(), 1);
}

TEST_F(RunStoreTest, ADatabaseThatCannotBeOpenedForTheMomentIsLeftAsItIs) {
  {
    RunStore store(path());
    store.save({record(1, "alice", 0s)}, {});
  }
  {
    // Another program holds it (as a full disk or an I/O error would stop it): it was moved
    // aside, and every run recorded with it was gone from history.
    SQLite::Database holder(path(), SQLite::OPEN_READWRITE);
    holder.exec("PRAGMA locking_mode=EXCLUSIVE");
    holder.exec("BEGIN EXCLUSIVE");
    const test::CaughtError caught = test::caught_error([&] { RunStore store(path()); });
    EXPECT_THAT(caught.message, HasSubstr("cannot open " + path() + ": database is locked. The file is left as it is"));
    holder.exec("COMMIT");
  }
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path()).parent_path()))
    EXPECT_THAT(entry.path().string(), Not(HasSubstr(".unusable-")));
  std::string aside;
  RunStore store(path(), &aside);
  EXPECT_EQ(aside, "");
  EXPECT_EQ(store.last_id(), 1);
}

TEST_F(RunStoreTest, ADirectoryThatCannotHoldTheDatabaseIsAnError) {
  EXPECT_THROW(RunStore(dir_ + "/missing/dir/gpurund.db"), Error);
}

TEST_F(RunStoreTest, FindNamesARunByIdNameOrContainerPrefixTheNewestFirst) {
  RunStore store(path());
  RunRecord older = record(1, "alice", 0s);
  RunRecord newer = record(2, "bob", 50s);
  newer.name = older.name;  // a name used again: the newer run is meant
  newer.container_id = "abcdef123456";
  store.save({older, newer}, {});
  EXPECT_EQ(store.find("1")->id, 1);
  EXPECT_EQ(store.find("job-1")->id, 2);
  EXPECT_EQ(store.find("abcd")->id, 2);
  EXPECT_FALSE(store.find("abc"));  // too short a prefix to name anything
  EXPECT_FALSE(store.find("nothing"));
}

// From run 1000 on an id is also a prefix of container IDs: a newer container whose ID begins
// with its digits is not the run asked for.
TEST_F(RunStoreTest, AnIdNamesItsRunBeforeANewerContainerWhoseIdBeginsWithIt) {
  RunStore store(path());
  RunRecord asked = record(1234, "alice", 0s);
  RunRecord other = record(2000, "bob", 50s);
  other.container_id = "1234abcdef56";
  store.save({asked, other}, {});
  EXPECT_EQ(store.find("1234")->id, 1234);
  EXPECT_EQ(store.find("1234a")->id, 2000);
}

TEST_F(RunStoreTest, GpuSamplesAndMinutesAreKeptAndPrunedInBatches) {
  RunStore store(path());
  std::vector<GpuSampleRow> samples;
  for (int t = 0; t < 10; ++t)
    for (int gpu = 0; gpu < 2; ++gpu)
      samples.push_back({.when = kT0 + std::chrono::minutes(t),
                         .gpu = gpu,
                         .utilization_percent = gpu == 0 ? std::optional(37.5) : std::nullopt,
                         .memory_used_mib = 1024.4,
                         .holders = gpu});
  GpuMinute minute{.minute = 0,
                   .gpu = 1,
                   .samples = 6,
                   .utilization_samples = 6,
                   .utilization_sum = 300.5,
                   .utilization_max = 90,
                   .idle_samples = 1,
                   .memory_max_mib = 2048,
                   .holders_max = 2};
  std::vector<GpuMinute> minutes;
  for (std::int64_t m = 0; m < 10; ++m) {
    minute.minute = std::chrono::duration_cast<std::chrono::minutes>(kT0.time_since_epoch()).count() + m;
    minutes.push_back(minute);
  }
  store.save({}, {}, samples, minutes);
  // A minute written again as it grows replaces the row.
  minutes.back().samples = 7;
  store.save({}, {}, {}, {minutes.back()});

  const std::vector<GpuSampleRow> kept = store.gpu_samples(kT0);
  ASSERT_EQ(kept.size(), 20U);
  EXPECT_EQ(kept[0].utilization_percent, 37.5);
  EXPECT_EQ(kept[1].utilization_percent, std::nullopt);
  EXPECT_EQ(kept[1].memory_used_mib, 1024);
  EXPECT_EQ(kept[1].holders, 1);
  const std::vector<GpuMinute> rows = store.gpu_minutes(kT0);
  ASSERT_EQ(rows.size(), 10U);
  EXPECT_DOUBLE_EQ(rows[0].utilization_sum, 300.5);
  EXPECT_DOUBLE_EQ(*rows[0].utilization_mean(), 300.5 / 6);
  EXPECT_EQ(rows.back().samples, 7);
  const std::optional<GpuMinute> one = store.gpu_minute(rows.back().minute, rows.back().gpu);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->samples, 7);
  EXPECT_DOUBLE_EQ(one->utilization_sum, rows.back().utilization_sum);
  EXPECT_FALSE(store.gpu_minute(rows.back().minute + 1, rows.back().gpu));

  // Older than 5 minutes: at most 2 times (4 sample rows) and 2 minutes per call.
  EXPECT_EQ(store.prune(kT0 + 5min, kT0 + 5min, 2), 4U + 2U);
  EXPECT_EQ(store.gpu_samples(kT0).size(), 16U);
  EXPECT_EQ(store.prune(kT0 + 5min, kT0 + 5min, 100), 6U + 3U);
  EXPECT_EQ(store.gpu_samples(kT0).front().when, kT0 + 5min);
  EXPECT_EQ(store.gpu_minutes(kT0).size(), 5U);
  EXPECT_EQ(store.prune(kT0 + 5min, kT0 + 5min, 100), 0U);
}

}  // namespace
}  // namespace gpurun
