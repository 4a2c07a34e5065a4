#include "gpurun/render/views.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "cells.hpp"
#include "gpurun/render/status_table.hpp"
#include "gpurun/select/mig_units.hpp"
#include "gpurun/util/proc_info.hpp"
#include "gpurun/util/rounding.hpp"
#include "gpurun/util/table.hpp"

namespace gpurun {
namespace {

std::string process_count(const GpuAssessment& a) {
  return a.processes_known ? std::to_string(a.gpu.processes.size()) : "?";
}

// {"pid", "used_memory_mib", "user"}: user null where /proc does not say (a snapshot's PIDs).
nlohmann::ordered_json process_json(const GpuProcess& p) {
  return {{"pid", p.pid},
          {"used_memory_mib", or_null(p.used_memory_mib)},
          {"user", p.user.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(p.user)}};
}

}  // namespace

std::string format_gpu_table(const std::vector<GpuAssessment>& gpus) {
  using Align = Column::Align;
  // The NUMA column only where sysfs placed a GPU: elsewhere the table stays as it was.
  const bool numa =
      std::any_of(gpus.begin(), gpus.end(), [](const GpuAssessment& a) { return a.gpu.numa_node.has_value(); });
  std::vector<Column> columns{Column::fixed("GPU", Align::right, 3), Column::fitted("NAME"),
                              Column::fixed("MEMORY USED/TOTAL", Align::right, 19),
                              Column::fixed("UTIL", Align::right, 4), Column::fixed("PROCS", Align::right, 5)};
  if (numa) columns.push_back(Column::fixed("NUMA", Align::right, 4));
  columns.push_back(Column::fixed("SCORE", Align::right, 5));
  columns.push_back(Column::fitted("STATE"));
  Table table(std::move(columns));
  for (const auto& a : gpus) {
    const Gpu& g = a.gpu;
    std::string state = a.free ? "free" : fmt::format("busy: {}", fmt::join(a.reasons, "; "));
    if (!a.notes.empty()) state += fmt::format(" ({})", fmt::join(a.notes, "; "));
    std::vector<std::string> row{std::to_string(g.index), g.name.empty() ? "?" : g.name, memory_cell(g),
                                 number_or_unknown(g.utilization_percent, "%"), process_count(a)};
    if (numa) row.push_back(g.numa_node ? std::to_string(*g.numa_node) : "-");
    row.push_back(fmt::format("{:.1f}", a.score));
    row.push_back(std::move(state));
    table.add_row(std::move(row));
  }
  return table.str();
}

std::string format_lost_gpus(const std::vector<LostGpu>& lost) {
  std::string lines;
  for (const LostGpu& l : lost)
    lines += fmt::format("lost: the GPU at PCI bus {} cannot be reached{}; nvidia-smi lists the others\n", l.pci_bus_id,
                         l.error.empty() ? "" : " (" + l.error + ")");
  return lines;
}

nlohmann::ordered_json gpu_json(const GpuAssessment& a) {
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  for (const auto& p : a.gpu.processes) processes.push_back(process_json(p));
  if (!a.processes_known) processes = nullptr;
  nlohmann::ordered_json holders = nlohmann::ordered_json::array();
  for (const Holder& h : a.holders)
    holders.push_back({{"kind", h.kind == Holder::Kind::reservation ? "reservation" : "container"},
                       {"user", h.user.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(h.user)},
                       {"name", h.name}});
  // A MIG instance (pick --mig) is named by its GPU's index and its ids: its place in the list of
  // instances is no device anyone can name, and a script reading "index" took it for a GPU.
  const int index = a.gpu.mig ? a.gpu.mig->gpu_index : a.gpu.index;
  nlohmann::ordered_json json{{"index", index},
                              {"uuid", a.gpu.uuid},
                              {"name", a.gpu.name},
                              {"memory_used_mib", or_null(a.gpu.memory_used_mib)},
                              {"memory_total_mib", or_null(a.gpu.memory_total_mib)},
                              {"utilization_percent", or_null(a.gpu.utilization_percent)},
                              {"mig_enabled", a.gpu.mig_enabled || a.gpu.mig.has_value()},
                              {"processes", processes},
                              {"score", a.score},
                              {"free", a.free},
                              {"state", short_state(a)},
                              {"users", gpu_users(a)},
                              {"holders", holders},
                              {"reasons", a.reasons},
                              {"notes", a.notes}};
  if (a.gpu.mig)
    json["mig_instance"] = {{"gpu_instance_id", a.gpu.mig->gpu_instance_id},
                            {"compute_instance_id", a.gpu.mig->compute_instance_id},
                            {"profile", a.gpu.mig->profile}};
  // Where the GPU sits, only where known (the keys above stay as they were everywhere else).
  if (!a.gpu.pci_bus_id.empty()) json["pci_bus_id"] = a.gpu.pci_bus_id;
  if (a.gpu.numa_node) json["numa_node"] = *a.gpu.numa_node;
  if (!a.gpu.local_cpus.empty()) json["local_cpus"] = a.gpu.local_cpus;
  return json;
}

nlohmann::ordered_json status_json(const std::vector<GpuAssessment>& gpus, const std::vector<LostGpu>& lost,
                                   const std::string& source) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& a : gpus) list.push_back(gpu_json(a));
  nlohmann::ordered_json json;
  if (!source.empty()) json["source"] = source;
  json["gpus"] = list;
  if (!lost.empty()) {
    nlohmann::ordered_json lost_list = nlohmann::ordered_json::array();
    for (const LostGpu& l : lost) lost_list.push_back({{"pci_bus_id", l.pci_bus_id}, {"error", l.error}});
    json["lost"] = lost_list;
  }
  return json;
}

nlohmann::ordered_json status_json(const std::vector<GpuAssessment>& gpus, const std::vector<LostGpu>& lost,
                                   const std::string& source, const std::vector<GpuAssessment>& mig_units) {
  nlohmann::ordered_json json = status_json(gpus, lost, source);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!gpus[i].gpu.mig_enabled) continue;
    nlohmann::ordered_json instances = nlohmann::ordered_json::array();
    for (const GpuAssessment& unit : mig_units) {
      if (unit.gpu.mig->gpu_index != gpus[i].gpu.index) continue;
      nlohmann::ordered_json processes = nlohmann::ordered_json::array();
      for (const auto& p : unit.gpu.processes) processes.push_back(process_json(p));
      instances.push_back({{"uuid", unit.gpu.uuid},
                           {"profile", unit.gpu.mig->profile},
                           {"gpu_instance_id", unit.gpu.mig->gpu_instance_id},
                           {"compute_instance_id", unit.gpu.mig->compute_instance_id},
                           {"memory_used_mib", or_null(unit.gpu.memory_used_mib)},
                           {"memory_total_mib", or_null(unit.gpu.memory_total_mib)},
                           {"utilization_percent", nullptr},  // NVML has none per instance
                           {"processes", processes},
                           {"free", unit.free},
                           {"reasons", unit.reasons}});
    }
    json["gpus"][i]["mig_instances"] = instances;
  }
  return json;
}

nlohmann::ordered_json pick_json(const std::vector<GpuAssessment>& chosen) {
  nlohmann::ordered_json indices = nlohmann::ordered_json::array();
  for (const auto& a : chosen) indices.push_back(a.gpu.mig ? a.gpu.mig->gpu_index : a.gpu.index);
  nlohmann::ordered_json json = status_json(chosen);
  json["indices"] = indices;
  return json;
}

namespace {

std::string watch_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuContainer>& containers,
                        std::size_t width, bool short_names) {
  std::vector<Gpu> plain;
  plain.reserve(gpus.size());
  for (const auto& a : gpus) plain.push_back(a.gpu);
  std::map<int, std::vector<std::string>> held_by;  // GPU index -> the containers holding it, in order
  for (const auto& c : containers)
    for (int index : held_gpu_indices(c, plain))
      held_by[index].push_back(fmt::format("container {}{}", c.name, c.user.empty() ? "" : " (" + c.user + ")"));
  using Align = Column::Align;
  Table table({Column::fixed("GPU", Align::right, 3), Column::shrinkable("NAME", 8),
               Column::fixed("UTILIZATION", Align::left, 17), Column::fitted("MEMORY", Align::right),
               Column::shrinkable("HELD BY", 16)});
  table.fit(width, {4, 1});  // who holds it gives way before the name
  for (const auto& a : gpus) {
    const Gpu& g = a.gpu;
    std::string bar = "[          ]    ?";
    if (g.utilization_percent) {
      const auto filled =
          static_cast<std::size_t>(round_to_integer(std::clamp(*g.utilization_percent, 0.0, 100.0) / 10.0));
      bar = fmt::format("[{}{}] {:>3.0f}%", std::string(filled, '#'), std::string(10 - filled, '.'),
                        *g.utilization_percent);
    }
    std::vector<std::string> holders = held_by[g.index];
    for (const auto& p : g.processes) {
      const std::string command = process_command(p.pid);
      holders.push_back(
          fmt::format("{}{} pid {}", p.user.empty() ? "" : p.user + " ", command.empty() ? "process" : command, p.pid));
    }
    if (holders.empty()) holders.emplace_back(a.free ? "-" : short_state(a));  // reserved, not offered, busy
    table.add_row({std::to_string(g.index), gpu_name_cell(g.name, short_names), std::move(bar), memory_cell(g),
                   fmt::format("{}", fmt::join(holders, ", "))});
  }
  if (!short_names && table.natural_width() > width) return {};  // try again without "NVIDIA "
  return table.str();
}

}  // namespace

std::string format_watch_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuContainer>& containers,
                               std::size_t width) {
  std::string text = watch_table(gpus, containers, width, false);
  return text.empty() ? watch_table(gpus, containers, width, true) : text;
}

std::string index_list(const std::vector<GpuAssessment>& gpus) {
  std::vector<int> indices;
  indices.reserve(gpus.size());
  for (const auto& a : gpus) indices.push_back(a.gpu.index);
  return fmt::format("{}", fmt::join(indices, ","));
}

}  // namespace gpurun
