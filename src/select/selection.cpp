#include "gpurun/select/selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gpurun/select/placement.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

std::optional<double> memory_used_percent(const Gpu& gpu) {
  if (!gpu.memory_used_mib || !gpu.memory_total_mib || *gpu.memory_total_mib <= 0) return std::nullopt;
  return std::clamp(100.0 * *gpu.memory_used_mib / *gpu.memory_total_mib, 0.0, 100.0);
}

std::string describe_processes(const std::vector<GpuProcess>& processes) {
  std::vector<long> pids;
  pids.reserve(processes.size());
  for (const auto& p : processes) pids.push_back(p.pid);
  return fmt::format("{} compute process{} (pid{} {})", processes.size(), processes.size() == 1 ? "" : "es",
                     processes.size() == 1 ? "" : "s", fmt::join(pids, ", "));
}

bool ranks_before(const GpuAssessment& a, const GpuAssessment& b) {
  if (a.score != b.score) return a.score < b.score;
  return a.gpu.index < b.gpu.index;
}

std::optional<double> memory_free_mib(const Gpu& gpu) {
  if (!gpu.memory_used_mib || !gpu.memory_total_mib || *gpu.memory_total_mib <= 0) return std::nullopt;
  return std::max(0.0, *gpu.memory_total_mib - *gpu.memory_used_mib);
}

// What the user can do about too few GPUs: only what could help, and only what is allowed.
std::string advice(const std::vector<GpuAssessment>& assessed, int count, std::size_t available,
                   const Sharing& sharing) {
  std::vector<std::string> ways;
  if (count > 1 && available > 0) ways.emplace_back("ask for fewer GPUs");
  ways.emplace_back(sharing.launch ? "wait for them with --wait (--wait 30m)"
                                   : "launch with --wait, which waits for them (gpurun --wait 30m N -- CMD)");
  // Only where a GPU is busy by the limits alone: no limit makes a GPU with a process free.
  if (std::any_of(assessed.begin(), assessed.end(),
                  [](const GpuAssessment& a) { return a.over_limits_alone && !a.withheld && !a.gpu.mig_enabled; }))
    ways.emplace_back("raise --max-util / --max-memory");
  if (sharing.allowed && !sharing.min_free_memory_mib)
    ways.emplace_back("share a busy GPU knowingly with --min-free-memory SIZE (20GiB) or --allow-busy");
  std::string joined;
  for (std::size_t i = 0; i < ways.size(); ++i)
    joined += (i == 0 ? "" : i + 1 == ways.size() ? ", or " : ", ") + ways[i];
  return "You can " + joined + " (`gpurun status` shows the details).";
}

std::string too_few_message(const std::vector<GpuAssessment>& assessed, int count, std::size_t available,
                            const Sharing& sharing) {
  std::string message = fmt::format("need {} free GPU{} but {} of {} {} free:", count, count == 1 ? "" : "s", available,
                                    assessed.size(), available == 1 ? "is" : "are");
  for (const GpuAssessment& a : assessed) {
    const std::string state = a.free ? "free" : "busy: " + fmt::format("{}", fmt::join(a.reasons, "; "));
    message += fmt::format("\n  GPU {:<2} {:<24} {}", a.gpu.index, a.gpu.name.empty() ? "?" : a.gpu.name, state);
  }
  if (sharing.min_free_memory_mib)
    message += fmt::format("\nNo busy GPU has {:g} MiB free (--min-free-memory) and is not reserved by another launch.",
                           *sharing.min_free_memory_mib);
  return message + "\n" + advice(assessed, count, available, sharing);
}

}  // namespace

double score(const Gpu& gpu) {
  const auto memory = memory_used_percent(gpu);
  const auto util =
      gpu.utilization_percent ? std::optional(std::clamp(*gpu.utilization_percent, 0.0, 100.0)) : std::nullopt;
  if (memory && util) return (*memory + *util) / 2.0;
  if (memory) return *memory;
  if (util) return *util;
  return 100.0;
}

namespace {

std::vector<GpuAssessment> assess_gpus(const std::vector<Gpu>& gpus, const Thresholds& thresholds,
                                       const ExternalClaims& claims, bool processes_known) {
  // No GPU reporting memory is the device's design (unified memory, GB10), not a glitch of one GPU.
  const bool memory_unreported = !gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [](const Gpu& g) {
    return !g.memory_used_mib && !g.memory_total_mib;
  });
  std::vector<GpuAssessment> assessed;
  assessed.reserve(gpus.size());
  for (const Gpu& gpu : gpus) {
    GpuAssessment a{.gpu = gpu,
                    .free = false,
                    .score = score(gpu),
                    .reasons = {},
                    .notes = {},
                    .holders = {},
                    .withheld = false,
                    .reserved = false,
                    .processes_known = processes_known,
                    .over_limits_alone = false};
    if (gpu.mig_enabled) a.reasons.emplace_back("MIG mode is enabled (not offered as a whole GPU)");
    if (const auto found = claims.find(gpu.index); found != claims.end())
      for (const Claim& claim : found->second) {
        a.reasons.push_back(claim.reason);
        if (claim.holder) a.holders.push_back(*claim.holder);
        if (!claim.holder || claim.holder->kind != Holder::Kind::container) a.reserved = true;
      }
    // A process at 0 MiB has just started: the GPU is taken all the same.
    if (!gpu.processes.empty()) a.reasons.push_back(describe_processes(gpu.processes));
    if (!processes_known) a.notes.emplace_back("processes not checked: the snapshot has no process list");

    std::size_t limits_exceeded = 0;  // of the reasons, those --max-memory and --max-util give
    if (!gpu.memory_used_mib) {
      if (memory_unreported && gpu.utilization_percent)
        a.notes.emplace_back(
            fmt::format("memory could not be judged, the driver reports none (unified memory): "
                        "judged by {}utilization",
                        processes_known ? "processes and " : ""));
      else
        a.reasons.emplace_back("memory use unknown");
    } else if (thresholds.max_memory.kind == MemoryLimit::Kind::mib) {
      if (*gpu.memory_used_mib > thresholds.max_memory.value) {
        a.reasons.push_back(
            fmt::format("memory used {:g} MiB > limit {:g} MiB", *gpu.memory_used_mib, thresholds.max_memory.value));
        ++limits_exceeded;
      }
    } else if (!gpu.memory_total_mib || *gpu.memory_total_mib <= 0) {
      a.reasons.emplace_back("total memory unknown, so the % limit cannot be checked");
    } else if (const double limit = *gpu.memory_total_mib * thresholds.max_memory.value / 100.0;
               *gpu.memory_used_mib > limit) {
      a.reasons.push_back(fmt::format("memory used {:g} MiB > limit {:g} MiB ({:g}% of {:g} MiB)", *gpu.memory_used_mib,
                                      limit, thresholds.max_memory.value, *gpu.memory_total_mib));
      ++limits_exceeded;
    }

    if (!gpu.utilization_percent) {
      a.notes.emplace_back("utilization unknown: judged by memory alone");
    } else if (*gpu.utilization_percent > thresholds.max_utilization_percent) {
      a.reasons.push_back(
          fmt::format("utilization {:g}% > limit {:g}%", *gpu.utilization_percent, thresholds.max_utilization_percent));
      ++limits_exceeded;
    }
    a.free = a.reasons.empty();
    a.over_limits_alone = !a.free && a.reasons.size() == limits_exceeded;
    assessed.push_back(std::move(a));
  }
  return assessed;
}

// The shortfall when fewer GPUs may ever be handed out than asked for: withheld by the site
// policy, or MIG-enabled (never handed out whole).
std::string too_few_offered(const std::vector<GpuAssessment>& assessed, int count, std::size_t offered) {
  const auto mig = static_cast<std::size_t>(std::count_if(
      assessed.begin(), assessed.end(), [](const GpuAssessment& a) { return !a.withheld && a.gpu.mig_enabled; }));
  const std::size_t withheld = assessed.size() - offered - mig;
  if (mig == 0)
    return fmt::format("need {} GPUs but this machine has {}, of which the site policy lets gpurun hand out {}", count,
                       assessed.size(), offered);
  return fmt::format(
      "need {} GPUs but this machine has {}, of which gpurun can hand out {} ({} {} MIG enabled and {} "
      "never handed out whole{})",
      count, assessed.size(), offered, mig, mig == 1 ? "has" : "have", mig == 1 ? "is" : "are",
      withheld > 0 ? fmt::format("; the site policy withholds {}", withheld) : "");
}

}  // namespace

std::vector<GpuAssessment> assess(const std::vector<Gpu>& gpus, const Thresholds& thresholds,
                                  const ExternalClaims& claims) {
  return assess_gpus(gpus, thresholds, claims, true);
}

std::vector<GpuAssessment> assess(const Snapshot& snapshot, const Thresholds& thresholds,
                                  const ExternalClaims& claims) {
  return assess_gpus(snapshot.gpus, thresholds, claims, snapshot.processes_known);
}

std::vector<GpuAssessment> ranked(std::vector<GpuAssessment> assessed) {
  std::stable_sort(assessed.begin(), assessed.end(), [](const GpuAssessment& a, const GpuAssessment& b) {
    if (a.free != b.free) return a.free;
    return ranks_before(a, b);
  });
  return assessed;
}

const std::vector<GpuAssessment>& PickResult::gpus_or_throw() const& {
  if (!ok()) throw Error(shortfall);
  return chosen;
}

std::vector<GpuAssessment> PickResult::gpus_or_throw() && {
  if (!ok()) throw Error(shortfall);
  return std::move(chosen);
}

PickResult pick(const std::vector<GpuAssessment>& assessed, int count, bool allow_busy) {
  return pick(assessed, count, allow_busy, PlacementHints{});
}

PickResult pick(const std::vector<GpuAssessment>& assessed, int count, bool allow_busy, const PlacementHints& hints) {
  return pick(assessed, count,
              Sharing{.any_busy = allow_busy, .min_free_memory_mib = std::nullopt, .allowed = true, .launch = true},
              hints);
}

PickResult pick(const std::vector<GpuAssessment>& assessed, int count, const Sharing& sharing,
                const PlacementHints& hints) {
  if (count <= 0) throw Error(fmt::format("the number of GPUs must be positive, not {}", count));
  const auto wanted = static_cast<std::size_t>(count);
  std::vector<GpuAssessment> candidates;
  std::vector<GpuAssessment> shared;  // busy, but with enough memory free (--min-free-memory)
  std::size_t offered = 0;            // GPUs gpurun may ever hand out
  for (const GpuAssessment& a : assessed) {
    if (a.withheld || a.gpu.mig_enabled) continue;
    ++offered;
    if (a.free || sharing.any_busy) {
      candidates.push_back(a);
    } else if (const auto free_mib = memory_free_mib(a.gpu);
               sharing.min_free_memory_mib && !a.reserved && free_mib && *free_mib >= *sharing.min_free_memory_mib) {
      shared.push_back(a);
    }
  }

  PickResult result;
  result.available = candidates.size() + shared.size();
  if (result.available < wanted) {
    result.waiting_can_help = wanted <= offered;
    if (wanted > assessed.size())
      result.shortfall = fmt::format("need {} GPUs but this machine has {} GPU{}", count, assessed.size(),
                                     assessed.size() == 1 ? "" : "s");
    else if (wanted > offered)
      result.shortfall = too_few_offered(assessed, count, offered);
    else
      result.shortfall = too_few_message(assessed, count, result.available, sharing);
    return result;
  }
  std::sort(candidates.begin(), candidates.end(), ranks_before);
  if (candidates.size() >= wanted) {
    candidates = choose_gpu_set(candidates, wanted, hints);
  } else {
    std::stable_sort(shared.begin(), shared.end(), [](const GpuAssessment& a, const GpuAssessment& b) {
      return memory_free_mib(a.gpu).value_or(0) > memory_free_mib(b.gpu).value_or(0);
    });
    shared.resize(wanted - candidates.size());
    candidates.insert(candidates.end(), shared.begin(), shared.end());
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const GpuAssessment& a, const GpuAssessment& b) { return a.gpu.index < b.gpu.index; });
  result.chosen = std::move(candidates);
  return result;
}

}  // namespace gpurun
