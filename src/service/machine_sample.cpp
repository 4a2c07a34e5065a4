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
#include "gpurun/select/mig_units.hpp"

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

// The MIG instances one holder holds, and of them those its processes run in.
struct HeldParts {  // (read through a structured binding, which cppcheck does not follow)
  // cppcheck-suppress unusedStructMember
  std::set<const MigPart*> held;
  // cppcheck-suppress unusedStructMember
  std::set<const MigPart*> working;
};

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
  const std::vector<Gpu> units = mig_units(snapshot);
  std::map<std::string, std::string> uuid_at_place;
  for (const Gpu& unit : units)
    uuid_at_place[fmt::format("{}:{}", unit.mig->gpu_index, unit.mig->device_index)] = unit.uuid;
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
  std::map<std::size_t, HeldParts> parts_held;
  const unsigned asking_uid = ::getuid();
  if (snapshot.processes_known) add_process_holders(containers, snapshot.gpus, proc_root, asking_uid);
  for (const GpuContainer& c : containers) {
    std::vector<int> gpus = held_gpu_indices(c, snapshot.gpus);
    // The MIG instances it holds: those its processes run in, and those it was given (given every
    // GPU, it holds each whole but where its processes run in an instance: that instance is its).
    std::set<const MigPart*> working_parts;
    for (const auto& [pid, pid_parts] : parts_of_pid) {
      const std::optional<ProcessOwner>& owner = owner_of(pid);
      if (owner && owner->container && runs_in(*owner->container, c, asking_uid))
        working_parts.insert(pid_parts.begin(), pid_parts.end());
    }
    std::set<const MigPart*> held_parts = working_parts;
    for (const std::string& device : c.devices) {
      const auto placed = uuid_at_place.find(device);  // "1:0" names an instance as its UUID does
      if (const auto part = parts.find(placed == uuid_at_place.end() ? device : placed->second);
          part != parts.end() && !c.all_gpus)
        held_parts.insert(&part->second);
    }
    // Its parent's node with MIG capabilities (podman's CDI MIG device): the instances they open.
    if (!c.mig_caps.empty() && !c.all_gpus)
      for (const int unit : held_gpu_indices(c, units))
        if (const auto part = parts.find(units[static_cast<std::size_t>(unit)].uuid); part != parts.end())
          held_parts.insert(&part->second);
    for (const MigPart* part : held_parts)
      if (std::find(gpus.begin(), gpus.end(), part->gpu) == gpus.end()) gpus.push_back(part->gpu);
    std::sort(gpus.begin(), gpus.end());
    if (gpus.empty()) continue;
    std::vector<int> computing;  // the GPUs one of its processes is on
    std::vector<long> pids;      // those processes
    for (const Gpu& gpu : snapshot.gpus)
      for (const GpuProcess& p : gpu.processes) {
        const std::optional<ProcessOwner>& owner = owner_of(p.pid);
        if (!owner || !owner->container || !runs_in(*owner->container, c, asking_uid)) continue;
        if (std::find(computing.begin(), computing.end(), gpu.index) == computing.end()) computing.push_back(gpu.index);
        if (std::find(pids.begin(), pids.end(), p.pid) == pids.end()) pids.push_back(p.pid);
      }
    std::sort(computing.begin(), computing.end());
    if (!held_parts.empty())
      parts_held[sample.holders.size()] = {.held = std::move(held_parts), .working = std::move(working_parts)};
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
         .started_at = parse_rfc3339(c.started_at),
         .pids = std::move(pids)});
  }

  // A GPU process outside every container is a holder of its own.
  for (const Gpu& gpu : snapshot.gpus)
    for (const GpuProcess& p : gpu.processes) {
      const std::optional<ProcessOwner>& owner = owner_of(p.pid);
      if (owner && owner->container) continue;  // its container is a holder already
      if (const auto in = parts_of_pid.find(p.pid); in != parts_of_pid.end())
        for (const MigPart* part : in->second)
          if (part->gpu == gpu.index) {  // this GPU's part
            parts_held[sample.holders.size()].held.insert(part);
            parts_held[sample.holders.size()].working.insert(part);
          }
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

  // Each instance is theirs who work in it, in equal parts; where nobody does, all its holders'.
  std::map<const MigPart*, std::set<std::string>> holding;  // by key: a pid listed twice is one holder
  std::map<const MigPart*, std::set<std::string>> working;
  for (const auto& [holder, parts_of] : parts_held) {
    for (const MigPart* part : parts_of.held) holding[part].insert(sample.holders[holder].key);
    for (const MigPart* part : parts_of.working) working[part].insert(sample.holders[holder].key);
  }
  for (const auto& [holder, parts_of] : parts_held) {
    std::map<int, double> shares;
    for (const MigPart* part : parts_of.held) {
      const bool worked = working.contains(part);
      double own = 0;
      if (!worked)
        own = part->share / static_cast<double>(holding[part].size());
      else if (parts_of.working.contains(part))
        own = part->share / static_cast<double>(working[part].size());
      shares[part->gpu] = std::min(1.0, shares[part->gpu] + own);
    }
    sample.holders[holder].mig_share = std::move(shares);
  }
  return sample;
}

}  // namespace gpurun
