#include "gpurun/select/mig_units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

namespace gpurun {
namespace {

// "1g.10gb" -> {1, 10}; "1c.3g.40gb" -> {3, 40} (a compute slice of a 3g.40gb instance); {0, 0}
// for a name that is not a profile.
std::pair<int, int> size_of(const std::string& profile) {
  // No profile is longer (libstdc++'s matcher recurses once a character), nor its numbers wider.
  static const std::regex pattern(R"((?:\d{1,4}c\.)?(\d{1,4})g\.(\d{1,6})gb.*)");
  std::smatch match;
  if (profile.size() > 64 || !std::regex_match(profile, match, pattern)) return {0, 0};
  return {std::stoi(match[1].str()), std::stoi(match[2].str())};
}

}  // namespace

std::vector<Gpu> mig_units(const Snapshot& snapshot) {
  std::vector<Gpu> units;
  std::map<int, int> devices_of;  // per parent GPU, its MIG devices so far
  for (const MigInstance& instance : snapshot.mig_instances) {
    const auto parent = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(),
                                     [&](const Gpu& gpu) { return gpu.index == instance.gpu_index; });
    Gpu unit;
    unit.index = static_cast<int>(units.size());
    unit.uuid = instance.uuid;
    unit.name = fmt::format("GPU {} MIG {}", instance.gpu_index, instance.profile.empty() ? "?" : instance.profile);
    unit.memory_used_mib = instance.memory_used_mib;
    unit.memory_total_mib = instance.memory_total_mib;
    unit.processes = instance.processes;
    unit.mig =
        MigPlace{.gpu_index = instance.gpu_index,
                 .gpu_instance_id = instance.gpu_instance_id,
                 .compute_instance_id = instance.compute_instance_id,
                 .profile = instance.profile,
                 .device_index = instance.device_index >= 0 ? instance.device_index : devices_of[instance.gpu_index],
                 .parent_uuid = parent == snapshot.gpus.end() ? std::string() : parent->uuid};
    ++devices_of[instance.gpu_index];
    // The parent's place on the bus: its /dev/nvidiaN is the instance's too.
    if (parent != snapshot.gpus.end()) unit.pci_bus_id = parent->pci_bus_id;
    units.push_back(std::move(unit));
  }
  return units;
}

bool profile_serves(const std::string& have, const std::string& want, bool allow_larger) {
  if (want == "any" || have == want) return true;
  if (!allow_larger) return false;
  const auto [have_slices, have_gb] = size_of(have);
  const auto [want_slices, want_gb] = size_of(want);
  return want_slices > 0 && have_slices >= want_slices && have_gb >= want_gb;
}

PickResult pick_mig(const std::vector<GpuAssessment>& units, int count, const std::string& profile, bool allow_larger,
                    bool allow_busy) {
  std::vector<GpuAssessment> serving;
  for (const GpuAssessment& unit : units)
    if (unit.gpu.mig && profile_serves(unit.gpu.mig->profile, profile, allow_larger)) serving.push_back(unit);
  if (serving.empty()) {
    PickResult none;
    none.waiting_can_help = false;
    std::vector<std::string> profiles;
    for (const GpuAssessment& unit : units)
      if (unit.gpu.mig && std::find(profiles.begin(), profiles.end(), unit.gpu.mig->profile) == profiles.end())
        profiles.push_back(unit.gpu.mig->profile);
    none.shortfall = units.empty() ? "--mig: no GPU of this machine has MIG instances (enable MIG and create instances "
                                     "with nvidia-smi mig, or leave out --mig)"
                                   : fmt::format("--mig {}: no MIG instance has that profile (there are: {}){}",
                                                 profile, fmt::join(profiles, ", "),
                                                 allow_larger ? "" : "; --mig-allow-larger lets a larger one serve");
    return none;
  }
  // The smallest sizes first: a request is served by the requested profile while enough are free.
  std::vector<std::pair<int, int>> sizes;
  sizes.reserve(serving.size());
  for (const GpuAssessment& unit : serving) sizes.push_back(size_of(unit.gpu.mig->profile));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  PickResult result;
  for (const auto& limit : sizes) {
    std::vector<GpuAssessment> up_to;
    for (const GpuAssessment& unit : serving)
      if (size_of(unit.gpu.mig->profile) <= limit) up_to.push_back(unit);
    result = pick(up_to, count, allow_busy);
    if (result.ok()) return result;
  }
  // pick() speaks of GPUs and their numbers; a MIG shortfall names the instances.
  result.shortfall = fmt::format("need {} free MIG instance{}{} but {} of {} {}:", count, count == 1 ? "" : "s",
                                 profile == "any" ? "" : " of profile " + profile + (allow_larger ? " or larger" : ""),
                                 result.available, serving.size(), result.available == 1 ? "is free" : "are free");
  for (const GpuAssessment& unit : serving) {
    const MigPlace& place = *unit.gpu.mig;
    result.shortfall += fmt::format("\n  GPU {} MIG {} (GI {} CI {}) {}", place.gpu_index, place.profile,
                                    place.gpu_instance_id, place.compute_instance_id,
                                    unit.free ? "free" : fmt::format("busy: {}", fmt::join(unit.reasons, "; ")));
  }
  const std::string fewer = count > 1 ? "ask for fewer, " : "";
  result.shortfall += result.waiting_can_help
                          ? fmt::format(
                                "\nWait for them with --wait (--wait 30m), {}raise --max-memory, or pass "
                                "--allow-busy to share instances knowingly.",
                                fewer)
                          : fmt::format("\nThere are not that many: {}or ask for another profile.", fewer);
  return result;
}

}  // namespace gpurun
