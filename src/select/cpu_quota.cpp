#include "gpurun/select/cpu_quota.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/util/error.hpp"

namespace gpurun {

CpuPlan plan_cpus(int gpus_requested, int gpus_on_host, int host_cpus, std::optional<int> cpus_per_gpu) {
  if (host_cpus <= 0) throw Error(fmt::format("--host-cpus must be positive, not {}", host_cpus));
  CpuPlan plan;
  if (cpus_per_gpu) {
    if (*cpus_per_gpu < kMinCpusPerGpu || *cpus_per_gpu > kMaxCpusPerGpu)
      throw Error(fmt::format("--cpus-per-gpu {} is outside {}..{}, the range NVIDIA's DGX guides recommend",
                              *cpus_per_gpu, kMinCpusPerGpu, kMaxCpusPerGpu));
    plan.per_gpu = *cpus_per_gpu;
  } else {
    plan.per_gpu = std::clamp(host_cpus / std::max(gpus_on_host, 1), kMinCpusPerGpu, kMaxCpusPerGpu);
  }
  const long long wanted = static_cast<long long>(plan.per_gpu) * std::max(gpus_requested, 1);
  plan.total = static_cast<int>(std::min<long long>(wanted, host_cpus));
  if (wanted > host_cpus)
    plan.warning = fmt::format("{} CPUs per GPU x {} GPUs = {} CPUs, but the host has {}: using --cpus {}",
                               plan.per_gpu, gpus_requested, wanted, host_cpus, plan.total);
  return plan;
}

int host_cpu_count() {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

}  // namespace gpurun
