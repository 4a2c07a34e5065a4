#pragma once
// How many CPUs a job gets: `--cpus` = CPUs per GPU x GPUs, within what the host has.
#include <optional>
#include <string>

#include "gpurun/config/options.hpp"

namespace gpurun {

struct CpuPlan {
  int per_gpu = 0;
  int total = 0;
  std::optional<std::string> warning;  // set when the total was cut to the host's CPU count (a note)
};

// Default per GPU: the machine's fair share, host_cpus / gpus_on_host, clamped to 8..24.
// An explicit cpus_per_gpu must lie in 8..24 (Error otherwise). The total never exceeds
// host_cpus, because dockerd refuses a --cpus above the CPUs it has.
CpuPlan plan_cpus(int gpus_requested, int gpus_on_host, int host_cpus, std::optional<int> cpus_per_gpu);

// The CPUs online on this machine.
int host_cpu_count();

}  // namespace gpurun
