// Unit tests for GPU selection: score(), assess(), pick() and ranked().
#include "gpurun/select/selection.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gpurun/select/placement.hpp"
#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::make_gpu;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr std::nullopt_t N = std::nullopt;

Gpu idle_gpu(int index) { return make_gpu(index, 4, 81920, 0); }

Claim claim(std::string reason) { return {.reason = std::move(reason), .holder = {}}; }

GpuAssessment assess_one(const Gpu& gpu, const Thresholds& thresholds = {}, const ExternalClaims& claims = {}) {
  const auto assessed = assess({gpu}, thresholds, claims);
  EXPECT_EQ(assessed.size(), 1u);
  return assessed.front();
}

std::vector<int> indices_of(const std::vector<GpuAssessment>& assessed) {
  std::vector<int> indices;
  for (const auto& a : assessed) indices.push_back(a.gpu.index);
  return indices;
}

// A hand-made assessment, to drive pick() and ranked() with exact scores.
GpuAssessment assessment(int index, double score, bool free, std::vector<std::string> reasons = {}) {
  GpuAssessment a;
  a.gpu = idle_gpu(index);
  a.score = score;
  a.free = free;
  a.reasons = std::move(reasons);
  if (!free && a.reasons.empty()) a.reasons.push_back("busy for a test");
  return a;
}

// ---------------------------------------------------------------------------------------------
// score()

TEST(Score, IsTheMeanOfMemoryPercentAndUtilization) {
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 20, 100, 40)), 30.0);
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 40960, 81920, 0)), 25.0);
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 0, 81920, 0)), 0.0);
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 81920, 81920, 100)), 100.0);
}

TEST(Score, MemoryAloneWhenUtilizationIsMissing) { EXPECT_DOUBLE_EQ(score(make_gpu(0, 20, 100, N)), 20.0); }

TEST(Score, UtilizationAloneWhenMemoryIsMissing) {
  EXPECT_DOUBLE_EQ(score(make_gpu(0, N, 100, 40)), 40.0);
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 20, N, 40)), 40.0);
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 20, 0, 40)), 40.0);  // a zero total gives no percentage
}

TEST(Score, HundredWhenBothAreMissing) {
  EXPECT_DOUBLE_EQ(score(make_gpu(0, N, N, N)), 100.0);
  EXPECT_DOUBLE_EQ(score(make_gpu(0, 5, N, N)), 100.0);
}

TEST(Score, OutOfRangeReadingsAreClampedTo0To100) { EXPECT_DOUBLE_EQ(score(make_gpu(0, 200, 100, 150)), 100.0); }

// ---------------------------------------------------------------------------------------------
// assess()

TEST(Assess, IdleGpuIsFreeWithNoReasonsOrNotes) {
  const GpuAssessment a = assess_one(idle_gpu(2));
  EXPECT_TRUE(a.free);
  EXPECT_THAT(a.reasons, IsEmpty());
  EXPECT_THAT(a.notes, IsEmpty());
  EXPECT_DOUBLE_EQ(a.score, (100.0 * 4 / 81920 + 0) / 2);
  EXPECT_EQ(a.gpu.index, 2);
  EXPECT_EQ(a.gpu.uuid, "GPU-2");
}

TEST(Assess, AProcessAtZeroMibMakesTheGpuBusy) {
  Gpu gpu = make_gpu(3, 0, 81920, 0);
  gpu.processes.push_back({"GPU-3", 52771, 0.0, {}});
  const GpuAssessment a = assess_one(gpu);
  EXPECT_FALSE(a.free);
  EXPECT_THAT(a.reasons, ElementsAre("1 compute process (pid 52771)"));
}

TEST(Assess, SeveralProcessesAreListedWithTheirPids) {
  Gpu gpu = idle_gpu(1);
  gpu.processes.push_back({"GPU-1", 48213, 77824.0, {}});
  gpu.processes.push_back({"GPU-1", 51022, std::nullopt, {}});
  EXPECT_THAT(assess_one(gpu).reasons, ElementsAre("2 compute processes (pids 48213, 51022)"));
}

TEST(Assess, MigEnabledGpuIsBusy) {
  Gpu gpu = make_gpu(1, 0, 40960, N);
  gpu.mig_enabled = true;
  const GpuAssessment a = assess_one(gpu);
  EXPECT_FALSE(a.free);
  EXPECT_THAT(a.reasons, ElementsAre("MIG mode is enabled (not offered as a whole GPU)"));
}

TEST(Assess, MissingMemoryUseMakesTheGpuBusy) {
  const GpuAssessment a = assess_one(make_gpu(1, N, 81920, 0));
  EXPECT_FALSE(a.free);
  EXPECT_THAT(a.reasons, ElementsAre("memory use unknown"));
}

TEST(Assess, MissingTotalMakesAPercentLimitUncheckable) {
  const GpuAssessment a = assess_one(make_gpu(1, 4, N, 0));
  EXPECT_FALSE(a.free);
  EXPECT_THAT(a.reasons, ElementsAre("total memory unknown, so the % limit cannot be checked"));
}

TEST(Assess, MissingUtilizationFallsBackToMemoryWithANote) {
  const GpuAssessment ok = assess_one(make_gpu(0, 4, 81920, N));
  EXPECT_TRUE(ok.free);
  EXPECT_THAT(ok.reasons, IsEmpty());
  EXPECT_THAT(ok.notes, ElementsAre("utilization unknown: judged by memory alone"));

  const GpuAssessment full = assess_one(make_gpu(0, 60000, 81920, N));
  EXPECT_FALSE(full.free);
  EXPECT_THAT(full.reasons, ElementsAre(HasSubstr("memory used 60000 MiB")));
  EXPECT_THAT(full.notes, ElementsAre("utilization unknown: judged by memory alone"));
}

TEST(Assess, UtilizationOverTheLimitIsBusyAndAtTheLimitIsFree) {
  const GpuAssessment over = assess_one(make_gpu(0, 4, 81920, 11));
  EXPECT_FALSE(over.free);
  EXPECT_THAT(over.reasons, ElementsAre("utilization 11% > limit 10%"));
  EXPECT_TRUE(assess_one(make_gpu(0, 4, 81920, 10)).free);

  Thresholds strict;
  strict.max_utilization_percent = 0;
  EXPECT_THAT(assess_one(make_gpu(0, 4, 81920, 1), strict).reasons, ElementsAre("utilization 1% > limit 0%"));
}

TEST(Assess, PercentMemoryLimitIsAShareOfEachGpusTotal) {
  // 10% of 81920 MiB is 8192 MiB.
  EXPECT_TRUE(assess_one(make_gpu(0, 8192, 81920, 0)).free);
  EXPECT_THAT(assess_one(make_gpu(0, 8193, 81920, 0)).reasons,
              ElementsAre("memory used 8193 MiB > limit 8192 MiB (10% of 81920 MiB)"));
}

TEST(Assess, AbsoluteMibLimitIgnoresTheTotal) {
  Thresholds t;
  t.max_memory = {MemoryLimit::Kind::mib, 500};
  EXPECT_TRUE(assess_one(make_gpu(0, 500, 81920, 0), t).free);
  EXPECT_TRUE(assess_one(make_gpu(0, 500, N, 0), t).free);
  const GpuAssessment over = assess_one(make_gpu(0, 501, 81920, 0), t);
  EXPECT_FALSE(over.free);
  EXPECT_THAT(over.reasons, ElementsAre("memory used 501 MiB > limit 500 MiB"));
}

TEST(Assess, ExternalClaimReasonsAreShown) {
  const ExternalClaims claims{
      {1,
       {claim("reserved by alice until 18:00"),
        {.reason = "in container alice_gpu1_0123abcd",
         .holder = Holder{.kind = Holder::Kind::container, .user = "alice", .name = "alice_gpu1_0123abcd"}}}}};
  const auto assessed = assess({idle_gpu(0), idle_gpu(1)}, Thresholds{}, claims);
  ASSERT_EQ(assessed.size(), 2u);
  EXPECT_TRUE(assessed[0].free);
  EXPECT_THAT(assessed[0].reasons, IsEmpty());
  EXPECT_FALSE(assessed[1].free);
  EXPECT_THAT(assessed[1].reasons, ElementsAre("reserved by alice until 18:00", "in container alice_gpu1_0123abcd"));
  ASSERT_EQ(assessed[1].holders.size(), 1u);  // the claim that names one
  EXPECT_EQ(assessed[1].holders[0].user, "alice");
}

TEST(Assess, ClaimsAreMatchedByIndexNotUuid) {
  Gpu no_uuid = idle_gpu(4);
  no_uuid.uuid.clear();
  EXPECT_THAT(assess_one(no_uuid, Thresholds{}, ExternalClaims{{4, {claim("claimed")}}}).reasons,
              ElementsAre("claimed"));
  EXPECT_TRUE(assess_one(idle_gpu(4), Thresholds{}, ExternalClaims{{5, {claim("claimed")}}}).free);
}

TEST(Assess, EveryReasonIsListed) {
  Gpu gpu = make_gpu(4, 70000, 81920, 95);
  gpu.mig_enabled = true;
  gpu.processes.push_back({"GPU-4", 7, 70000.0, {}});
  const GpuAssessment a = assess_one(gpu, Thresholds{}, ExternalClaims{{4, {claim("in container job-7")}}});
  EXPECT_THAT(a.reasons, ElementsAre("MIG mode is enabled (not offered as a whole GPU)", "in container job-7",
                                     "1 compute process (pid 7)", HasSubstr("memory used 70000 MiB > limit"),
                                     "utilization 95% > limit 10%"));
}

TEST(Assess, KeepsTheInputOrder) {
  const auto assessed = assess({idle_gpu(5), idle_gpu(1), idle_gpu(3)}, Thresholds{});
  EXPECT_THAT(indices_of(assessed), ElementsAre(5, 1, 3));
}

// ---------------------------------------------------------------------------------------------
// pick() and ranked()

TEST(Pick, TakesTheLowestScoresAndReturnsThemByIndex) {
  const std::vector<GpuAssessment> assessed{assessment(0, 9, true), assessment(1, 2, true), assessment(2, 5, true),
                                            assessment(6, 0.5, true)};
  const auto chosen = pick(assessed, 2, false).gpus_or_throw();
  EXPECT_THAT(indices_of(chosen), ElementsAre(1, 6));
  EXPECT_DOUBLE_EQ(chosen[0].score, 2);
  EXPECT_DOUBLE_EQ(chosen[1].score, 0.5);
}

TEST(Pick, TiesAreBrokenByIndex) {
  const std::vector<GpuAssessment> assessed{assessment(5, 1, true), assessment(7, 1, true), assessment(2, 1, true),
                                            assessment(0, 3, true)};
  EXPECT_THAT(indices_of(pick(assessed, 2, false).gpus_or_throw()), ElementsAre(2, 5));
  EXPECT_THAT(indices_of(pick(assessed, 1, false).gpus_or_throw()), ElementsAre(2));
}

TEST(Pick, NeverTakesABusyGpuWithoutAllowBusy) {
  const std::vector<GpuAssessment> assessed{assessment(0, 5, true), assessment(1, 0, false)};
  EXPECT_THAT(indices_of(pick(assessed, 1, false).gpus_or_throw()), ElementsAre(0));
}

TEST(Pick, AllowBusyRanksAllGpusByScore) {
  const std::vector<GpuAssessment> assessed{assessment(0, 90, false), assessment(1, 60, false), assessment(2, 5, true),
                                            assessment(3, 0, false)};
  EXPECT_THAT(indices_of(pick(assessed, 2, true).gpus_or_throw()), ElementsAre(2, 3));
  EXPECT_THAT(indices_of(pick(assessed, 3, true).gpus_or_throw()), ElementsAre(1, 2, 3));
  EXPECT_THAT(indices_of(pick(assessed, 4, true).gpus_or_throw()), ElementsAre(0, 1, 2, 3));
}

TEST(Pick, AllowBusyStillNeedsEnoughGpus) {
  const auto e = test::caught_error([] {
    pick({assessment(0, 90, false), assessment(1, 5, true)}, 3, true).gpus_or_throw();
  });
  EXPECT_EQ(e.exit_code, exit_code::failure);
  EXPECT_THAT(e.message, AllOf(HasSubstr("3"), HasSubstr("has 2")));
}

TEST(Pick, TooFewFreeGpusListsEveryGpuAndWhy) {
  std::vector<Gpu> gpus{make_gpu(0, 78120, 81920, 100), make_gpu(1, 4, 81920, 0), make_gpu(2, 4, 81920, 0),
                        make_gpu(3, 7, 81920, 0)};
  gpus[2].mig_enabled = true;
  gpus[3].processes.push_back({"GPU-3", 4242, 0.0, {}});
  const auto assessed = assess(gpus, Thresholds{});

  const auto e = test::caught_error([&] { pick(assessed, 2, false).gpus_or_throw(); });
  EXPECT_EQ(e.exit_code, 125);
  const std::string message = e.message;
  EXPECT_THAT(message, HasSubstr("need 2 free GPUs but 1 of 4 is free"));
  EXPECT_THAT(message, HasSubstr("GPU 0"));
  EXPECT_THAT(message, HasSubstr("utilization 100% > limit 10%"));
  EXPECT_THAT(message, HasSubstr("GPU 1"));
  EXPECT_THAT(message, HasSubstr("free"));
  EXPECT_THAT(message, HasSubstr("GPU 2"));
  EXPECT_THAT(message, HasSubstr("MIG mode is enabled"));
  EXPECT_THAT(message, HasSubstr("GPU 3"));
  EXPECT_THAT(message, HasSubstr("1 compute process (pid 4242)"));
  EXPECT_THAT(message, HasSubstr("--allow-busy"));
  EXPECT_THAT(message, HasSubstr("NVIDIA A100-SXM4-80GB"));
}

TEST(Pick, NoFreeGpuAtAllIsAnError) {
  const auto e = test::caught_error(
      [] { pick({assessment(0, 90, false, {"utilization 90% > limit 10%"})}, 1, false).gpus_or_throw(); });
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_THAT(e.message, AllOf(HasSubstr("0 of 1"), HasSubstr("GPU 0"), HasSubstr("utilization 90% > limit 10%")));
}

TEST(Pick, CountMustBePositive) {
  const std::vector<GpuAssessment> assessed{assessment(0, 0, true)};
  for (int count : {0, -1}) {
    const auto e = test::caught_error([&] { pick(assessed, count, false); });
    EXPECT_EQ(e.exit_code, exit_code::failure);
    EXPECT_THAT(e.message, HasSubstr("positive")) << count;
  }
  EXPECT_EQ(test::caught_error([&] { pick(assessed, 0, true); }).exit_code, exit_code::failure);
}

// ---------------------------------------------------------------------------------------------
// pick() with --min-free-memory

Sharing by_memory(double mib) { return {.any_busy = false, .min_free_memory_mib = mib, .allowed = true}; }

// GPU 0 idle, GPU 1 busy with 60 GiB free, GPU 2 busy with 30 GiB free, GPU 3 busy with 5 GiB free.
std::vector<GpuAssessment> mixed_machine() {
  return assess({make_gpu(0, 4, 81920, 0), make_gpu(1, 20480, 81920, 97), make_gpu(2, 51200, 81920, 40),
                 make_gpu(3, 76800, 81920, 99)},
                Thresholds{});
}

TEST(PickSharing, IdleGpusComeFirst) {
  const PickResult result = pick(mixed_machine(), 1, by_memory(20 * 1024.0), PlacementHints{});
  ASSERT_TRUE(result.ok()) << result.shortfall;
  EXPECT_THAT(indices_of(result.chosen), ElementsAre(0));
}

TEST(PickSharing, ThenTheBusyGpusWithMostMemoryFree) {
  const PickResult result = pick(mixed_machine(), 3, by_memory(20 * 1024.0), PlacementHints{});
  ASSERT_TRUE(result.ok()) << result.shortfall;
  EXPECT_THAT(indices_of(result.chosen), ElementsAre(0, 1, 2));
  const PickResult two = pick(mixed_machine(), 2, by_memory(20 * 1024.0), PlacementHints{});
  EXPECT_THAT(indices_of(two.chosen), ElementsAre(0, 1));
}

TEST(PickSharing, ABusyGpuWithLessFreeThanAskedIsNoCandidate) {
  const PickResult result = pick(mixed_machine(), 4, by_memory(20 * 1024.0), PlacementHints{});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.available, 3u);
  EXPECT_THAT(result.shortfall, HasSubstr("No busy GPU has 20480 MiB free"));
  EXPECT_THAT(result.shortfall, Not(HasSubstr("--min-free-memory SIZE")));  // given already
}

TEST(PickSharing, AGpuReservedByAnotherLaunchIsNeverShared) {
  ExternalClaims claims;
  claims[1].push_back({.reason = "reserved by another gpurun launch",
                       .holder = Holder{.kind = Holder::Kind::reservation, .user = "bob", .name = "gpurun"}});
  claims[2].push_back(claim("its reservation file cannot be used: denied"));
  const auto assessed =
      assess({make_gpu(0, 20480, 81920, 97), make_gpu(1, 0, 81920, 0), make_gpu(2, 0, 81920, 0)}, Thresholds{}, claims);
  const PickResult result = pick(assessed, 1, by_memory(1024.0), PlacementHints{});
  ASSERT_TRUE(result.ok()) << result.shortfall;
  EXPECT_THAT(indices_of(result.chosen), ElementsAre(0));
  EXPECT_FALSE(pick(assessed, 2, by_memory(1024.0), PlacementHints{}).ok());
}

TEST(PickSharing, AContainerHolderCanBeShared) {
  ExternalClaims claims;
  claims[0].push_back({.reason = "in use by container x (alice)",
                       .holder = Holder{.kind = Holder::Kind::container, .user = "alice", .name = "x"}});
  const auto assessed = assess({make_gpu(0, 20480, 81920, 97)}, Thresholds{}, claims);
  EXPECT_TRUE(pick(assessed, 1, by_memory(1024.0), PlacementHints{}).ok());
}

TEST(PickSharing, UnknownMemoryIsNeverShared) {
  const auto assessed = assess({make_gpu(0, N, 81920, 97)}, Thresholds{});
  EXPECT_FALSE(pick(assessed, 1, by_memory(1.0), PlacementHints{}).ok());
}

TEST(PickAdvice, OneGpuIsNotToldToAskForFewer) {
  const auto busy = assess({make_gpu(0, 20480, 81920, 97)}, Thresholds{});
  const PickResult one = pick(busy, 1, false);
  EXPECT_THAT(one.shortfall, Not(HasSubstr("fewer")));
  EXPECT_THAT(one.shortfall, HasSubstr("--wait 30m"));
  EXPECT_THAT(one.shortfall, HasSubstr("--min-free-memory SIZE"));
  const auto two_busy = assess({make_gpu(0, 20480, 81920, 97), make_gpu(1, 4, 81920, 0)}, Thresholds{});
  EXPECT_THAT(pick(two_busy, 2, false).shortfall, HasSubstr("You can ask for fewer GPUs"));
}

// No limit frees a GPU that has a process, or one reserved: raising them is offered only where
// a GPU is busy by the limits alone; and with none free, fewer GPUs would not help either.
TEST(PickAdvice, OnlyWhatCouldHelpIsOffered) {
  Gpu with_process = make_gpu(0, 20480, 81920, 97);
  with_process.processes = {{"GPU-0", 42, 20480.0, {}}};
  Gpu other = make_gpu(1, 20480, 81920, 97);
  other.processes = {{"GPU-1", 43, 20480.0, {}}};
  const PickResult held = pick(assess({with_process, other}, Thresholds{}), 2, false);
  EXPECT_THAT(held.shortfall, Not(HasSubstr("--max-util")));
  EXPECT_THAT(held.shortfall, Not(HasSubstr("fewer")));  // none free: one GPU is as far off as two
  EXPECT_THAT(held.shortfall, HasSubstr("--wait 30m"));
  const PickResult by_limits = pick(assess({make_gpu(0, 20480, 81920, 97)}, Thresholds{}), 1, false);
  EXPECT_THAT(by_limits.shortfall, HasSubstr("raise --max-util / --max-memory"));
}

TEST(PickAdvice, SharingIsNotSuggestedWhereThePolicyForbidsIt) {
  const auto busy = assess({make_gpu(0, 20480, 81920, 97)}, Thresholds{});
  const PickResult result =
      pick(busy, 1, Sharing{.any_busy = false, .min_free_memory_mib = std::nullopt, .allowed = false, .launch = true},
           PlacementHints{});
  EXPECT_THAT(result.shortfall, Not(HasSubstr("--allow-busy")));
  EXPECT_THAT(result.shortfall, Not(HasSubstr("--min-free-memory")));
}

TEST(Ranked, FreeFirstThenScoreThenIndex) {
  const std::vector<GpuAssessment> assessed{assessment(0, 50, false), assessment(1, 9, true), assessment(2, 0, false),
                                            assessment(3, 1, true),   assessment(4, 9, true), assessment(5, 50, false)};
  EXPECT_THAT(indices_of(ranked(assessed)), ElementsAre(3, 1, 4, 2, 0, 5));
}

TEST(Ranked, EmptyStaysEmpty) { EXPECT_THAT(ranked({}), IsEmpty()); }

}  // namespace
}  // namespace gpurun
