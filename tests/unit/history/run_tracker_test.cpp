// Unit tests for the service's run model (gpurun/history/run_tracker.hpp), driven by a synthetic
// clock.
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/history/time_text.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const WallTime kT0 = WallTime{} + std::chrono::hours(24 * 365 * 56);  // 2026

HolderSample container(const std::string& id, std::vector<int> gpus, std::optional<double> memory = std::nullopt) {
  return {.key = "container:" + id,
          .name = id + "-name",
          .user = "alice",
          .container_id = id,
          .image = "me/torch:1",
          .command = "python train.py",
          .gpus = std::move(gpus),
          .memory_used_mib = memory};
}

MachineSample at(std::chrono::seconds t, std::vector<std::optional<double>> util, std::vector<HolderSample> holders) {
  MachineSample s{.when = kT0 + t, .gpus = {}, .holders = std::move(holders)};
  for (std::size_t i = 0; i < util.size(); ++i)
    s.gpus.push_back({.index = static_cast<int>(i), .utilization_percent = util[i], .memory_used_mib = std::nullopt});
  return s;
}

// A sample `passed` after the first on the steady clock, whatever the wall clock reads (`wall`).
MachineSample timed(std::chrono::seconds wall, std::chrono::seconds passed, std::vector<HolderSample> holders,
                    std::vector<std::optional<double>> util = {90, 90}) {
  MachineSample s = at(wall, std::move(util), std::move(holders));
  s.monotonic = std::chrono::steady_clock::time_point{} + 1000s + passed;
  return s;
}

TEST(RunTracker, ARunStartsWhenFirstSeenAndIsCreditedBetweenSamples) {
  RunTracker tracker;
  EXPECT_THAT(tracker.observe(at(0s, {90, 0}, {container("a", {0})})), IsEmpty());
  EXPECT_THAT(tracker.observe(at(10s, {90, 0}, {container("a", {0}, 4000)})), IsEmpty());
  EXPECT_THAT(tracker.observe(at(20s, {50, 0}, {container("a", {0}, 6000)})), IsEmpty());
  ASSERT_EQ(tracker.running().size(), 1u);
  const RunRecord& run = tracker.running().front();
  EXPECT_EQ(run.id, 1);
  EXPECT_EQ(run.name, "a-name");
  EXPECT_EQ(run.user, "alice");
  EXPECT_EQ(run.start, kT0);
  EXPECT_FALSE(run.end);
  EXPECT_DOUBLE_EQ(run.gpu_seconds, 20);
  EXPECT_DOUBLE_EQ(run.busy_gpu_seconds, 9 + 5);
  EXPECT_DOUBLE_EQ(*run.efficiency(), 70);
  EXPECT_DOUBLE_EQ(run.idle_seconds, 0);
  EXPECT_DOUBLE_EQ(run.max_memory_mib, 6000);
}

TEST(RunTracker, ARunEndsAfterTwoSamplesWithoutItAtTheLastTimeItWasSeen) {
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {container("a", {0})}));
  tracker.observe(at(10s, {90}, {container("a", {0})}));
  EXPECT_THAT(tracker.observe(at(20s, {0}, {})), IsEmpty());  // missing once: may be a glitch
  const std::vector<RunRecord> ended = tracker.observe(at(30s, {0}, {}));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].end, kT0 + 10s);
  EXPECT_EQ(ended[0].ended_by, "gone");
  EXPECT_DOUBLE_EQ(ended[0].gpu_seconds, 10);
  EXPECT_THAT(tracker.running(), IsEmpty());
}

// Seen on an H100 (driver 580): the driver lists a CUDA process for a second after /proc has let it go.
TEST(RunTracker, AProcessGoneFromProcThatTheDriverStillListsContinuesItsRun) {
  const auto process = [](long pid, const std::string& start) {
    HolderSample holder;
    holder.key = "process:" + std::to_string(pid) + ":" + start;
    holder.name = start.empty() ? "pid " + std::to_string(pid) : "python train.py";
    holder.user = start.empty() ? "" : "alice";
    holder.gpus = {0};
    return holder;
  };
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {process(514, "8812")}));
  tracker.observe(at(10s, {90}, {process(514, "8812")}));
  tracker.observe(at(20s, {0}, {process(514, "")}));
  ASSERT_EQ(tracker.running().size(), 1u);
  EXPECT_EQ(tracker.running().front().name, "python train.py");
  EXPECT_EQ(tracker.running().front().user, "alice");
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 20);
  // Listed on two GPUs, /proc letting go between the two looks: one run on both.
  HolderSample on_gpu1 = process(514, "");
  on_gpu1.gpus = {1};
  tracker.observe(at(25s, {0, 0}, {process(514, "8812"), on_gpu1}));
  ASSERT_EQ(tracker.running().size(), 1u);
  EXPECT_THAT(tracker.running().front().gpus, ElementsAre(0, 1));
  // Without a run of its pid, it is a holder of its own (another pid namespace, say).
  tracker.observe(at(30s, {0}, {process(514, ""), process(77, "")}));
  EXPECT_EQ(tracker.running().size(), 2u);
}

TEST(RunTracker, AContainersProcessGoneFromProcContinuesTheContainersRunNotARunOfItsOwn) {
  // The job exits: /proc lets go of pid 514 a moment before the driver does, and the process no
  // longer names its container. It was a phantom run "pid 514" of nobody, kept for good.
  HolderSample job = container("c", {0});
  job.pids = {514};
  HolderSample exiting;
  exiting.key = "process:514:";
  exiting.name = "pid 514";
  exiting.gpus = {0};
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {job}));
  tracker.observe(at(10s, {90}, {job}));
  HolderSample left = container("c", {0});  // the engine still lists it, its process gone from /proc
  tracker.observe(at(20s, {50}, {left, exiting}));
  tracker.observe(at(21s, {0}, {exiting}));  // and once more, the container gone from the list
  ASSERT_EQ(tracker.running().size(), 1u);
  EXPECT_EQ(tracker.running().front().key, "container:c");
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 21);
  // Another pid gone from /proc that no container had is a holder of its own, as before.
  HolderSample other = exiting;
  other.key = "process:77:";
  tracker.observe(at(22s, {0}, {other}));
  EXPECT_EQ(tracker.running().size(), 2u);
}

TEST(RunTracker, ARunTakesTheEnginesNameAndImageOnceTheEngineListsIt) {
  // First seen through its process alone (the engine did not answer): a placeholder name and image.
  HolderSample unlisted = container("c", {0});
  unlisted.name = "c";
  unlisted.image = "docker container";
  HolderSample listed = container("c", {0});
  listed.name = "trainjob";
  listed.image = "me/torch:1";
  listed.command = "python train.py";
  listed.listed_by_engine = true;
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {unlisted}));
  tracker.observe(at(10s, {90}, {listed}));
  EXPECT_EQ(tracker.running().front().name, "trainjob");
  EXPECT_EQ(tracker.running().front().image, "me/torch:1");
  EXPECT_EQ(tracker.running().front().command, "python train.py");
  listed.name = "renamed";  // docker rename
  tracker.observe(at(20s, {90}, {listed, unlisted}));
  EXPECT_EQ(tracker.running().front().name, "renamed");
}

TEST(RunTracker, ARunOnAGpuTheReadLeftOutIsHeldNotEnded) {
  // The driver failed to list GPU 3's processes twice: its job is not gone, nor a new run after.
  RunTracker tracker;
  const auto without_gpu3 = [](std::chrono::seconds t) {
    MachineSample sample = at(t, {0}, {container("b", {0})});
    sample.gpus_unknown = {3};
    return sample;
  };
  MachineSample first = at(0s, {0}, {container("b", {0})});
  first.holders.push_back(container("a", {3}));
  tracker.observe(first);
  EXPECT_THAT(tracker.observe(without_gpu3(10s)), IsEmpty());
  EXPECT_THAT(tracker.observe(without_gpu3(20s)), IsEmpty());
  EXPECT_THAT(tracker.observe(without_gpu3(30s)), IsEmpty());
  tracker.observe(at(40s, {0}, {container("b", {0}), container("a", {3})}));
  ASSERT_EQ(tracker.running().size(), 2u);
  EXPECT_EQ(tracker.running().front().key, "container:a");
  EXPECT_EQ(tracker.running().front().id, 1);  // the same run, not a new one
  // Read and not there: gone, as ever.
  tracker.observe(at(50s, {0, 0, 0, 0}, {container("b", {0})}));
  EXPECT_THAT(tracker.observe(at(60s, {0, 0, 0, 0}, {container("b", {0})})), SizeIs(1));
}

TEST(RunTracker, TimeSpentStoppingContainersIsNoGapNobodyMeasured) {
  // Three idle containers stopped after one sample, 20 s each: the next sample is 70 s on.
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {container("a", {0})}));
  tracker.observe(at(10s, {90}, {container("a", {0})}));
  tracker.acted_for(60s);
  tracker.observe(at(80s, {90}, {container("a", {0})}));
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 80);
  // Once: a long gap after that is one nobody measured, as ever.
  tracker.observe(at(180s, {90}, {container("a", {0})}));
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 80);
}

TEST(RunTracker, AWallClockStepNeitherEndsAHeldRunNorMovesTheIdleTime) {
  const std::chrono::steady_clock::time_point boot{};
  const auto sample = [&](std::chrono::seconds wall, std::chrono::seconds steady, std::vector<HolderSample> holders) {
    MachineSample s = at(wall, {0}, std::move(holders));
    s.monotonic = boot + steady;
    return s;
  };
  RunTracker tracker;
  tracker.observe(sample(0s, 0s, {container("a", {0})}));
  tracker.observe(sample(10s, 10s, {container("a", {0})}));
  // NTP steps the wall clock 15 minutes forward: the GPU has been idle 20 s, not 15 min 20 s.
  tracker.observe(sample(20s + 15min, 20s, {container("a", {0})}));
  EXPECT_EQ(tracker.idle_since().at(0), kT0 + 15min);
  // The engine goes silent, and the wall clock is stepped meanwhile: the run is held for the
  // grace (10 minutes), which the step does not use up.
  RunTracker held;
  held.observe(sample(0s, 0s, {container("a", {0})}));
  for (const auto t : {10s, 20s, 30s}) {
    MachineSample silent = sample(t + 15min, t, {});
    silent.containers_unknown = true;
    EXPECT_THAT(held.observe(silent), IsEmpty()) << t.count();
  }
  EXPECT_EQ(held.running().size(), 1u);
}

TEST(RunTracker, MissingOnceIsNoEnd) {
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {container("a", {0})}));
  tracker.observe(at(10s, {90}, {}));
  tracker.observe(at(20s, {90}, {container("a", {0})}));
  tracker.observe(at(30s, {90}, {}));
  EXPECT_EQ(tracker.running().size(), 1u);
  EXPECT_EQ(tracker.running().front().id, 1);
}

TEST(RunTracker, IdleTimeCountsOnlyWhileEveryGpuOfTheRunIsAtOrBelowTheThreshold) {
  RunTracker tracker;
  tracker.observe(at(0s, {0, 0}, {container("a", {0, 1})}));
  tracker.observe(at(10s, {5, 0}, {container("a", {0, 1})}));   // both idle: 10 s
  tracker.observe(at(20s, {0, 30}, {container("a", {0, 1})}));  // one busy: not idle
  const RunRecord& run = tracker.running().front();
  EXPECT_DOUBLE_EQ(run.idle_seconds, 10);
  EXPECT_DOUBLE_EQ(run.gpu_seconds, 40);
  EXPECT_DOUBLE_EQ(run.busy_gpu_seconds, 0.5 + 3);
}

TEST(RunTracker, AHeldGpuIsIdleSinceItsFirstIdleSampleUntilItWorksOrIsLetGo) {
  RunTracker tracker;
  tracker.observe(at(0s, {90, 0, 0}, {container("a", {0, 1})}));
  EXPECT_THAT(tracker.idle_since(), ElementsAre(std::pair{1, kT0}));  // GPU 2 is idle but nobody holds it
  tracker.observe(at(10s, {3, 0, 0}, {container("a", {0, 1})}));
  EXPECT_THAT(tracker.idle_since(), ElementsAre(std::pair{0, kT0 + 10s}, std::pair{1, kT0}));
  tracker.observe(at(20s, {3, 40, std::nullopt}, {container("a", {0, 1}), container("b", {2})}));
  EXPECT_THAT(tracker.idle_since(), ElementsAre(std::pair{0, kT0 + 10s}));  // 1 works, 2 unknown
  tracker.observe(at(30s, {0, 0, 0}, {}));
  EXPECT_THAT(tracker.idle_since(), IsEmpty());  // let go (the run not ended yet, but not holding)
}

TEST(RunTracker, UnknownUtilizationIsNeitherBusyNorIdle) {
  RunTracker tracker;
  tracker.observe(at(0s, {std::nullopt}, {container("a", {0})}));
  tracker.observe(at(10s, {std::nullopt}, {container("a", {0})}));
  const RunRecord& run = tracker.running().front();
  EXPECT_DOUBLE_EQ(run.gpu_seconds, 10);
  EXPECT_DOUBLE_EQ(run.busy_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(run.unmeasured_gpu_seconds, 10);  // no part of its efficiency
  EXPECT_DOUBLE_EQ(run.idle_seconds, 0);
  EXPECT_EQ(run.efficiency(), std::nullopt);
}

TEST(RunTracker, AHolderListedPerGpuIsOneRunOnAllOfThem) {
  RunTracker tracker;
  tracker.observe(at(0s, {90, 90}, {container("a", {0}, 100), container("a", {1}, 200)}));
  ASSERT_EQ(tracker.running().size(), 1u);
  EXPECT_THAT(tracker.running().front().gpus, ElementsAre(0, 1));
  EXPECT_DOUBLE_EQ(tracker.running().front().max_memory_mib, 300);
}

TEST(RunTracker, AHolderOfAMigInstanceIsCreditedItsShareOfTheGpu) {
  RunTracker tracker;
  HolderSample quarter = container("a", {0});
  quarter.mig_share = {{0, 0.25}};
  HolderSample whole = container("b", {1});
  tracker.observe(at(0s, {80, 80}, {quarter, whole}));
  tracker.observe(at(10s, {80, 80}, {quarter, whole}));
  ASSERT_EQ(tracker.running().size(), 2u);
  EXPECT_DOUBLE_EQ(tracker.running()[0].gpu_seconds, 2.5);  // a 1g.20gb of an 80 GB GPU for 10 s
  EXPECT_DOUBLE_EQ(tracker.running()[0].busy_gpu_seconds, 2);
  EXPECT_DOUBLE_EQ(tracker.running()[1].gpu_seconds, 10);
}

TEST(RunTracker, MergedHoldersKeepTheWholeOfAGpuOverAShareAndAShareOfAnother) {
  HolderSample part = container("a", {0});
  part.mig_share = {{0, 0.5}};
  HolderSample other = container("a", {1});
  other.mig_share = {{1, 0.25}};
  std::vector<HolderSample> merged = merged_holders({part, other});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_THAT(merged[0].gpus, ElementsAre(0, 1));
  EXPECT_EQ(merged[0].mig_share, (std::map<int, double>{{0, 0.5}, {1, 0.25}}));
  merged = merged_holders({part, container("a", {0})});
  EXPECT_THAT(merged[0].mig_share, IsEmpty());  // held whole too
}

TEST(RunTracker, TheClockSteppingBackNeverGivesNegativeTimes) {
  RunTracker tracker;  // samples without a steady time: the wall clock's gaps, never below 0
  tracker.observe(at(100s, {90}, {container("a", {0})}));
  tracker.observe(at(50s, {90}, {container("a", {0})}));
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 0);
  tracker.observe(at(60s, {90}, {container("a", {0})}));
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 10);  // counted on from the new time
}

// The wall clock corrected by an hour either way (NTP, an admin's date): the runs are credited
// the time that passed, read on the steady clock. An hour back once credited nothing for an hour.
TEST(RunTracker, AWallClockSteppedBackOrForwardCreditsTheTimeThatPassed) {
  RunTracker tracker;
  const auto sample = [](std::chrono::seconds wall, std::chrono::seconds passed) {
    return timed(wall, passed, {container("a", {0})}, {90});
  };
  tracker.observe(sample(3600s, 0s));
  tracker.observe(sample(10s, 10s));  // an hour back
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 10);
  tracker.observe(sample(7220s, 20s));  // two hours forward
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 20);
  EXPECT_DOUBLE_EQ(tracker.running().front().busy_gpu_seconds, 18);
}

// A date set a year ahead by mistake and corrected minutes later: the runs then open, and those
// begun meanwhile, read the corrected clock again (they ended a year ahead, counted whole in every
// window for a year).
TEST(RunTracker, AClockSteppedAheadAndCorrectedLeavesNoRunInTheFuture) {
  RunTracker tracker;
  constexpr std::chrono::seconds kYear = 365 * 24h;
  tracker.observe(timed(0s, 0s, {container("a", {0})}));
  tracker.observe(timed(kYear + 10s, 10s, {container("a", {0}), container("b", {1})}));  // the mistake
  tracker.observe(timed(20s, 20s, {container("a", {0}), container("b", {1})}));          // corrected
  ASSERT_THAT(tracker.running(), SizeIs(2));
  EXPECT_EQ(tracker.running()[0].start, kT0);        // a: begun before the mistake
  EXPECT_EQ(tracker.running()[1].start, kT0 + 10s);  // b: begun during it, at its true time
  for (const RunRecord& run : tracker.running()) EXPECT_EQ(run.last_seen, kT0 + 20s) << run.key;
  tracker.observe(timed(30s, 30s, {}));
  const std::vector<RunRecord> ended = tracker.observe(timed(40s, 40s, {}));
  ASSERT_THAT(ended, SizeIs(2));
  for (const RunRecord& run : ended) EXPECT_EQ(*run.end, kT0 + 20s) << run.key;
}

// The clock stepped back an hour under a run fifty minutes old: it is fifty minutes old still,
// not begun now (its hour counted in the last ten minutes).
TEST(RunTracker, AClockSteppedBackLeavesARunItsAge) {
  RunTracker tracker;
  const auto sample = [](std::chrono::seconds wall, std::chrono::seconds passed) {
    return timed(wall, passed, {container("a", {0})}, {90});
  };
  tracker.observe(sample(3600s, 0s));
  tracker.observe(sample(3600s + 3000s, 3000s));  // fifty minutes on
  tracker.observe(sample(3000s + 10s, 3010s));    // an hour back
  EXPECT_EQ(tracker.running().front().start, kT0);
  EXPECT_EQ(tracker.running().front().last_seen, kT0 + 3010s);
}

// Two users' processes on one GPU (--allow-busy, a workstation): each is credited half of the
// time, so that their GPU-hours add up to the GPU's, not to twice them. A holder that joins is
// credited from its second sample, and takes its part from then on.
TEST(RunTracker, AGpuHeldByTwoIsSplitBetweenThemAndTheirHoursAddUpToTheGpus) {
  RunTracker tracker;
  tracker.observe(at(0s, {60}, {container("a", {0})}));
  tracker.observe(at(10s, {60}, {container("a", {0}), container("b", {0})}));
  tracker.observe(at(20s, {60}, {container("a", {0}), container("b", {0})}));
  tracker.observe(at(30s, {60, 60}, {container("a", {0, 1}), container("b", {0})}));
  ASSERT_EQ(tracker.running().size(), 2u);
  const RunRecord& a = tracker.running()[0];
  const RunRecord& b = tracker.running()[1];
  EXPECT_DOUBLE_EQ(a.gpu_seconds, 10 + 5 + 5 + 10);  // alone, two halves, a half of GPU 0 and GPU 1 whole
  EXPECT_DOUBLE_EQ(b.gpu_seconds, 5 + 5);
  EXPECT_DOUBLE_EQ(a.gpu_seconds + b.gpu_seconds, 30 + 10);  // GPU 0's 30 s and GPU 1's 10 s
  EXPECT_DOUBLE_EQ(*a.efficiency(), 60);                     // the GPU's utilization, whatever the share
  EXPECT_DOUBLE_EQ(b.busy_gpu_seconds, 6);
}

// dcgm-exporter given every GPU (--gpus all) beside a job that computes on GPU 0: the job's time
// is its own, and the exporter is credited only the GPU nobody computes on.
TEST(RunTracker, AGpuIsTheTimeOfThoseComputingOnItAndOfAllWhereNoneDoes) {
  RunTracker tracker;
  HolderSample exporter = container("exporter", {0, 1});  // holds both, computes on neither
  HolderSample job = container("job", {0});
  job.computing_gpus = {0};
  tracker.observe(at(0s, {90, 0}, {exporter, job}));
  tracker.observe(at(10s, {90, 0}, {exporter, job}));
  ASSERT_EQ(tracker.running().size(), 2u);
  const auto run_of = [&](const std::string& id) {
    return *std::find_if(tracker.running().begin(), tracker.running().end(),
                         [&](const RunRecord& r) { return r.container_id == id; });
  };
  EXPECT_DOUBLE_EQ(run_of("job").gpu_seconds, 10);
  EXPECT_DOUBLE_EQ(run_of("exporter").gpu_seconds, 10);  // GPU 1's, which it alone holds
  EXPECT_DOUBLE_EQ(run_of("exporter").busy_gpu_seconds, 0);
}

// The same exporter on a MIG GPU: the job in one of its instances works there, so the exporter
// takes none of the GPU's time (it had all of it, beside the job's share, before).
TEST(RunTracker, AWholeHolderTakesNoneOfAMigGpuWhoseInstancesAreWorkedOn) {
  RunTracker tracker;
  HolderSample exporter = container("exporter", {0});
  HolderSample job = container("job", {0});
  job.mig_share = {{0, 0.25}};
  job.computing_gpus = {0};
  tracker.observe(at(0s, {std::nullopt}, {exporter, job}));
  tracker.observe(at(10s, {std::nullopt}, {exporter, job}));
  ASSERT_EQ(tracker.running().size(), 2u);
  EXPECT_DOUBLE_EQ(tracker.running()[0].gpu_seconds, 0);    // the exporter
  EXPECT_DOUBLE_EQ(tracker.running()[1].gpu_seconds, 2.5);  // the job's quarter

  // Where no instance is worked on, the whole holder is credited what the instances' holders do
  // not hold: the two add up to the GPU's time (seven idle notebooks' instances and the exporter
  // were credited nearly twice it).
  job.computing_gpus.clear();
  tracker.observe(at(20s, {std::nullopt}, {exporter, job}));
  EXPECT_DOUBLE_EQ(tracker.running()[0].gpu_seconds, 7.5);
  EXPECT_DOUBLE_EQ(tracker.running()[1].gpu_seconds, 5);
}

TEST(RunTracker, AGapLongerThanTheCreditLimitIsNotCounted) {
  RunTracker tracker;
  tracker.observe(at(0s, {90}, {container("a", {0})}));
  tracker.observe(at(3600s, {90}, {container("a", {0})}));  // gpurund was stopped for an hour
  tracker.observe(at(3610s, {90}, {container("a", {0})}));
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 10);
}

TEST(RunTracker, AfterARestartAHolderStillPresentContinuesAsTheSameRun) {
  RunTracker before;
  before.observe(at(0s, {90}, {container("a", {0}), container("b", {1})}));
  before.observe(at(10s, {90, 90}, {container("a", {0}), container("b", {1})}));
  const std::vector<RunRecord> open = before.running();

  RunTracker after(TrackerSettings{}, 2);
  after.resume(open);
  after.observe(at(40s, {90, 90}, {container("a", {0})}));  // b went while gpurund was down
  const std::vector<RunRecord> ended = after.observe(at(50s, {90, 90}, {container("a", {0})}));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].key, "container:b");
  EXPECT_EQ(ended[0].end, kT0 + 10s);
  ASSERT_EQ(after.running().size(), 1u);
  EXPECT_EQ(after.running().front().id, 1);                   // the same run, not a new one
  EXPECT_DOUBLE_EQ(after.running().front().gpu_seconds, 20);  // 10 before, the gap lost, 10 after
  after.observe(at(60s, {90, 90}, {container("c", {1})}));
  EXPECT_EQ(after.running().back().id, 3);  // ids go on from the store's last
}

// A sample in which the container engine did not answer: the containers it alone shows are missing.
MachineSample engine_silent(MachineSample sample) {
  sample.containers_unknown = true;
  return sample;
}

TEST(RunTracker, AnIdleContainerRunOutlivesAnEngineThatDoesNotAnswerAndEndsWhereLastSeenIfGone) {
  RunTracker tracker;
  HolderSample bare;
  bare.key = "process:7:99";
  bare.gpus = {1};
  tracker.observe(at(0s, {0, 90}, {container("a", {0}), container("b", {0}), bare}));
  tracker.observe(at(10s, {0, 90}, {container("a", {0}), container("b", {0}), bare}));
  // The engine is silent for a minute: a and b are missing, not gone; the bare process is gone.
  std::vector<RunRecord> ended;
  for (auto t = 20s; t <= 70s; t += 10s) {
    std::vector<RunRecord> now = tracker.observe(engine_silent(at(t, {0, 90}, {})));
    ended.insert(ended.end(), now.begin(), now.end());
  }
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].key, "process:7:99");
  ASSERT_EQ(tracker.running().size(), 2u);
  // It answers again: a goes on as the same run, credited from then on (the silence is not
  // counted); b is gone, and ends where it was last seen.
  EXPECT_THAT(tracker.observe(at(80s, {0, 90}, {container("a", {0})})), IsEmpty());
  ended = tracker.observe(at(90s, {0, 90}, {container("a", {0})}));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].key, "container:b");
  EXPECT_EQ(ended[0].end, kT0 + 10s);
  ASSERT_EQ(tracker.running().size(), 1u);
  EXPECT_EQ(tracker.running().front().id, 1);
  EXPECT_DOUBLE_EQ(tracker.running().front().gpu_seconds, 5 + 10 + 10);  // GPU 0 was b's too at first
  EXPECT_DOUBLE_EQ(tracker.running().front().idle_seconds, 10 + 10 + 10);
}

TEST(RunTracker, AnEngineSilentForLongerThanTheGraceEndsItsContainersRunsWhereLastSeen) {
  TrackerSettings settings;
  settings.engine_outage_grace = std::chrono::minutes(1);
  RunTracker tracker(settings);
  tracker.observe(at(0s, {0}, {container("a", {0})}));
  std::vector<RunRecord> ended;
  for (auto t = 10s; t <= 120s && ended.empty(); t += 10s) ended = tracker.observe(engine_silent(at(t, {0}, {})));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].end, kT0);
  EXPECT_EQ(ended[0].ended_by, "gone");
}

TEST(RunTracker, Rfc3339IsUtcToTheSecond) {
  EXPECT_EQ(rfc3339(WallTime{} + std::chrono::seconds(1'795'957'501)), "2026-11-29T13:05:01Z");
}

}  // namespace
}  // namespace gpurun
