#include "render/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "util/proc_info.hpp"

namespace gpurun {
namespace {

std::string or_unknown(const std::optional<double>& value, std::string_view suffix = "") {
  return value ? fmt::format("{:.0f}{}", *value, suffix) : "?";
}

std::string process_count(const GpuAssessment& a) {
  return a.processes_known ? std::to_string(a.gpu.processes.size()) : "?";
}

}  // namespace

std::string format_gpu_table(const std::vector<GpuAssessment>& gpus) {
  std::size_t name_width = 4;
  for (const auto& a : gpus) name_width = std::max(name_width, a.gpu.name.size());
  // The NUMA column only where sysfs placed a GPU: elsewhere the table stays as it was.
  const bool numa = std::any_of(gpus.begin(), gpus.end(), [](const GpuAssessment& a) { return a.gpu.numa_node.has_value(); });
  const auto numa_cell = [&](const std::string& cell) { return numa ? fmt::format("{:>4}  ", cell) : std::string(); };
  std::string table = fmt::format("{:>3}  {:<{}}  {:>19}  {:>4}  {:>5}  {}{:>5}  {}\n", "GPU", "NAME", name_width,
                                  "MEMORY USED/TOTAL", "UTIL", "PROCS", numa_cell("NUMA"), "SCORE", "STATE");
  for (const auto& a : gpus) {
    const Gpu& g = a.gpu;
    std::string state = a.free ? "free" : fmt::format("busy: {}", fmt::join(a.reasons, "; "));
    if (!a.notes.empty()) state += fmt::format(" ({})", fmt::join(a.notes, "; "));
    table += fmt::format("{:>3}  {:<{}}  {:>19}  {:>4}  {:>5}  {}{:>5.1f}  {}\n", g.index, g.name.empty() ? "?" : g.name,
                         name_width,
                         fmt::format("{} / {} MiB", or_unknown(g.memory_used_mib), or_unknown(g.memory_total_mib)),
                         or_unknown(g.utilization_percent, "%"), process_count(a),
                         numa_cell(g.numa_node ? std::to_string(*g.numa_node) : "-"), a.score, state);
  }
  return table;
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
  for (const auto& p : a.gpu.processes) processes.push_back({{"pid", p.pid}, {"used_memory_mib", or_null(p.used_memory_mib)}});
  if (!a.processes_known) processes = nullptr;
  nlohmann::ordered_json json{{"index", a.gpu.index},
          {"uuid", a.gpu.uuid},
          {"name", a.gpu.name},
          {"memory_used_mib", or_null(a.gpu.memory_used_mib)},
          {"memory_total_mib", or_null(a.gpu.memory_total_mib)},
          {"utilization_percent", or_null(a.gpu.utilization_percent)},
          {"mig_enabled", a.gpu.mig_enabled},
          {"processes", processes},
          {"score", a.score},
          {"free", a.free},
          {"reasons", a.reasons},
          {"notes", a.notes}};
  // Where the GPU sits, only where known (the keys above stay as they were everywhere else).
  if (!a.gpu.pci_bus_id.empty()) json["pci_bus_id"] = a.gpu.pci_bus_id;
  if (a.gpu.numa_node) json["numa_node"] = *a.gpu.numa_node;
  if (!a.gpu.local_cpus.empty()) json["local_cpus"] = a.gpu.local_cpus;
  return json;
}

nlohmann::ordered_json status_json(const std::vector<GpuAssessment>& gpus, const std::vector<LostGpu>& lost) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& a : gpus) list.push_back(gpu_json(a));
  nlohmann::ordered_json json{{"gpus", list}};
  if (!lost.empty()) {
    nlohmann::ordered_json lost_list = nlohmann::ordered_json::array();
    for (const LostGpu& l : lost) lost_list.push_back({{"pci_bus_id", l.pci_bus_id}, {"error", l.error}});
    json["lost"] = lost_list;
  }
  return json;
}

nlohmann::ordered_json pick_json(const std::vector<GpuAssessment>& chosen) {
  nlohmann::ordered_json indices = nlohmann::ordered_json::array();
  for (const auto& a : chosen) indices.push_back(a.gpu.index);
  nlohmann::ordered_json json = status_json(chosen);
  json["indices"] = indices;
  return json;
}

std::string format_watch_table(const std::vector<GpuAssessment>& gpus, const std::vector<GpuContainer>& containers) {
  std::size_t name_width = 4;
  std::vector<Gpu> plain;
  for (const auto& a : gpus) {
    name_width = std::max(name_width, a.gpu.name.size());
    plain.push_back(a.gpu);
  }
  std::map<int, std::vector<std::string>> held_by;  // GPU index -> the containers holding it, in order
  for (const auto& c : containers)
    for (int index : held_gpu_indices(c, plain))
      held_by[index].push_back(fmt::format("container {}{}", c.name, c.user.empty() ? "" : " (" + c.user + ")"));
  std::string table = fmt::format("{:>3}  {:<{}}  {:<17}  {:>19}  {:>5}  {}\n", "GPU", "NAME", name_width, "UTILIZATION",
                                  "MEMORY USED/TOTAL", "PROCS", "HELD BY");
  for (const auto& a : gpus) {
    const Gpu& g = a.gpu;
    std::string bar = "[          ]    ?";
    if (g.utilization_percent) {
      const auto filled = static_cast<std::size_t>(std::lround(std::clamp(*g.utilization_percent, 0.0, 100.0) / 10.0));
      bar = fmt::format("[{}{}] {:>3.0f}%", std::string(filled, '#'), std::string(10 - filled, '.'), *g.utilization_percent);
    }
    std::vector<std::string> holders = held_by[g.index];
    for (const auto& p : g.processes) {
      const auto user = process_user(p.pid);
      const std::string command = process_command(p.pid);
      holders.push_back(fmt::format("{}{} pid {}", user ? *user + " " : "", command.empty() ? "process" : command, p.pid));
    }
    if (holders.empty()) holders.emplace_back(a.free ? "-" : "busy: " + fmt::format("{}", fmt::join(a.reasons, "; ")));
    table += fmt::format("{:>3}  {:<{}}  {:<17}  {:>19}  {:>5}  {}\n", g.index, g.name.empty() ? "?" : g.name, name_width,
                         bar, fmt::format("{} / {} MiB", or_unknown(g.memory_used_mib), or_unknown(g.memory_total_mib)),
                         process_count(a), fmt::format("{}", fmt::join(holders, ", ")));
  }
  return table;
}

std::string index_list(const std::vector<GpuAssessment>& gpus) {
  std::string list;
  for (const auto& a : gpus) list += fmt::format("{}{}", list.empty() ? "" : ",", a.gpu.index);
  return list;
}

}  // namespace gpurun
