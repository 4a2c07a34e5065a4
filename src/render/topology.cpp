#include "gpurun/render/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace gpurun {

std::string format_topology(const std::vector<GpuAssessment>& gpus, const std::vector<GpuLink>& links) {
  std::map<std::pair<int, int>, std::string> kinds;
  for (const GpuLink& link : links) {
    kinds[{link.a, link.b}] = link.kind;
    kinds[{link.b, link.a}] = link.kind;
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{""};
  for (const auto& a : gpus) header.push_back(fmt::format("GPU{}", a.gpu.index));
  header.insert(header.end(), {"NUMA", "CPUS"});
  rows.push_back(header);
  for (const auto& a : gpus) {
    std::vector<std::string> row{fmt::format("GPU{}", a.gpu.index)};
    for (const auto& b : gpus) {
      const auto it = kinds.find({a.gpu.index, b.gpu.index});
      row.push_back(a.gpu.index == b.gpu.index ? "X" : it == kinds.end() ? "?" : it->second);
    }
    row.push_back(a.gpu.numa_node ? std::to_string(*a.gpu.numa_node) : "-");
    row.push_back(a.gpu.local_cpus.empty() ? "-" : a.gpu.local_cpus);
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> widths(header.size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  std::string table;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c)
      line += c + 1 == row.size() ? row[c] : fmt::format("{:<{}}  ", row[c], widths[c]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    table += line + '\n';
  }
  if (links.empty() && gpus.size() > 1)
    table += "links unknown: the GPU source does not know them and `nvidia-smi topo -m` gave none here\n";
  return table;
}

}  // namespace gpurun
