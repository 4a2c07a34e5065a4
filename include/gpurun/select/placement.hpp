#pragma once
// Placement that follows the host's topology: which of several equally free GPU sets to take,
// and the CPUs and memory nodes the container gets with them.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/gpu/snapshot.hpp"
#include "gpurun/select/selection.hpp"

namespace gpurun {

// What pick() may ask about the topology besides what each GPU knows (its NUMA node, socket).
struct PlacementHints {
  // The links between GPUs; called at most once, and only when N > 1 and sets still tie after
  // the NUMA nodes (asking `nvidia-smi topo -m` costs a process). Empty: links unknown.
  std::function<std::vector<GpuLink>()> links;
};

// GPUs whose scores differ by less than this (points of 100) count as equally free.
inline constexpr double kEqualScoreMargin = 1.0;

// From `ranked` (the candidates, best first, at least `count`), the set to hand out, in ranking
// order. The first `count` by rank, unless the topology is known (a GPU's NUMA node, or links)
// and the last places tie within kEqualScoreMargin: then, among the sets of equally free GPUs,
// the one spanning the fewest NUMA nodes, then the best connected (weakest link, then all
// links), then the one leaving the most whole sockets and nodes free (taking from where GPUs
// are in use already), then the freest, then the lowest indices.
std::vector<GpuAssessment> choose_gpu_set(const std::vector<GpuAssessment>& ranked, std::size_t count,
                                          const PlacementHints& hints);

// The container's CPUs and memory nodes: the union of the chosen GPUs' local CPUs, and their
// NUMA nodes ("1,3"). nullopt when any chosen GPU's node or CPUs are unknown.
struct CpuPlacement {
  std::string cpus;  // --cpuset-cpus
  std::string mems;  // --cpuset-mems
};
std::optional<CpuPlacement> cpu_placement(const std::vector<GpuAssessment>& chosen);

}  // namespace gpurun
