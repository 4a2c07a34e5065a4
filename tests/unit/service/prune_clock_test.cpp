// Unit tests for the time gpurund prunes its store by (src/service/prune_clock.hpp): a wall clock
// stepped forward moves it only as far as the steady clock measured; one set back, back with it.
#include "prune_clock.hpp"

#include <gtest/gtest.h>

namespace gpurun {
namespace {

using namespace std::chrono_literals;

const WallTime kWall = WallTime{} + 1'764'000'000s;
const PruneClock::Steady kSteady = PruneClock::Steady{} + 1000s;

TEST(PruneClock, FollowsTheWallClockWhileBothClocksAgree) {
  const PruneClock clock(kWall, kSteady);
  EXPECT_EQ(clock.now(kWall, kSteady), kWall);
  EXPECT_EQ(clock.now(kWall + 1h, kSteady + 1h), kWall + 1h);
}

TEST(PruneClock, AWallClockSteppedForwardMovesItOnlyAsFarAsTheSteadyClockMeasured) {
  const PruneClock clock(kWall, kSteady);
  EXPECT_EQ(clock.now(kWall + 24h * 365, kSteady + 1h), kWall + 1h);  // a year ahead by mistake
}

TEST(PruneClock, AWallClockSetBackSetsItBack) {
  const PruneClock clock(kWall, kSteady);
  EXPECT_EQ(clock.now(kWall - 2h, kSteady + 1h), kWall - 2h);
}

}  // namespace
}  // namespace gpurun
