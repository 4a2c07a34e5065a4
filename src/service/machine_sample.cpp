#include "gpurun/service/machine_sample.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "gpurun/engine/gpu_process_owner.hpp"
#include "gpurun/select/claims.hpp"

namespace gpurun {
namespace {

// The process's start time in clock ticks since boot (/proc/PID/stat, field 22): with the pid, it
// names the process across samples, so that a reused pid is another run. "" when unreadable.
std::string start_ticks(long pid, const std::string& proc_root) {
  std::ifstream stat(fmt::format("{}/{}/stat", proc_root, pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t after_name = text.rfind(')');  // the command name may hold spaces and parentheses
  if (after_name == std::string::npos) return "";
  std::istringstream fields(text.substr(after_name + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return field;
  return "";
}

// The process's command line, its arguments joined by spaces; its comm where that is empty.
std::string command_line(long pid, const std::string& proc_root) {
  std::ifstream in(fmt::format("{}/{}/cmdline", proc_root, pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  if (!text.empty()) return text;
  std::ifstream comm(fmt::format("{}/{}/comm", proc_root, pid));
  std::getline(comm, text);
  return text;
}

}  // namespace

MachineSample machine_sample(WallTime when, const Snapshot& snapshot, std::vector<GpuContainer> containers,
                             const std::string& proc_root) {
  MachineSample sample{.when = when, .gpus = {}, .holders = {}};
  for (const Gpu& gpu : snapshot.gpus)
    sample.gpus.push_back(
        {.index = gpu.index, .utilization_percent = gpu.utilization_percent, .memory_used_mib = gpu.memory_used_mib});

  if (snapshot.processes_known) add_process_holders(containers, snapshot.gpus, proc_root);
  for (const GpuContainer& c : containers) {
    std::vector<int> gpus = held_gpu_indices(c, snapshot.gpus);
    if (gpus.empty()) continue;
    sample.holders.push_back({.key = "container:" + c.id,
                              .name = c.name,
                              .user = c.user,
                              .container_id = c.id,
                              .image = c.image,
                              .command = c.command,
                              .gpus = std::move(gpus),
                              .memory_used_mib = std::nullopt,
                              .started_by_gpurun = c.started_by_gpurun,
                              .time_limit = c.time_limit,
                              .notify_end = c.notify_end});
  }

  // A GPU process outside every container is a holder of its own.
  for (const Gpu& gpu : snapshot.gpus)
    for (const GpuProcess& p : gpu.processes) {
      const std::optional<ProcessOwner> owner = process_owner(p.pid, proc_root);
      if (owner && owner->container) continue;  // its container is a holder already
      const std::string start = start_ticks(p.pid, proc_root);
      const std::string command = command_line(p.pid, proc_root);
      sample.holders.push_back({.key = fmt::format("process:{}:{}", p.pid, start),
                                .name = command.empty() ? fmt::format("pid {}", p.pid) : command,
                                .user = owner ? owner->user : p.user,
                                .container_id = "",
                                .image = "",
                                .command = command,
                                .gpus = {gpu.index},
                                .memory_used_mib = p.used_memory_mib,
                                .started_by_gpurun = false,
                                .time_limit = std::nullopt,
                                .notify_end = false});
    }
  return sample;
}

}  // namespace gpurun
