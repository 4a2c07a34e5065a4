#pragma once
// A detached job's container stays when its job ends, so that its user can read its output
// (gpurun logs) and how it ended; the service removes it once it has been ended for the site's
// keep_ended_containers_days (7 by default), as --rm would have at once. Only containers a launch
// of gpurun's labelled (never a plain `docker run`'s, nor one whose image alone carries the
// labels), never a running one, and never sooner than the clock the service has measured allows
// (a wall clock stepped forward would otherwise remove every ended container at once).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gpurun/engine/container_engine.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "prune_clock.hpp"

namespace gpurun {

// The containers of `all` (a listing of every container, ended ones too) whose job ended at
// least `keep` before `now`: an ended one is timed from its job's end, one that never started
// from its making.
std::vector<GpuContainer> ended_containers_due(const std::vector<GpuContainer>& all, WallTime now,
                                               std::chrono::seconds keep);

class EndedContainerSweeper {
 public:
  // `every`: how often the engine is asked for every container (the first time at once).
  // `budget`: how long one sweep may begin removals (the recorder's sampling waits meanwhile);
  // what is left goes at the next call.
  explicit EndedContainerSweeper(std::chrono::seconds keep, std::chrono::seconds every = std::chrono::hours(1),
                                 std::chrono::seconds budget = std::chrono::seconds(5))
      : keep_(keep), every_(every), budget_(budget) {}

  // Removes what is due, where the last sweep is `every` ago (or left some); logs what it removed
  // and what it could not. Begins nothing more once `stopping` holds. Never throws: a sweep that
  // fails is tried again at the next.
  void sweep_if_due(ContainerEngine& engine, std::chrono::milliseconds timeout,
                    const std::function<bool()>& stopping = {});

 private:
  std::chrono::seconds keep_;
  std::chrono::seconds every_;
  std::chrono::seconds budget_;
  PruneClock clock_;
  std::chrono::steady_clock::time_point last_{};
  bool swept_ = false;
  bool more_ = false;  // the last sweep left some for the budget
};

}  // namespace gpurun
