#include "gpurun/select/placement.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "gpurun/gpu/topology.hpp"

namespace gpurun {
namespace {

// Beyond this many sets to compare, the ranking alone decides (hosts have 16 GPUs at most today:
// 16 choose 8 is 12870).
constexpr std::size_t kMaxSets = 20000;

using Set = std::vector<std::size_t>;  // positions in the ranking, ascending

std::size_t sets_capped(std::size_t n, std::size_t k) {
  std::size_t sets = 1;
  for (std::size_t i = 1; i <= k; ++i) {
    sets = sets * (n - k + i) / i;  // exact: a product of i consecutive numbers divides by i!
    if (sets > kMaxSets) return kMaxSets + 1;
  }
  return sets;
}

// Every `k`-subset of `pool`, each joined to `fixed`.
std::vector<Set> all_sets(const Set& fixed, const Set& pool, std::size_t k) {
  std::vector<Set> sets;
  std::vector<bool> taken(pool.size(), false);
  std::fill(taken.begin(), taken.begin() + static_cast<std::ptrdiff_t>(k), true);
  do {
    Set set = fixed;
    for (std::size_t i = 0; i < pool.size(); ++i)
      if (taken[i]) set.push_back(pool[i]);
    std::sort(set.begin(), set.end());
    sets.push_back(std::move(set));
  } while (std::prev_permutation(taken.begin(), taken.end()));
  return sets;
}

// Keeps the sets with the best (lowest) key.
template <typename Key>
void keep_best(std::vector<Set>& sets, Key key) {
  if (sets.size() < 2) return;
  auto best = key(sets.front());
  for (const Set& set : sets) best = std::min(best, key(set));
  std::erase_if(sets, [&](const Set& set) { return key(set) != best; });
}

class SetJudge {
 public:
  explicit SetJudge(const std::vector<GpuAssessment>& ranked) : ranked_(ranked) {}

  int node(std::size_t i) const { return ranked_[i].gpu.numa_node.value_or(-1); }
  // A socket unknown: its NUMA node stands for it.
  long socket(std::size_t i) const {
    const Gpu& g = ranked_[i].gpu;
    if (g.socket) return *g.socket;
    return g.numa_node ? 1'000'000L + *g.numa_node : -1L;
  }

  std::size_t nodes_spanned(const Set& set) const {
    std::set<int> nodes;
    for (std::size_t i : set) nodes.insert(node(i));
    return nodes.size();
  }

  // Higher is better, so negated for keep_best: the weakest link first, then all of them.
  std::pair<int, int> connection(const Set& set, const std::map<std::pair<int, int>, int>& ranks) const {
    int weakest = 1'000'000;
    int total = 0;
    for (std::size_t a = 0; a < set.size(); ++a)
      for (std::size_t b = a + 1; b < set.size(); ++b) {
        const int x = ranked_[set[a]].gpu.index;
        const int y = ranked_[set[b]].gpu.index;
        const auto it = ranks.find({std::min(x, y), std::max(x, y)});
        const int rank = it == ranks.end() ? 0 : it->second;
        weakest = std::min(weakest, rank);
        total += rank;
      }
    return {-weakest, -total};
  }

  // Candidates left in the sockets and nodes the set touches: fewer leaves more of them whole.
  std::pair<std::size_t, std::size_t> leftovers(const Set& set) const {
    std::set<long> sockets;
    std::set<int> nodes;
    for (std::size_t i : set) {
      sockets.insert(socket(i));
      nodes.insert(node(i));
    }
    std::size_t in_sockets = 0;
    std::size_t in_nodes = 0;
    for (std::size_t i = 0; i < ranked_.size(); ++i) {
      if (std::binary_search(set.begin(), set.end(), i)) continue;
      if (socket(i) != -1 && sockets.contains(socket(i))) ++in_sockets;
      if (node(i) != -1 && nodes.contains(node(i))) ++in_nodes;
    }
    return {in_sockets, in_nodes};
  }

  std::pair<double, std::vector<int>> freest(const Set& set) const {
    double total = 0;
    std::vector<int> indices;
    for (std::size_t i : set) {
      total += ranked_[i].score;
      indices.push_back(ranked_[i].gpu.index);
    }
    std::sort(indices.begin(), indices.end());
    return {total, indices};
  }

 private:
  const std::vector<GpuAssessment>& ranked_;
};

}  // namespace

std::vector<GpuAssessment> choose_gpu_set(const std::vector<GpuAssessment>& ranked, std::size_t count,
                                          const PlacementHints& hints) {
  const auto first = [&] {
    return std::vector<GpuAssessment>(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(count));
  };
  if (count == 0 || ranked.size() <= count) return first();
  const bool numa_known =
      std::any_of(ranked.begin(), ranked.end(), [](const GpuAssessment& a) { return a.gpu.numa_node.has_value(); });
  if (!numa_known && !hints.links) return first();

  // Those clearly freer than the last place are taken; the set is chosen among the rest that tie.
  const double boundary = ranked[count - 1].score;
  Set fixed;
  Set pool;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].score <= boundary - kEqualScoreMargin)
      fixed.push_back(i);
    else if (ranked[i].score < boundary + kEqualScoreMargin)
      pool.push_back(i);
  }
  const std::size_t k = count - fixed.size();
  if (pool.size() == k || sets_capped(pool.size(), k) > kMaxSets) return first();

  const SetJudge judge(ranked);
  std::vector<Set> sets = all_sets(fixed, pool, k);
  keep_best(sets, [&](const Set& s) { return judge.nodes_spanned(s); });
  if (sets.size() > 1 && count > 1 && hints.links) {
    std::map<std::pair<int, int>, int> ranks;
    for (const GpuLink& link : hints.links())
      ranks[{std::min(link.a, link.b), std::max(link.a, link.b)}] = link_rank(link.kind);
    if (!ranks.empty()) keep_best(sets, [&](const Set& s) { return judge.connection(s, ranks); });
  }
  keep_best(sets, [&](const Set& s) { return judge.leftovers(s); });
  keep_best(sets, [&](const Set& s) { return judge.freest(s); });

  std::vector<GpuAssessment> chosen;
  for (std::size_t i : sets.front()) chosen.push_back(ranked[i]);
  return chosen;
}

std::optional<CpuPlacement> cpu_placement(const std::vector<GpuAssessment>& chosen) {
  std::set<int> cpus;
  std::set<int> nodes;
  for (const GpuAssessment& a : chosen) {
    const auto local = parse_cpulist(a.gpu.local_cpus);
    if (!a.gpu.numa_node || !local) return std::nullopt;
    cpus.insert(local->begin(), local->end());
    nodes.insert(*a.gpu.numa_node);
  }
  if (cpus.empty()) return std::nullopt;
  return CpuPlacement{format_cpulist(cpus), format_cpulist(nodes)};
}

}  // namespace gpurun
