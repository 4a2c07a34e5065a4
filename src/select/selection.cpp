#include "select/selection.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "util/error.hpp"
#include "util/text.hpp"

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

std::string too_few_message(const std::vector<GpuAssessment>& assessed, int count, std::size_t available) {
  std::string message = fmt::format("need {} free GPU{} but {} of {} {} free:", count, count == 1 ? "" : "s",
                                    available, assessed.size(), available == 1 ? "is" : "are");
  for (const GpuAssessment& a : assessed) {
    const std::string state = a.free ? "free" : "busy: " + fmt::format("{}", fmt::join(a.reasons, "; "));
    message += fmt::format("\n  GPU {:<2} {:<24} {}", a.gpu.index, a.gpu.name.empty() ? "?" : a.gpu.name, state);
  }
  message +=
      "\nTry a smaller N, raise --max-util / --max-memory, or pass --allow-busy to share GPUs knowingly "
      "(`gpurun status` shows the details).";
  return message;
}

}  // namespace

double score(const Gpu& gpu) {
  const auto memory = memory_used_percent(gpu);
  const auto util = gpu.utilization_percent ? std::optional(std::clamp(*gpu.utilization_percent, 0.0, 100.0)) : std::nullopt;
  if (memory && util) return (*memory + *util) / 2.0;
  if (memory) return *memory;
  if (util) return *util;
  return 100.0;
}

std::vector<GpuAssessment> assess(const std::vector<Gpu>& gpus, const Thresholds& thresholds,
                                  const ExternalClaims& claims) {
  std::vector<GpuAssessment> assessed;
  assessed.reserve(gpus.size());
  for (const Gpu& gpu : gpus) {
    GpuAssessment a{gpu, false, score(gpu), {}, {}};
    if (gpu.mig_enabled) a.reasons.emplace_back("MIG mode is enabled (not offered as a whole GPU)");
    if (const auto claim = claims.find(gpu.index); claim != claims.end())
      a.reasons.insert(a.reasons.end(), claim->second.begin(), claim->second.end());
    // A process at 0 MiB has just started: the GPU is taken all the same.
    if (!gpu.processes.empty()) a.reasons.push_back(describe_processes(gpu.processes));

    if (!gpu.memory_used_mib) {
      a.reasons.emplace_back("memory use unknown");
    } else if (thresholds.max_memory.kind == MemoryLimit::Kind::mib) {
      if (*gpu.memory_used_mib > thresholds.max_memory.value)
        a.reasons.push_back(fmt::format("memory used {:g} MiB > limit {:g} MiB", *gpu.memory_used_mib,
                                        thresholds.max_memory.value));
    } else if (!gpu.memory_total_mib || *gpu.memory_total_mib <= 0) {
      a.reasons.emplace_back("total memory unknown, so the % limit cannot be checked");
    } else if (const double limit = *gpu.memory_total_mib * thresholds.max_memory.value / 100.0;
               *gpu.memory_used_mib > limit) {
      a.reasons.push_back(fmt::format("memory used {:g} MiB > limit {:g} MiB ({:g}% of {:g} MiB)", *gpu.memory_used_mib,
                                      limit, thresholds.max_memory.value, *gpu.memory_total_mib));
    }

    if (!gpu.utilization_percent) {
      a.notes.emplace_back("utilization unknown: judged by memory alone");
    } else if (*gpu.utilization_percent > thresholds.max_utilization_percent) {
      a.reasons.push_back(fmt::format("utilization {:g}% > limit {:g}%", *gpu.utilization_percent,
                                      thresholds.max_utilization_percent));
    }
    a.free = a.reasons.empty();
    assessed.push_back(std::move(a));
  }
  return assessed;
}

std::vector<GpuAssessment> ranked(std::vector<GpuAssessment> assessed) {
  std::stable_sort(assessed.begin(), assessed.end(), [](const GpuAssessment& a, const GpuAssessment& b) {
    if (a.free != b.free) return a.free;
    return ranks_before(a, b);
  });
  return assessed;
}

std::vector<GpuAssessment> pick(const std::vector<GpuAssessment>& assessed, int count, bool allow_busy) {
  if (count <= 0) throw Error(fmt::format("the number of GPUs must be positive, not {}", count));
  std::vector<GpuAssessment> candidates;
  for (const GpuAssessment& a : assessed)
    if (a.free || (allow_busy && !a.withheld)) candidates.push_back(a);

  if (candidates.size() < static_cast<std::size_t>(count)) {
    if (allow_busy)
      throw NotEnoughGpus(candidates.size() == assessed.size()
                              ? fmt::format("need {} GPUs but this machine has {}", count, assessed.size())
                              : fmt::format("need {} GPUs but this machine has {}, of which the site policy lets gpurun "
                                            "hand out {}",
                                            count, assessed.size(), candidates.size()),
                          candidates.size());
    throw NotEnoughGpus(too_few_message(assessed, count, candidates.size()), candidates.size());
  }
  std::sort(candidates.begin(), candidates.end(), ranks_before);
  candidates.resize(static_cast<std::size_t>(count));
  std::sort(candidates.begin(), candidates.end(),
            [](const GpuAssessment& a, const GpuAssessment& b) { return a.gpu.index < b.gpu.index; });
  return candidates;
}

}  // namespace gpurun
