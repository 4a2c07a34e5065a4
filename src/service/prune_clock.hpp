#pragma once
// The time gpurund prunes old samples and minutes by: the wall clock, but never further on than
// the steady clock has measured since gpurund started. A wall clock stepped forward (a year, by a
// mistyped date) would otherwise delete at the next write the history it skipped over; one set
// back keeps more for a while, which costs nothing. (A clock wrong before gpurund starts is not
// seen: a long downtime looks the same.)
#include <algorithm>
#include <chrono>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

class PruneClock {
 public:
  using Steady = std::chrono::steady_clock::time_point;
  explicit PruneClock(WallTime wall = std::chrono::system_clock::now(),
                      Steady steady = std::chrono::steady_clock::now())
      : started_wall_(wall), started_steady_(steady) {}

  WallTime now(WallTime wall = std::chrono::system_clock::now(),
               Steady steady = std::chrono::steady_clock::now()) const {
    return std::min(wall, started_wall_ + std::chrono::duration_cast<WallTime::duration>(steady - started_steady_));
  }

 private:
  WallTime started_wall_;
  Steady started_steady_;
};

}  // namespace gpurun
