#pragma once
// MIG instances as the units gpurun hands out (--mig): each instance becomes a Gpu of its own,
// named by its MIG UUID, which reservations, container awareness and docker's --gpus use.
#include <string>
#include <vector>

#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/select/selection.hpp"

namespace gpurun {

// What NVML cannot say per instance, shown instead of a made-up 0 %.
inline constexpr const char* kMigUtilizationNote = "utilization n/a (NVML has none per instance)";

// The snapshot's MIG instances as units, numbered 0.. in the snapshot's order (GPU, then slot).
// Utilization is missing: NVML has none per instance.
std::vector<Gpu> mig_units(const Snapshot& snapshot);

// Whether an instance of profile `have` serves a request for `want` ("any" takes every
// profile); with `allow_larger`, one with at least as many slices and as much memory does.
bool profile_serves(const std::string& have, const std::string& want, bool allow_larger);

// The `count` best free units that serve `profile`, the smallest profile that fits first (the
// requested one before larger ones). Ranking and the shortfall as pick()'s.
PickResult pick_mig(const std::vector<GpuAssessment>& units, int count, const std::string& profile, bool allow_larger,
                    bool allow_busy);

}  // namespace gpurun
