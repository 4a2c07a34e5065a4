// Unit tests for the idle policy's decisions (gpurun/service/idle_enforcer.hpp), on a synthetic
// clock: a warning once per idle streak, a stop only for containers in scope, a report for the
// rest, exempt users left alone, a busy sample ending the streak.
#include "gpurun/service/idle_enforcer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <sstream>

#include "gpurun/service/run_store.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using Kind = PolicyAction::Kind;

const WallTime kStart = WallTime{} + 1'000'000s;

IdlePolicy policy(IdleScope scope = IdleScope::gpurun) {
  return {.below_percent = 5,
          .warn_after = 60s,
          .stop_after = 120s,
          .scope = scope,
          .exempt_users = {"root"},
          .exempt_containers = {"dcgm-exporter", "*/tritonserver:*"},
          .dry_run = false};
}

HolderSample holder(const std::string& key, int gpu, const std::string& container_id, bool gpurun,
                    const std::string& user = "alice") {
  return {.key = key,
          .name = key,
          .user = user,
          .container_id = container_id,
          .image = "",
          .command = "",
          .gpus = {gpu},
          .memory_used_mib = std::nullopt,
          .started_by_gpurun = gpurun,
          .time_limit = std::nullopt,
          .notify_end = false,
          .listed_by_engine = !container_id.empty()};
}

// GPU 0 and 1 at `util` percent, held by the given holders, at kStart + `at`.
MachineSample sample(std::chrono::seconds at, double util, std::vector<HolderSample> holders) {
  return {.when = kStart + at,
          .gpus = {{.index = 0, .utilization_percent = util, .memory_used_mib = 1},
                   {.index = 1, .utilization_percent = util, .memory_used_mib = 1}},
          .holders = std::move(holders)};
}

std::vector<RunRecord> runs_of(const std::vector<HolderSample>& holders) {
  std::vector<RunRecord> runs;
  for (std::size_t i = 0; i < holders.size(); ++i) {
    RunRecord run;
    run.id = static_cast<std::int64_t>(i) + 1;
    run.key = holders[i].key;
    run.start = kStart;
    runs.push_back(run);
  }
  return runs;
}

// The kinds of the actions due at each of the samples at `times`, all idle.
std::vector<std::vector<Kind>> kinds_over(IdleEnforcer& enforcer, const std::vector<HolderSample>& holders,
                                          const std::vector<std::chrono::seconds>& times, double util = 0) {
  std::vector<std::vector<Kind>> all;
  for (const auto at : times) {
    std::vector<Kind> kinds;
    for (const PolicyAction& a : enforcer.observe(sample(at, util, holders), runs_of(holders))) kinds.push_back(a.kind);
    all.push_back(kinds);
  }
  return all;
}

TEST(IdleEnforcer, WarnsOnceAtWarnAfterThenStopsAGpurunContainerAtStopAfter) {
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 30s, 60s, 90s, 120s, 150s}),
            (std::vector<std::vector<Kind>>{{}, {}, {Kind::warn}, {}, {Kind::stop}, {}}));
}

TEST(IdleEnforcer, NeverStopsAProcessOrAnotherContainerUnderScopeGpurunOnlyReportsThem) {
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("process:7:1", 0, "", false), holder("container:c2", 1, "c2", false)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 60s, 120s}),
            (std::vector<std::vector<Kind>>{{}, {Kind::warn, Kind::warn}, {Kind::report, Kind::report}}));
}

TEST(IdleEnforcer, WhatIsNeverStoppedIsWarnedWithoutALimit) {
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("process:7:1", 0, "", false), holder("container:c2", 1, "c2", false),
                                       holder("container:c1", 0, "c1", true)};
  enforcer.observe(sample(0s, 0, held), runs_of(held));
  const auto due = enforcer.observe(sample(60s, 0, held), runs_of(held));
  ASSERT_EQ(due.size(), 3U);
  EXPECT_EQ(due[0].limit, 0s);  // a process
  EXPECT_EQ(due[1].limit, 0s);  // a container gpurun did not start
  EXPECT_EQ(due[2].limit, 120s);
}

TEST(IdleEnforcer, ScopeAllStopsAnyContainerButStillNoProcess) {
  IdleEnforcer enforcer(policy(IdleScope::all));
  const std::vector<HolderSample> held{holder("process:7:1", 0, "", false), holder("container:c2", 1, "c2", false)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 60s, 120s}).back(), (std::vector<Kind>{Kind::report, Kind::stop}));
}

// dcgm-exporter (the page's own Prometheus feed) holds every GPU and never computes; an
// inference server idles between requests: under scope all they are left alone by name or image.
TEST(IdleEnforcer, ContainersTheSiteExemptsByNameOrImageAreLeftAloneUnderScopeAll) {
  IdleEnforcer enforcer(policy(IdleScope::all));
  HolderSample exporter = holder("container:c5", 0, "c5", false);
  exporter.name = "dcgm-exporter";
  HolderSample triton = holder("container:c6", 1, "c6", false);
  triton.image = "nvcr.io/nvidia/tritonserver:24.05-py3";
  HolderSample other = holder("container:c7", 1, "c7", false);
  other.name = "dcgm-exporter-copy";  // a pattern names the whole name
  HolderSample launched = holder("container:c8", 0, "c8", true);
  launched.name = "dcgm-exporter";  // `sudo gpurun --name dcgm-exporter`: gpurun's, never exempt
  EXPECT_EQ(kinds_over(enforcer, {exporter, triton, other, launched}, {0s, 60s, 120s}),
            (std::vector<std::vector<Kind>>{{}, {Kind::warn, Kind::warn}, {Kind::stop, Kind::stop}}));
}

TEST(IdleEnforcer, AContainerSeenOnlyThroughItsProcessesIsNeverStoppedEvenUnderScopeAll) {
  // Its ID may be another engine's, or a scope a user named after someone else's container.
  IdleEnforcer enforcer(policy(IdleScope::all));
  HolderSample inferred = holder("container:1000:c3", 0, "c3", false);
  inferred.listed_by_engine = false;
  enforcer.observe(sample(0s, 0, {inferred}), runs_of({inferred}));
  const std::vector<PolicyAction> warned = enforcer.observe(sample(60s, 0, {inferred}), runs_of({inferred}));
  ASSERT_EQ(warned.size(), 1U);
  EXPECT_EQ(warned[0].limit, 0s) << "its warning promised a stop that never comes";
  EXPECT_EQ(kinds_over(enforcer, {inferred}, {120s}).back(), std::vector<Kind>{Kind::report});
}

// Its warning goes to chats and mail: a process by its program, never its arguments (tokens).
TEST(IdleEnforcer, AProcessIsNamedByItsProgramInWhatIsSentAboutIt) {
  IdleEnforcer enforcer(policy());
  HolderSample process = holder("process:7:1", 0, "", false);
  process.name = process.command = "/usr/bin/python3 train.py --token=SECRET";
  std::vector<PolicyAction> due;
  for (const auto at : {0s, 60s}) due = enforcer.observe(sample(at, 0, {process}), runs_of({process}));
  ASSERT_EQ(due.size(), 1U);
  EXPECT_EQ(due[0].name, "python3");
}

TEST(IdleEnforcer, ABusySampleEndsTheStreakAndTheNextStreakCountsAfresh) {
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 60s}).back(), std::vector<Kind>{Kind::warn});
  EXPECT_EQ(kinds_over(enforcer, held, {90s}, 50).back(), std::vector<Kind>{});  // busy
  // Idle again from 100 s: warned at 160 s, not stopped before 220 s.
  EXPECT_EQ(kinds_over(enforcer, held, {100s, 159s, 160s, 219s, 220s}),
            (std::vector<std::vector<Kind>>{{}, {}, {Kind::warn}, {}, {Kind::stop}}));
}

TEST(IdleEnforcer, AtOrBelowTheThresholdIsIdleAboveItIsNot) {
  IdleEnforcer at_threshold(policy());
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  EXPECT_EQ(kinds_over(at_threshold, held, {0s, 60s}, 5).back(), std::vector<Kind>{Kind::warn});
  IdleEnforcer above(policy());
  EXPECT_EQ(kinds_over(above, held, {0s, 60s}, 5.1).back(), std::vector<Kind>{});
}

// A MIG GPU has no utilization (the driver gives none in MIG mode): its holders are never idle,
// which the log says once a GPU instead of leaving an admin to wonder why nobody is warned.
TEST(IdleEnforcer, AGpuWithoutUtilizationIsNeverIdleAndTheLogSaysSoOnce) {
  std::ostringstream log;
  const auto before = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("captured", std::make_shared<spdlog::sinks::ostream_sink_st>(log)));
  IdleEnforcer enforcer(policy());
  for (const auto at : {0s, 60s, 120s, 180s}) {
    MachineSample unknown = sample(at, 0, {holder("container:c1", 1, "c1", true)});
    unknown.gpus[1].utilization_percent.reset();
    EXPECT_TRUE(enforcer.observe(unknown, runs_of(unknown.holders)).empty());
  }
  spdlog::set_default_logger(before);
  const std::string said = log.str();
  EXPECT_THAT(said,
              ::testing::HasSubstr(
                  "the holders of GPU 1 are not warned or stopped for idling while its utilization is not known"));
  EXPECT_EQ(said.find("GPU 1"), said.rfind("GPU 1"));  // once
}

TEST(IdleEnforcer, IdleTimeCountsFromWhenTheHolderWasSeenIdleNotFromWhenTheGpuWentIdle) {
  IdleEnforcer enforcer(policy());
  enforcer.observe(sample(0s, 0, {}), {});  // GPU 0 idle and nobody's since 0 s
  HolderSample late = holder("container:c1", 0, "c1", true);
  RunRecord run;
  run.id = 1;
  run.key = late.key;
  run.start = kStart + 100s;
  EXPECT_TRUE(enforcer.observe(sample(120s, 0, {late}), {run}).empty());
  EXPECT_TRUE(enforcer.observe(sample(160s, 0, {late}), {run}).empty());
  const auto due = enforcer.observe(sample(180s, 0, {late}), {run});
  ASSERT_EQ(due.size(), 1U);
  EXPECT_EQ(due[0].kind, Kind::warn);
  EXPECT_EQ(due[0].elapsed, 60s);
  EXPECT_EQ(due[0].run_id, 1);
}

TEST(IdleEnforcer, AWallClockSteppedForwardAddsNoIdleTime) {
  // Stepped 3 h forward between two samples 10 s apart: the job was stopped at once, unwarned.
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  const auto steady = std::chrono::steady_clock::time_point{} + 1000h;
  MachineSample first = sample(0s, 0, held);
  first.monotonic = steady;
  EXPECT_TRUE(enforcer.observe(first, runs_of(held)).empty());
  MachineSample stepped = sample(3h + 10s, 0, held);
  stepped.monotonic = steady + 10s;
  EXPECT_TRUE(enforcer.observe(stepped, runs_of(held)).empty());
  MachineSample later = sample(3h + 60s, 0, held);
  later.monotonic = steady + 60s;
  const auto due = enforcer.observe(later, runs_of(held));
  ASSERT_EQ(due.size(), 1U);
  EXPECT_EQ(due[0].kind, Kind::warn);
  EXPECT_EQ(due[0].elapsed, 60s);
}

TEST(IdleEnforcer, AGapNobodyMeasuredStartsTheStreakAfresh) {
  // The GPU source failed for a while: that time was counted idle, and the job stopped unwarned.
  IdleEnforcer enforcer(policy(), 30s);
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 20s, 40s, 100s, 130s, 160s, 220s}),
            (std::vector<std::vector<Kind>>{{}, {}, {}, {}, {}, {Kind::warn}, {}}));
}

// Stopping eight containers one after another (10 s each) made the next sample late: a gap the
// service made, not one in what it measured.
TEST(IdleEnforcer, TheTimeTheServiceSpentActingEndsNoStreak) {
  IdleEnforcer enforcer(policy(), 30s);
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 10s}), (std::vector<std::vector<Kind>>{{}, {}}));
  enforcer.acted_for(80s);
  EXPECT_EQ(kinds_over(enforcer, held, {100s}).back(), std::vector<Kind>{Kind::warn});  // idle 100 s
  EXPECT_EQ(kinds_over(enforcer, held, {200s}).back(), std::vector<Kind>{});            // once: a gap again
}

TEST(IdleEnforcer, AContainerTheEngineDidNotListIsReportedOnceAndStoppedWhenListedAgain) {
  // The report took the stop: listed again, it was left running for the rest of its streak.
  IdleEnforcer enforcer(policy());
  HolderSample held = holder("container:c1", 0, "c1", true);
  EXPECT_TRUE(kinds_over(enforcer, {held}, {0s, 60s}).back() == std::vector<Kind>{Kind::warn});
  // The engine does not answer: seen through its processes alone, its labels are not read, and
  // nothing says gpurun started it.
  HolderSample unlisted = held;
  unlisted.listed_by_engine = false;
  unlisted.started_by_gpurun = false;
  for (const auto at : {120s, 130s}) {
    MachineSample silent = sample(at, 0, {unlisted});
    silent.containers_unknown = true;
    const std::vector<PolicyAction> due = enforcer.observe(silent, runs_of({held}));
    EXPECT_EQ(due.size(), at == 120s ? 1U : 0U);
    if (!due.empty()) {
      EXPECT_EQ(due[0].kind, Kind::report);
    }
  }
  EXPECT_EQ(kinds_over(enforcer, {held}, {140s, 150s}), (std::vector<std::vector<Kind>>{{Kind::stop}, {}}));
}

TEST(IdleEnforcer, ARunIsIdleOnlyWhileAllItsGpusAre) {
  IdleEnforcer enforcer(policy());
  HolderSample both = holder("container:c1", 0, "c1", true);
  both.gpus = {0, 1};
  MachineSample half = sample(0s, 0, {both});
  half.gpus[1].utilization_percent = 80;
  enforcer.observe(half, runs_of({both}));
  half.when = kStart + 200s;
  EXPECT_TRUE(enforcer.observe(half, runs_of({both})).empty());
}

TEST(IdleEnforcer, AProcessOnTwoGpusIsOneHolderIdleOnlyWhileBothAre) {
  IdleEnforcer enforcer(policy());
  // The sample lists a process once per GPU it uses.
  const std::vector<HolderSample> held{holder("process:7:1", 0, "", false), holder("process:7:1", 1, "", false)};
  MachineSample half = sample(0s, 0, held);
  half.gpus[1].utilization_percent = 80;
  for (const auto at : {0s, 60s, 120s, 180s}) {
    half.when = kStart + at;
    EXPECT_TRUE(enforcer.observe(half, runs_of({held[0]})).empty()) << at.count();
  }
  EXPECT_EQ(kinds_over(enforcer, held, {200s, 260s}).back(), std::vector<Kind>{Kind::warn});  // both idle: one warning
}

TEST(IdleEnforcer, LeavesExemptUsersAlone) {
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true, "root")};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 60s, 120s}), (std::vector<std::vector<Kind>>{{}, {}, {}}));
}

TEST(IdleEnforcer, AStopThatFailedIsAskedForAgainAtTheNextSample) {
  IdleEnforcer enforcer(policy());
  const std::vector<HolderSample> held{holder("container:c1", 0, "c1", true)};
  EXPECT_EQ(kinds_over(enforcer, held, {0s, 60s, 120s}).back(), std::vector<Kind>{Kind::stop});
  enforcer.stop_failed("container:c1");
  EXPECT_EQ(kinds_over(enforcer, held, {130s}).back(), std::vector<Kind>{Kind::stop});
}

// GPU 0 and 1's stored rows at `util` percent, every 10 s from `from` to `to`.
std::vector<GpuSampleRow> stored(std::chrono::seconds from, std::chrono::seconds to, double util) {
  std::vector<GpuSampleRow> rows;
  for (auto at = from; at <= to; at += 10s)
    for (int gpu : {0, 1})
      rows.push_back(
          {.when = kStart + at, .gpu = gpu, .utilization_percent = util, .memory_used_mib = 1, .holders = 1});
  return rows;
}

// The store's walk over `rows`.
GpuSampleWalk walk(std::vector<GpuSampleRow> rows) {
  return [rows = std::move(rows)](const GpuSampleVisit& visit) {
    for (const GpuSampleRow& row : rows) visit(row);
  };
}

// `due` is one action, of `kind`, at `elapsed`.
void expect_one(const std::vector<PolicyAction>& due, Kind kind, std::chrono::seconds elapsed) {
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].kind, kind);
  EXPECT_EQ(due[0].elapsed, elapsed);
}

// The run of holder `c`, on GPU 0.
std::vector<RunRecord> run_on_gpu0(const HolderSample& c) {
  std::vector<RunRecord> running = runs_of({c});
  running[0].gpus = {0};
  return running;
}

// A sample at `at` in which the engine did not answer: its containers are missing, GPU 0 still idle.
MachineSample engine_silent(std::chrono::seconds at) {
  MachineSample without = sample(at, 0, {});
  without.containers_unknown = true;
  return without;
}

TEST(IdleEnforcer, AfterARestartAnIdleStreakGoesOnAndItsWarningIsNotGivenAgain) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  // Before the restart: busy until 100 s, then idle from 110 s to 200 s (warned at 170 s).
  std::vector<GpuSampleRow> rows = stored(0s, 100s, 90);
  const std::vector<GpuSampleRow> idle = stored(110s, 200s, 0);
  rows.insert(rows.end(), idle.begin(), idle.end());
  IdleEnforcer enforcer(policy(), 40s);
  enforcer.resume(running, walk(rows));
  // After it, at 210 s: idle for 100 s, warned already.
  EXPECT_THAT(enforcer.observe(sample(210s, 0, {c}), running), ::testing::IsEmpty());
  // At 230 s, 120 s idle: stopped when it would have been without the restart.
  expect_one(enforcer.observe(sample(230s, 0, {c}), running), Kind::stop, 120s);
}

// Still held after a restart, it was not stopped: the stop failed, or came due as gpurund stopped.
TEST(IdleEnforcer, AfterARestartAStreakPastItsStopIsStoppedAtTheFirstSampleNotWarnedAgain) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  IdleEnforcer enforcer(policy(), 40s);
  enforcer.resume(running, walk(stored(0s, 200s, 0)));
  expect_one(enforcer.observe(sample(210s, 0, {c}), running), Kind::stop, 210s);
  EXPECT_THAT(enforcer.observe(sample(220s, 0, {c}), running), ::testing::IsEmpty());
}

// What the policy never stops (a process; anything in a dry run) was reported before the restart:
// not again after it.
TEST(IdleEnforcer, AfterARestartWhatIsNeverStoppedIsNotReportedAgain) {
  const HolderSample process = holder("process:7:1", 0, "", false);
  IdleEnforcer enforcer(policy(), 40s);
  enforcer.resume(run_on_gpu0(process), walk(stored(0s, 200s, 0)));
  EXPECT_THAT(enforcer.observe(sample(210s, 0, {process}), run_on_gpu0(process)), ::testing::IsEmpty());
  IdlePolicy dry = policy();
  dry.dry_run = true;
  const HolderSample c = holder("container:c", 0, "c", true);
  IdleEnforcer dry_enforcer(dry, 40s);
  dry_enforcer.resume(run_on_gpu0(c), walk(stored(0s, 200s, 0)));
  EXPECT_THAT(dry_enforcer.observe(sample(210s, 0, {c}), run_on_gpu0(c)), ::testing::IsEmpty());
}

TEST(IdleEnforcer, AfterARestartLongerThanTheGapAStreakStartsAfresh) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  IdleEnforcer enforcer(policy(), 40s);
  enforcer.resume(running, walk(stored(0s, 200s, 0)));  // idle 200 s, then gpurund was down 100 s
  EXPECT_THAT(enforcer.observe(sample(300s, 0, {c}), running), ::testing::IsEmpty());
  EXPECT_THAT(enforcer.observe(sample(330s, 0, {c}), running), ::testing::IsEmpty());
  expect_one(enforcer.observe(sample(360s, 0, {c}), running), Kind::warn, 60s);
}

// A streak broken by a gap nobody measured starts afresh, its warning too: with a stop 20 s after
// the warning and samples 40 s apart, the last streak's warning let the new one stop unwarned.
TEST(IdleEnforcer, AStreakAfterAGapIsWarnedAgainBeforeItsStop) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  IdlePolicy close = policy();
  close.stop_after = 80s;
  IdleEnforcer enforcer(close, 40s);
  EXPECT_THAT(enforcer.observe(sample(0s, 0, {c}), running), ::testing::IsEmpty());
  EXPECT_THAT(enforcer.observe(sample(30s, 0, {c}), running), ::testing::IsEmpty());
  expect_one(enforcer.observe(sample(60s, 0, {c}), running), Kind::warn, 60s);
  EXPECT_THAT(enforcer.observe(sample(160s, 0, {c}), running), ::testing::IsEmpty());  // 100 s unmeasured
  EXPECT_THAT(enforcer.observe(sample(200s, 0, {c}), running), ::testing::IsEmpty());
  expect_one(enforcer.observe(sample(240s, 0, {c}), running), Kind::warn, 80s);  // not a stop
}

// The wall clock set back across the restart (a clock that ran ahead, mended while gpurund was
// down): the stored streak ends later than the first sample after it, and how long nobody
// measured is not known, so the streak starts afresh; it is neither stopped at once nor kept.
TEST(IdleEnforcer, AfterARestartWithTheClockSetBackAStreakStartsAfresh) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  IdleEnforcer enforcer(policy(), 40s);
  enforcer.resume(running, walk(stored(0s, 200s, 0)));  // idle 200 s by the clock that ran ahead
  EXPECT_THAT(enforcer.observe(sample(150s, 0, {c}), running), ::testing::IsEmpty());
  EXPECT_THAT(enforcer.observe(sample(180s, 0, {c}), running), ::testing::IsEmpty());
  expect_one(enforcer.observe(sample(210s, 0, {c}), running), Kind::warn, 60s);
}

// A stop_after of days at a second's interval is millions of stored rows: gpurund, as root, takes
// them up from the store one at a time after a restart. 30 000 sample times of 8 GPUs here (about
// 30 MB if held at once). Measured in a child, whose peak resident set is its own.
TEST(IdleEnforcer, AfterARestartTheStoredSamplesAreTakenUpOneRowAtATime) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory aside (its quarantine): the peak grows either way";
#endif
  const test::TempDir dir;
  constexpr int kTimes = 30'000;
  {
    RunStore store(dir / "gpurund.db");
    std::vector<GpuSampleRow> rows;
    for (int t = 0; t < kTimes; ++t)
      for (int gpu = 0; gpu < 8; ++gpu)
        rows.push_back({.when = kStart + std::chrono::seconds(t),
                        .gpu = gpu,
                        .utilization_percent = 0,
                        .memory_used_mib = 1,
                        .holders = 1});
    store.save({}, {}, rows);
  }
  EXPECT_TRUE(test::passes_in_child([&] {
    const RunStore store(dir / "gpurund.db");
    const HolderSample c = holder("container:c", 0, "c", true);
    const std::vector<RunRecord> running = run_on_gpu0(c);
    IdleEnforcer enforcer(policy(), 40s);
    const long grown_kib = test::peak_growth_kib([&] {
      enforcer.resume(running, [&store](const GpuSampleVisit& visit) { store.each_gpu_sample(kStart, visit); });
    });
    // Idle all along: past stop_after, so the first sample after the restart stops it.
    const std::vector<PolicyAction> due = enforcer.observe(sample(std::chrono::seconds(kTimes), 0, {c}), running);
    const bool stopped = due.size() == 1 && due[0].kind == Kind::stop;
    std::fprintf(stderr, "resume over %d stored rows: peak resident set grew %ld KiB\n", kTimes * 8, grown_kib);
    return stopped && grown_kib < 8 * 1024;
  }));
}

TEST(IdleEnforcer, AnIdleContainerTheEngineDoesNotShowForAWhileKeepsItsStreak) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  IdleEnforcer enforcer(policy(), 40s);
  std::vector<PolicyAction> due;
  for (auto at = 0s; at <= 60s; at += 10s) due = enforcer.observe(sample(at, 0, {c}), running);
  ASSERT_EQ(due.size(), 1u);  // warned at 60 s
  // The engine does not answer for a minute: c is missing from the samples, its GPU still idle.
  for (auto at = 70s; at <= 130s; at += 10s)
    EXPECT_THAT(enforcer.observe(engine_silent(at), running), ::testing::IsEmpty());
  // Back: idle 140 s, past stop_after, and not warned again.
  expect_one(enforcer.observe(sample(140s, 0, {c}), running), Kind::stop, 140s);
}

TEST(IdleEnforcer, AStreakThatPassedWarningAndStopUnseenIsWarnedFirstAndStoppedAfterTheNotice) {
  const HolderSample c = holder("container:c", 0, "c", true);
  const std::vector<RunRecord> running = run_on_gpu0(c);
  IdleEnforcer enforcer(policy(), 40s);
  for (auto at = 0s; at <= 50s; at += 10s)
    EXPECT_THAT(enforcer.observe(sample(at, 0, {c}), running), ::testing::IsEmpty());
  // The engine does not answer: warning and stop pass unseen.
  for (auto at = 60s; at <= 130s; at += 10s)
    EXPECT_THAT(enforcer.observe(engine_silent(at), running), ::testing::IsEmpty());
  expect_one(enforcer.observe(sample(140s, 0, {c}), running), Kind::warn, 140s);  // not stopped unwarned
  for (auto at = 150s; at <= 190s; at += 10s)
    EXPECT_THAT(enforcer.observe(sample(at, 0, {c}), running), ::testing::IsEmpty());
  // The policy's 60 s between warning and stop.
  expect_one(enforcer.observe(sample(200s, 0, {c}), running), Kind::stop, 200s);
}

}  // namespace
}  // namespace gpurun
