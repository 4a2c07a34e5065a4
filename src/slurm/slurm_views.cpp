#include "gpurun/slurm/slurm_views.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ostream>

#include "gpurun/select/inventory.hpp"
#include "gpurun/slurm/slurm_query.hpp"
#include "gpurun/util/error.hpp"

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
    out << nlohmann::ordered_json{{"nodes", list}}.dump(2) << '\n';
    return 0;
  }
  std::size_t node_width = 4, partition_width = 9;
  for (const auto& n : nodes) {
    node_width = std::max(node_width, n.name.size());
    partition_width = std::max(partition_width, n.partition.size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<10}  {:>9}  {:>9}\n", "NODE", node_width, "PARTITION", partition_width,
                     "STATE", "GPUS USED", "CPUS USED");
  for (const auto& n : nodes)
    out << fmt::format("{:<{}}  {:<{}}  {:<10}  {:>9}  {:>9}\n", n.name, node_width, n.partition, partition_width,
                       n.state, fmt::format("{}/{}", n.gpus_allocated, n.gpus_total),
                       fmt::format("{}/{}", n.cpus_allocated, n.cpus_total));
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
    out << nlohmann::ordered_json{{"jobs", list}}.dump(2) << '\n';
    return 0;
  }
  std::size_t id_width = 5, user_width = 4, name_width = 4;
  for (const auto& j : jobs) {
    id_width = std::max(id_width, j.id.size());
    user_width = std::max(user_width, j.user.size());
    name_width = std::max(name_width, j.name.size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<10}  {:>10}  {:>4}  {}\n", "JOBID", id_width, "USER", user_width,
                     "NAME", name_width, "STATE", "TIME", "GPUS", "NODE (REASON)");
  for (const auto& j : jobs)
    out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<10}  {:>10}  {:>4}  {}\n", j.id, id_width, j.user, user_width,
                       j.name, name_width, j.state, j.time_used, j.gpus,
                       j.state == "PENDING" ? "(" + j.reason + ")" : j.nodes);
  return 0;
}

}  // namespace gpurun
