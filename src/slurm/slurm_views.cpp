#include "gpurun/slurm/slurm_views.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ostream>

#include "gpurun/select/inventory.hpp"
#include "gpurun/slurm/slurm_query.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/table.hpp"

namespace gpurun {

int run_slurm_status(const Options& options, std::ostream& out) {
  if (options.watch_s) throw Error("status --watch is for one server; on a cluster, use `watch gpurun status`");
  const std::vector<SlurmNode> nodes = query_nodes(smi_timeout(options));
  if (options.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& n : nodes)
      list.push_back({{"node", n.name},
                      {"partition", n.partition},
                      {"state", n.state},
                      {"gpus_total", n.gpus_total},
                      {"gpus_allocated", n.gpus_allocated},
                      {"cpus_total", n.cpus_total},
                      {"cpus_allocated", n.cpus_allocated}});
    out << json_text(nlohmann::ordered_json{{"nodes", list}});
    return 0;
  }
  using Align = Column::Align;
  Table table({Column::fitted("NODE"), Column::fitted("PARTITION"), Column::fixed("STATE", Align::left, 10),
               Column::fixed("GPUS USED", Align::right, 9), Column::fixed("CPUS USED", Align::right, 9)});
  for (const auto& n : nodes)
    table.add_row({n.name, n.partition, n.state, fmt::format("{}/{}", n.gpus_allocated, n.gpus_total),
                   fmt::format("{}/{}", n.cpus_allocated, n.cpus_total)});
  out << table.str();
  return 0;
}

int run_slurm_ps(const Options& options, std::ostream& out) {
  const std::vector<SlurmJobInfo> jobs = query_jobs(smi_timeout(options));
  if (options.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& j : jobs)
      list.push_back({{"id", j.id},
                      {"user", j.user},
                      {"name", j.name},
                      {"state", j.state},
                      {"time", j.time_used},
                      {"time_limit", j.time_limit},
                      {"gpus", j.gpus},
                      {"gres", j.gres},
                      {"nodes", j.nodes},
                      {"reason", j.reason}});
    out << json_text(nlohmann::ordered_json{{"jobs", list}});
    return 0;
  }
  using Align = Column::Align;
  Table table({Column::fitted("JOBID"), Column::fitted("USER"), Column::fitted("NAME"),
               Column::fixed("STATE", Align::left, 10), Column::fixed("TIME", Align::right, 10),
               Column::fixed("GPUS", Align::right, 4), Column::fitted("NODE (REASON)")});
  for (const auto& j : jobs)
    table.add_row({j.id, j.user, j.name, j.state, j.time_used, std::to_string(j.gpus),
                   j.state == "PENDING" ? "(" + j.reason + ")" : j.nodes});
  out << table.str();
  return 0;
}

}  // namespace gpurun
