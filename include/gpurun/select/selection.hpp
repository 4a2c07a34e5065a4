#pragma once
// Decides which GPUs are free, scores them and picks the best N.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/gpu/gpu.hpp"
#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/units.hpp"

namespace gpurun {

struct Thresholds {
  double max_utilization_percent = 10.0;
  MemoryLimit max_memory;
};

struct GpuAssessment {
  Gpu gpu;
  bool free = false;
  double score = 0.0;                // 0 (idle) .. 100 (full); lower is better
  std::vector<std::string> reasons;  // why it is busy; empty when free
  std::vector<std::string> notes;    // facts worth showing that do not make it busy
  std::vector<Holder> holders;       // the reservations and containers holding it (processes: gpu.processes)
  bool withheld = false;             // the site policy forbids handing it out, even with allow_busy
  bool reserved = false;             // booked by another gpurun launch: never shared by memory
  bool processes_known = true;       // false: no process list was read (a snapshot without one)
  bool over_limits_alone = false;    // busy only by --max-util / --max-memory: raising them would free it
};

// The ranking score: the mean of memory used (% of total) and utilization (%). With one of them
// unknown, the other alone; with both unknown, 100 (ranked last).
double score(const Gpu& gpu);

// Assesses every GPU, in the order given. Where no GPU reports memory (unified memory, as on
// GB10), memory is not judged: processes and utilization decide, and a note says so.
std::vector<GpuAssessment> assess(const std::vector<Gpu>& gpus, const Thresholds& thresholds,
                                  const ExternalClaims& claims = {});
// The same for a snapshot's GPUs; without a process list, a note says processes were not checked.
std::vector<GpuAssessment> assess(const Snapshot& snapshot, const Thresholds& thresholds,
                                  const ExternalClaims& claims = {});

// What pick() found: the chosen GPUs, or a shortfall saying why there are too few.
struct PickResult {
  std::vector<GpuAssessment> chosen;  // in ascending index order; empty on a shortfall
  std::size_t available = 0;          // how many GPUs qualified
  bool waiting_can_help = true;       // false: the machine (or the site policy) has fewer than asked for
  std::string shortfall;              // what was wrong and what to do; empty when chosen

  bool ok() const { return shortfall.empty(); }
  // The chosen GPUs; on a shortfall, throws Error (exit 125) with its message. A temporary's
  // are moved out, so that `pick(...).gpus_or_throw()` never leaves a dangling reference.
  const std::vector<GpuAssessment>& gpus_or_throw() const&;
  std::vector<GpuAssessment> gpus_or_throw() &&;
};

struct PlacementHints;  // gpurun/select/placement.hpp

// Which busy GPUs a launch may share.
struct Sharing {
  bool any_busy = false;                      // --allow-busy: every GPU, ranked by score
  std::optional<double> min_free_memory_mib;  // --min-free-memory: busy GPUs with this much free
  bool allowed = true;                        // the site policy's allow_sharing (for the advice given)
  bool launch = true;                         // a launch's pick, which --wait makes wait (for the advice)
};

// The `count` lowest-scoring free GPUs (all GPUs when allow_busy, except those the site policy
// withholds and MIG-enabled ones, which are never handed out whole), ties broken by index. A
// shortfall lists every GPU and why it is not free. Throws Error only for a count below 1.
PickResult pick(const std::vector<GpuAssessment>& assessed, int count, bool allow_busy);
// The same, where the topology is known (the GPUs' NUMA nodes, links in `hints`): among equally
// free sets, the one gpurun/select/placement.hpp prefers.
PickResult pick(const std::vector<GpuAssessment>& assessed, int count, bool allow_busy, const PlacementHints& hints);
// The same with --min-free-memory: after every free GPU, the busy ones (not reserved by another
// launch) with at least that much memory free, most free first. Placement chooses among free GPUs
// only: a set that must share takes the freest memory instead.
PickResult pick(const std::vector<GpuAssessment>& assessed, int count, const Sharing& sharing,
                const PlacementHints& hints);

// All GPUs best first: free before busy, then by score, then index.
std::vector<GpuAssessment> ranked(std::vector<GpuAssessment> assessed);

}  // namespace gpurun
