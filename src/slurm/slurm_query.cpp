#include "gpurun/slurm/slurm_query.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "gpurun/util/error.hpp"
#include "gpurun/util/process.hpp"

namespace gpurun {
namespace {

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) {
    while (!field.empty() && field.back() == ' ') field.pop_back();  // -O pads its columns
    while (!field.empty() && field.front() == ' ') field.erase(0, 1);
    fields.push_back(field);
  }
  if (!line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

int to_int(const std::string& text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() ? value : 0;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string ask(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  const ProcessResult result = run_process({argv, {}}, timeout);
  if (!result.succeeded())
    throw Error(fmt::format("cannot ask Slurm: `{}` {}{}{}; is this a Slurm cluster's login node (SLURM_CONF)?",
                            argv.front(), describe_end(result, timeout), result.err.empty() ? "" : ": ",
                            result.err.substr(0, result.err.find('\n'))));
  return result.out;
}

}  // namespace

std::vector<int> parse_index_ranges(const std::string& text) {
  std::vector<int> indices;
  for (const std::string& item : split(text, ',')) {
    const auto dash = item.find('-');
    const std::string first_text = item.substr(0, dash);
    const std::string last_text = dash == std::string::npos ? first_text : item.substr(dash + 1);
    int first = 0, last = 0;
    const auto a = std::from_chars(first_text.data(), first_text.data() + first_text.size(), first);
    const auto b = std::from_chars(last_text.data(), last_text.data() + last_text.size(), last);
    if (a.ec != std::errc() || a.ptr != first_text.data() + first_text.size() || b.ec != std::errc() ||
        b.ptr != last_text.data() + last_text.size() || first_text.empty() || last < first || last - first > 4096)
      return {};
    for (int i = first; i <= last; ++i) indices.push_back(i);
  }
  return indices;
}

int gres_gpu_count(const std::string& gres) {
  int total = 0;
  // Items are separated by ',' outside parentheses: "gpu:2(IDX:0,2),shard:8".
  std::string item;
  int depth = 0;
  const auto take = [&] {
    const std::string plain = item.substr(0, item.find('('));
    if (plain.rfind("gpu:", 0) == 0) {
      const std::string count = plain.substr(plain.rfind(':') + 1);
      total += to_int(count);
    } else if (plain == "gpu") {
      total += 1;
    }
    item.clear();
  };
  for (char c : gres) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0)
      take();
    else
      item += c;
  }
  take();
  return total;
}

std::vector<SlurmPartition> parse_partitions(const std::string& sinfo_out) {
  std::vector<SlurmPartition> partitions;
  for (const std::string& line : lines_of(sinfo_out)) {
    const auto fields = split(line, '|');
    if (fields.size() < 3) continue;
    SlurmPartition p;
    p.name = fields[0];
    if (!p.name.empty() && p.name.back() == '*') {
      p.is_default = true;
      p.name.pop_back();
    }
    p.cpus_per_node = to_int(fields[1]);
    p.gpus_per_node = gres_gpu_count(fields[2]);
    p.most_gpus_per_node = p.gpus_per_node;
    const auto same =
        std::find_if(partitions.begin(), partitions.end(), [&](const auto& q) { return q.name == p.name; });
    if (same == partitions.end()) {
      partitions.push_back(p);
    } else {
      same->most_gpus_per_node = std::max(same->most_gpus_per_node, p.gpus_per_node);
      if (p.gpus_per_node > 0 && (same->gpus_per_node == 0 || p.gpus_per_node < same->gpus_per_node)) {
        same->cpus_per_node = p.cpus_per_node;
        same->gpus_per_node = p.gpus_per_node;
      }
    }
  }
  return partitions;
}

SlurmPartition choose_partition(const std::vector<SlurmPartition>& partitions, const std::string& name) {
  const auto it = std::find_if(partitions.begin(), partitions.end(),
                               [&](const auto& p) { return name.empty() ? p.is_default : p.name == name; });
  std::string names;
  for (const auto& p : partitions) names += (names.empty() ? "" : ", ") + p.name;
  if (it == partitions.end())
    throw Error(name.empty()
                    ? fmt::format("the cluster has no default partition; set slurm_partition (one of: {})", names)
                    : fmt::format("slurm_partition \"{}\": no such partition (the cluster has: {})", name, names));
  if (it->gpus_per_node == 0)
    throw Error(fmt::format("partition {} has no GPUs (no gpu GRES in sinfo); set slurm_partition (one of: {})",
                            it->name, names));
  return *it;
}

std::vector<SlurmNode> parse_nodes(const std::string& sinfo_out) {
  std::vector<SlurmNode> nodes;
  for (const std::string& line : lines_of(sinfo_out)) {
    const auto fields = split(line, '|');
    if (fields.size() < 6) continue;
    SlurmNode n;
    n.name = fields[0];
    n.partition = fields[1];
    n.state = fields[2];
    const auto cpus = split(fields[3], '/');  // allocated/idle/other/total
    if (cpus.size() == 4) {
      n.cpus_allocated = to_int(cpus[0]);
      n.cpus_total = to_int(cpus[3]);
    }
    n.gpus_total = gres_gpu_count(fields[4]);
    n.gpus_allocated = gres_gpu_count(fields[5]);
    nodes.push_back(n);
  }
  return nodes;
}

namespace {

// The GPUs of one TRES request ("gres:gpu:2", "gres/gpu:a100:2"); 0 for none or "N/A".
int tres_gpu_count(std::string tres) {
  for (const std::string prefix : {"gres:", "gres/"})
    for (std::size_t at; (at = tres.find(prefix)) != std::string::npos;) tres.erase(at, prefix.size());
  return gres_gpu_count(tres);
}

}  // namespace

std::vector<SlurmJobInfo> parse_jobs(const std::string& squeue_out) {
  std::vector<SlurmJobInfo> jobs;
  for (std::string line : lines_of(squeue_out)) {
    // Every field ends in '|'. The job's name last, whole: any user names a job, '|' and all (a
    // name with a line end is cut there, its line's fields still read).
    if (line.ends_with('|')) line.pop_back();
    const auto f = split(line, '|');
    if (f.size() < 15) continue;
    std::string name = f[14];
    for (std::size_t k = 15; k < f.size(); ++k) name += "|" + f[k];
    SlurmJobInfo j{f[0], f[1], std::move(name), f[2], f[3], f[4], f[5], f[9], f[10], 0};
    // GPUs asked per node (--gpus-per-node, --gres), else for the whole job (--gpus), else per
    // task (--gpus-per-task) times the tasks, else per socket (--gpus-per-socket, which Slurm takes
    // only with --sockets-per-node) times the sockets and nodes: `%b` alone showed only the first.
    j.gpus = tres_gpu_count(f[5]);
    if (j.gpus == 0 && (j.gpus = tres_gpu_count(f[6])) > 0) j.gres = f[6];
    if (j.gpus == 0 && (j.gpus = tres_gpu_count(f[7])) > 0) {
      j.gres = f[7];
      if (const int tasks = to_int(f[8]); tasks > 1) j.gpus *= tasks;
    }
    if (j.gpus == 0 && (j.gpus = tres_gpu_count(f[11])) > 0) {
      j.gres = f[11];
      j.gpus *= std::max(1, to_int(f[12])) * std::max(1, to_int(f[13]));
    }
    if (j.gpus > 0) jobs.push_back(j);
  }
  return jobs;
}

std::vector<SlurmPartition> query_partitions(std::chrono::milliseconds timeout) {
  return parse_partitions(ask({"sinfo", "-h", "-o", "%P|%c|%G"}, timeout));
}

std::vector<SlurmNode> query_nodes(std::chrono::milliseconds timeout) {
  return parse_nodes(
      ask({"sinfo", "-h", "-N", "-O", "NodeHost:|,Partition:|,StateLong:|,CPUsState:|,Gres:|,GresUsed:|"}, timeout));
}

std::vector<SlurmJobInfo> query_jobs(std::chrono::milliseconds timeout) {
  return parse_jobs(ask({"squeue", "-h", "-O",
                         "JobID:|,UserName:|,State:|,TimeUsed:|,TimeLimit:|,tres-per-node:|,tres-per-job:|,"
                         "tres-per-task:|,NumTasks:|,NodeList:|,Reason:|,tres-per-socket:|,Sockets:|,NumNodes:|,"
                         "Name:|"},
                        timeout));
}

}  // namespace gpurun
