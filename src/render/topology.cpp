#include "gpurun/render/topology.hpp"
#include "gpurun/util/table.hpp"

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
  std::vector<Column> columns{Column::fitted("")};
  for (const auto& a : gpus) columns.push_back(Column::fitted(fmt::format("GPU{}", a.gpu.index)));
  columns.insert(columns.end(), {Column::fitted("NUMA"), Column::fitted("CPUS")});
  Table matrix(std::move(columns));
  for (const auto& a : gpus) {
    std::vector<std::string> row{fmt::format("GPU{}", a.gpu.index)};
    for (const auto& b : gpus) {
      const auto it = kinds.find({a.gpu.index, b.gpu.index});
      row.push_back(a.gpu.index == b.gpu.index ? "X" : it == kinds.end() ? "?" : it->second);
    }
    row.push_back(a.gpu.numa_node ? std::to_string(*a.gpu.numa_node) : "-");
    row.push_back(a.gpu.local_cpus.empty() ? "-" : a.gpu.local_cpus);
    matrix.add_row(std::move(row));
  }
  std::string table = matrix.str();
  if (links.empty() && gpus.size() > 1)
    table += "links unknown: the GPU source does not know them and `nvidia-smi topo -m` gave none here\n";
  return table;
}

}  // namespace gpurun
