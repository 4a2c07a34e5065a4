#include "gpurun/service/machine_sample.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "gpurun/engine/gpu_process_owner.hpp"
#include "gpurun/history/time_text.hpp"
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

// A command as the service keeps it: 4 KiB at most (cut where a character starts, and "…" said).
// A process's arguments may be megabytes, and each is stored, and copied into every answer.
constexpr std::size_t kMostCommandBytes = 4096;
std::string kept_command(std::string text, bool cut_already = false) {
  if (text.size() <= kMostCommandBytes && !cut_already) return text;
  if (text.size() <= kMostCommandBytes) return text + "\u2026";
  std::size_t cut = kMostCommandBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;  // not inside a character
  text.resize(cut);
  return text + "\u2026";
}

// The process's command line, its arguments joined by spaces; its comm where that is empty.
std::string command_line(long pid, const std::string& proc_root) {
  std::ifstream in(fmt::format("{}/{}/cmdline", proc_root, pid));
  std::string text(kMostCommandBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  const bool longer = text.size() > kMostCommandBytes;  // whatever its last bytes: arguments went
  if (longer) text.resize(kMostCommandBytes);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  if (!text.empty()) return kept_command(std::move(text), longer);
  std::ifstream comm(fmt::format("{}/{}/comm", proc_root, pid));
  std::getline(comm, text);
  return text;
}

// A MIG instance as the run model counts it: its parent GPU and its share of it.
struct MigPart {
  int gpu = 0;
  double share = 1.0;
};

// Each MIG instance by its UUID: its memory over its GPU's (where either is unknown, its profile's
// compute slices over 7, the most an A100 or H100 has).
std::map<std::string, MigPart> mig_parts(const Snapshot& snapshot) {
  std::map<std::string, MigPart> parts;
  for (const MigInstance& mig : snapshot.mig_instances) {
    const auto parent = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(),
                                     [&](const Gpu& gpu) { return gpu.index == mig.gpu_index; });
    double share = 0;
    if (parent != snapshot.gpus.end() && parent->memory_total_mib && *parent->memory_total_mib > 0 &&
        mig.memory_total_mib)
      share = *mig.memory_total_mib / *parent->memory_total_mib;
    else if (int slices = 0;
             std::from_chars(mig.profile.data(), mig.profile.data() + mig.profile.size(), slices).ec == std::errc() &&
             slices > 0)
      share = slices / 7.0;  // "3g.40gb": 3
    if (share > 0) parts[mig.uuid] = {.gpu = mig.gpu_index, .share = std::min(share, 1.0)};
  }
  return parts;
}

// Each GPU's share held through `parts`, an instance held by several (two users' processes in
// one instance) in equal parts, so that the holders' shares add up to the instance's.
std::map<int, double> shares_of(const std::set<const MigPart*>& parts, const std::map<const MigPart*, int>& holders) {
  std::map<int, double> shares;
  for (const MigPart* part : parts) {
    const auto many = holders.find(part);
    const double own = part->share / (many == holders.end() ? 1 : std::max(1, many->second));
    shares[part->gpu] = std::min(1.0, shares[part->gpu] + own);
  }
  return shares;
}

}  // namespace

MachineSample machine_sample(WallTime when, const Snapshot& snapshot, std::vector<GpuContainer> containers,
                             const std::string& proc_root) {
  MachineSample sample{.when = when, .gpus = {}, .holders = {}};
  for (const Gpu& gpu : snapshot.gpus)
    sample.gpus.push_back(
        {.index = gpu.index, .utilization_percent = gpu.utilization_percent, .memory_used_mib = gpu.memory_used_mib});

  // On a MIG GPU a holder holds instances, not the GPU: which ones, by the processes in each (and
  // a container's by the instances it was given), so that it is credited their share alone.
  const std::map<std::string, MigPart> parts = mig_parts(snapshot);
  std::map<long, std::vector<const MigPart*>> parts_of_pid;
  for (const MigInstance& mig : snapshot.mig_instances)
    if (const auto part = parts.find(mig.uuid); part != parts.end())
      for (const GpuProcess& p : mig.processes) parts_of_pid[p.pid].push_back(&part->second);
  std::map<long, std::optional<ProcessOwner>> owners;
  const auto owner_of = [&](long pid) -> const std::optional<ProcessOwner>& {
    const auto known = owners.find(pid);
    return known != owners.end() ? known->second : owners.emplace(pid, process_owner(pid, proc_root)).first->second;
  };

  // The instances each holder holds, by its place in sample.holders; their shares are given once
  // every holder is known, since an instance held by several is split among them.
  std::map<std::size_t, std::set<const MigPart*>> parts_held;
  const unsigned asking_uid = ::getuid();
  if (snapshot.processes_known) add_process_holders(containers, snapshot.gpus, proc_root, asking_uid);
  for (const GpuContainer& c : containers) {
    std::vector<int> gpus = held_gpu_indices(c, snapshot.gpus);
    // The MIG instances it holds: those it was given, and those its processes run in.
    std::set<const MigPart*> held_parts;
    for (const std::string& device : c.devices)
      if (const auto part = parts.find(device); part != parts.end()) held_parts.insert(&part->second);
    for (const auto& [pid, pid_parts] : parts_of_pid) {
      const std::optional<ProcessOwner>& owner = owner_of(pid);
      if (owner && owner->container && runs_in(*owner->container, c, asking_uid))
        held_parts.insert(pid_parts.begin(), pid_parts.end());
    }
    if (c.all_gpus) held_parts.clear();  // it holds every GPU whole, its instances among them
    for (const MigPart* part : held_parts)
      if (std::find(gpus.begin(), gpus.end(), part->gpu) == gpus.end()) gpus.push_back(part->gpu);
    std::sort(gpus.begin(), gpus.end());
    if (gpus.empty()) continue;
    std::vector<int> computing;  // the GPUs one of its processes is on
    for (const Gpu& gpu : snapshot.gpus)
      for (const GpuProcess& p : gpu.processes) {
        const std::optional<ProcessOwner>& owner = owner_of(p.pid);
        if (owner && owner->container && runs_in(*owner->container, c, asking_uid) &&
            std::find(computing.begin(), computing.end(), gpu.index) == computing.end())
          computing.push_back(gpu.index);
      }
    std::sort(computing.begin(), computing.end());
    if (!held_parts.empty()) parts_held[sample.holders.size()] = std::move(held_parts);
    // A rootless engine's container is keyed by its user too: its ID is only that engine's.
    sample.holders.push_back(
        {.key = c.rootless_uid ? fmt::format("container:{}:{}", *c.rootless_uid, c.id) : "container:" + c.id,
         .name = c.name,
         .user = c.user,
         .container_id = c.id,
         .image = c.image,
         .command = kept_command(c.command),
         .gpus = std::move(gpus),
         .computing_gpus = std::move(computing),
         .mig_share = {},
         .memory_used_mib = std::nullopt,
         .started_by_gpurun = c.started_by_gpurun,
         .time_limit = c.time_limit,
         .notify_end = c.notify_end,
         .listed_by_engine = !c.from_processes,
         .started_at = parse_rfc3339(c.started_at)});
  }

  // A GPU process outside every container is a holder of its own.
  for (const Gpu& gpu : snapshot.gpus)
    for (const GpuProcess& p : gpu.processes) {
      const std::optional<ProcessOwner>& owner = owner_of(p.pid);
      if (owner && owner->container) continue;  // its container is a holder already
      if (const auto in = parts_of_pid.find(p.pid); in != parts_of_pid.end())
        for (const MigPart* part : in->second)
          if (part->gpu == gpu.index) parts_held[sample.holders.size()].insert(part);  // this GPU's part
      const std::string start = start_ticks(p.pid, proc_root);
      const std::string command = command_line(p.pid, proc_root);
      sample.holders.push_back({.key = fmt::format("process:{}:{}", p.pid, start),
                                .name = command.empty() ? fmt::format("pid {}", p.pid) : command,
                                .user = owner ? owner->user : p.user,
                                .container_id = "",
                                .image = "",
                                .command = command,
                                .gpus = {gpu.index},
                                .computing_gpus = {gpu.index},
                                .mig_share = {},
                                .memory_used_mib = p.used_memory_mib,
                                .started_by_gpurun = false,
                                .time_limit = std::nullopt,
                                .notify_end = false,
                                .listed_by_engine = false});
    }

  std::map<const MigPart*, std::set<std::string>> keys_of_part;  // a pid listed twice is one holder
  for (const auto& [holder, held] : parts_held)
    for (const MigPart* part : held) keys_of_part[part].insert(sample.holders[holder].key);
  std::map<const MigPart*, int> holders_of_part;
  for (const auto& [part, keys] : keys_of_part) holders_of_part[part] = static_cast<int>(keys.size());
  for (const auto& [holder, held] : parts_held) sample.holders[holder].mig_share = shares_of(held, holders_of_part);
  return sample;
}

}  // namespace gpurun
