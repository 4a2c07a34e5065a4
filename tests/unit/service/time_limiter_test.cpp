// Unit tests for time limits (gpurun/service/time_limiter.hpp), on a synthetic clock: a warning
// ten minutes before (halfway for a short limit), a stop at the limit, the smaller of the label
// and max_runtime, and nothing for what gpurun did not start.
#include "gpurun/service/time_limiter.hpp"

#include <gtest/gtest.h>

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using Kind = PolicyAction::Kind;

const WallTime kStart = WallTime{} + 1'000'000s;

HolderSample holder(const std::string& key, std::optional<std::chrono::seconds> limit, bool gpurun = true,
                    const std::string& container_id = "c1") {
  return {.key = key,
          .name = key,
          .user = "alice",
          .container_id = container_id,
          .image = "",
          .command = "",
          .gpus = {0},
          .memory_used_mib = std::nullopt,
          .started_by_gpurun = gpurun,
          .time_limit = limit,
          .notify_end = false,
          .listed_by_engine = !container_id.empty()};
}

// The kinds of the actions due at each of `times` after kStart, when the run started at kStart.
std::vector<std::vector<Kind>> kinds_over(TimeLimiter& limiter, const HolderSample& held,
                                          const std::vector<std::chrono::seconds>& times) {
  RunRecord run;
  run.id = 7;
  run.key = held.key;
  run.start = kStart;
  std::vector<std::vector<Kind>> all;
  for (const auto at : times) {
    std::vector<Kind> kinds;
    const MachineSample sample{.when = kStart + at, .gpus = {}, .holders = {held}};
    for (const PolicyAction& a : limiter.observe(sample, {run})) {
      EXPECT_EQ(a.rule, PolicyAction::Rule::time_limit);
      EXPECT_EQ(a.run_id, 7);
      EXPECT_EQ(a.elapsed, at);
      kinds.push_back(a.kind);
    }
    all.push_back(kinds);
  }
  return all;
}

TEST(TimeLimiter, WarnsTenMinutesBeforeOrHalfwayForAShortLimit) {
  EXPECT_EQ(TimeLimiter::warn_at(8h), 8h - 10min);
  EXPECT_EQ(TimeLimiter::warn_at(20min), 10min);
  EXPECT_EQ(TimeLimiter::warn_at(10min), 5min);
  EXPECT_EQ(TimeLimiter::warn_at(60s), 30s);
}

// The engine silent past its grace ended the run, and a new one began when it answered again:
// the limit counts from the container's start as the engine gives it, not from the new run's.
TEST(TimeLimiter, CountsFromTheContainersStartAsTheEngineGivesIt) {
  TimeLimiter limiter(std::nullopt);
  HolderSample held = holder("container:c1", 60s);
  held.started_at = kStart - 40s;  // the run began 40 s after the container
  RunRecord run;
  run.key = held.key;
  run.start = kStart;
  std::vector<std::pair<Kind, std::chrono::seconds>> due;
  for (const auto at : {0s, 10s, 20s})
    for (const PolicyAction& a : limiter.observe({.when = kStart + at, .gpus = {}, .holders = {held}}, {run}))
      due.emplace_back(a.kind, a.elapsed);
  ASSERT_EQ(due.size(), 2U);
  EXPECT_EQ(due[0], std::pair(Kind::warn, 40s));  // past halfway at its first sighting
  EXPECT_EQ(due[1], std::pair(Kind::stop, 60s));

  // `docker start` (or a restart policy) after a stop at its limit sets the engine's start anew:
  // the run's, earlier, still counts, and no new limit begins.
  TimeLimiter again(std::nullopt);
  held.started_at = kStart + 100s;
  const std::vector<PolicyAction> restarted =
      again.observe({.when = kStart + 110s, .gpus = {}, .holders = {held}}, {run});
  ASSERT_EQ(restarted.size(), 1U);
  EXPECT_EQ(restarted[0].kind, Kind::warn);  // first seen past its limit: warned, stopped a notice later
  EXPECT_EQ(restarted[0].elapsed, 110s);
}

TEST(TimeLimiter, AfterARestartARunPastItsWarningWhenLastSeenIsNotWarnedAgain) {
  RunRecord before;
  before.key = "container:c1";
  before.start = kStart;
  before.last_seen = kStart + 35s;  // warned at 30 s, before gpurund restarted
  TimeLimiter limiter(std::nullopt);
  limiter.resume({before});
  EXPECT_EQ(kinds_over(limiter, holder("container:c1", 60s), {40s, 50s, 60s}),
            (std::vector<std::vector<Kind>>{{}, {}, {Kind::stop}}));
  // One seen last before its warning is warned after the restart.
  before.last_seen = kStart + 25s;
  TimeLimiter early(std::nullopt);
  early.resume({before});
  EXPECT_EQ(kinds_over(early, holder("container:c1", 60s), {40s, 60s}),
            (std::vector<std::vector<Kind>>{{Kind::warn}, {Kind::stop}}));
}

// Warned late (first seen at 50 s of a 60 s limit: stopped in 30 s, at 80 s), then gpurund
// restarted at 55 s: what was promised is not known after it, so the whole notice counts from the
// last sighting before it; the stop comes at 85 s, not at the limit (20 s before the promise).
TEST(TimeLimiter, AfterARestartALateWarningsNoticeIsStillGiven) {
  RunRecord before;
  before.key = "container:c1";
  before.start = kStart;
  before.last_seen = kStart + 55s;
  TimeLimiter limiter(std::nullopt);
  limiter.resume({before});
  EXPECT_EQ(kinds_over(limiter, holder("container:c1", 60s), {60s, 80s, 84s, 85s}),
            (std::vector<std::vector<Kind>>{{}, {}, {}, {Kind::stop}}));
}

TEST(TimeLimiter, WarnsOnceThenStopsOnceAtTheLabelsLimit) {
  TimeLimiter limiter(std::nullopt);
  EXPECT_EQ(kinds_over(limiter, holder("container:c1", 60s), {0s, 20s, 30s, 40s, 60s, 70s}),
            (std::vector<std::vector<Kind>>{{}, {}, {Kind::warn}, {}, {Kind::stop}, {}}));
}

// A limit set or lowered while a job runs (max_runtime added, gpurund restarted), or gpurund down
// across its warning: the job is warned when first seen past its limit, and stopped only once the
// warning's notice (here 30 s, half of a 60 s limit) has run out. It was stopped without a word.
TEST(TimeLimiter, ARunFirstSeenPastItsLimitIsWarnedAndStoppedOnlyAfterTheNotice) {
  TimeLimiter limiter(std::nullopt);
  EXPECT_EQ(kinds_over(limiter, holder("container:c1", 60s), {100s, 110s, 129s, 130s, 140s}),
            (std::vector<std::vector<Kind>>{{Kind::warn}, {}, {}, {Kind::stop}, {}}));
  // First seen with less than half its notice left (10 s of 30): the whole notice, not 10 s.
  TimeLimiter late(std::nullopt);
  EXPECT_EQ(kinds_over(late, holder("container:c1", 60s), {50s, 60s, 79s, 80s}),
            (std::vector<std::vector<Kind>>{{Kind::warn}, {}, {}, {Kind::stop}}));
}

TEST(TimeLimiter, TheSmallerOfTheLabelAndMaxRuntimeWins) {
  TimeLimiter strict(100s);
  EXPECT_EQ(kinds_over(strict, holder("container:c1", 1h), {50s, 100s}),
            (std::vector<std::vector<Kind>>{{Kind::warn}, {Kind::stop}}));
  TimeLimiter loose(1h);
  EXPECT_EQ(kinds_over(loose, holder("container:c1", 100s), {50s, 100s}),
            (std::vector<std::vector<Kind>>{{Kind::warn}, {Kind::stop}}));
  TimeLimiter policy_only(100s);  // a launch without --time-limit gets max_runtime
  EXPECT_EQ(kinds_over(policy_only, holder("container:c1", std::nullopt), {50s, 100s}),
            (std::vector<std::vector<Kind>>{{Kind::warn}, {Kind::stop}}));
}

TEST(TimeLimiter, LeavesWhatGpurunDidNotStartAndRunsWithoutALimit) {
  TimeLimiter limiter(60s);
  EXPECT_EQ(kinds_over(limiter, holder("container:other", 60s, false), {60s, 120s}),
            (std::vector<std::vector<Kind>>{{}, {}}));
  EXPECT_EQ(kinds_over(limiter, holder("process:9:1", 60s, false, ""), {120s}), (std::vector<std::vector<Kind>>{{}}));
  TimeLimiter none(std::nullopt);
  EXPECT_EQ(kinds_over(none, holder("container:c1", std::nullopt), {0s, 1'000'000s}),
            (std::vector<std::vector<Kind>>{{}, {}}));
}

TEST(TimeLimiter, AFailedStopIsAskedForAgainAtTheNextSample) {
  TimeLimiter limiter(std::nullopt);
  const HolderSample held = holder("container:c1", 60s);
  EXPECT_EQ(kinds_over(limiter, held, {30s, 60s}), (std::vector<std::vector<Kind>>{{Kind::warn}, {Kind::stop}}));
  limiter.stop_failed(held.key);
  EXPECT_EQ(kinds_over(limiter, held, {70s, 80s}), (std::vector<std::vector<Kind>>{{Kind::stop}, {}}));
}

TEST(TimeLimiter, ASampleThatMissesTheHolderWhileItsRunGoesOnWarnsNoSecondTime) {
  TimeLimiter limiter(std::nullopt);
  const HolderSample held = holder("container:c1", 60s);
  RunRecord run;
  run.id = 7;
  run.key = held.key;
  run.start = kStart;
  EXPECT_EQ(limiter.observe({.when = kStart + 30s, .gpus = {}, .holders = {held}}, {run}).size(), 1U);  // warned
  EXPECT_TRUE(limiter.observe({.when = kStart + 35s, .gpus = {}, .holders = {}}, {run}).empty());       // engine silent
  EXPECT_TRUE(limiter.observe({.when = kStart + 40s, .gpus = {}, .holders = {held}}, {run}).empty());
  // Gone for good (its run ended): a new holder of the same key starts afresh.
  EXPECT_TRUE(limiter.observe({.when = kStart + 45s, .gpus = {}, .holders = {}}, {}).empty());
  EXPECT_EQ(limiter.observe({.when = kStart + 50s, .gpus = {}, .holders = {held}}, {run}).size(), 1U);
}

TEST(TimeLimiter, CountsFromTheSampleForARunTheTrackerDoesNotKnowYet) {
  TimeLimiter limiter(std::nullopt);
  const HolderSample held = holder("container:c1", 60s);
  const MachineSample sample{.when = kStart, .gpus = {}, .holders = {held}};
  EXPECT_TRUE(limiter.observe(sample, {}).empty());
}

TEST(TimeLimiter, AWallClockSteppedEitherWayMovesNoLimit) {
  // 9 h forward stopped every job at the next sample; back gave each the step's time again.
  TimeLimiter limiter(8h);
  const HolderSample held = holder("container:c1", std::nullopt);
  RunRecord run;
  run.id = 7;
  run.key = held.key;
  run.start = kStart;
  const auto steady = std::chrono::steady_clock::time_point{} + 1000h;
  const auto at = [&](std::chrono::seconds wall, std::chrono::seconds monotonic) {
    return limiter.observe({.when = kStart + wall, .gpus = {}, .holders = {held}, .monotonic = steady + monotonic},
                           {run});
  };
  EXPECT_TRUE(at(1h, 1h).empty());
  EXPECT_TRUE(at(10h, 1h + 10s).empty());               // stepped forward 9 h
  const auto warned = at(7h + 50min - 9h, 7h + 50min);  // stepped back 9 h since
  ASSERT_EQ(warned.size(), 1U);
  EXPECT_EQ(warned[0].kind, Kind::warn);
  EXPECT_EQ(warned[0].elapsed, 7h + 50min);
  const auto stopped = at(8h - 9h, 8h);
  ASSERT_EQ(stopped.size(), 1U);
  EXPECT_EQ(stopped[0].kind, Kind::stop);
}

}  // namespace
}  // namespace gpurun
