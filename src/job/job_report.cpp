#include "gpurun/job/job_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "gpurun/render/views.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/rounding.hpp"
#include "gpurun/util/table.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

std::string percent(const std::optional<double>& value) { return value ? fmt::format("{:.1f}%", *value) : "n/a"; }

}  // namespace

std::vector<std::string> low_efficiency_hints(std::optional<int> cpus_per_gpu, std::size_t gpus, double efficiency) {
  std::vector<std::string> list{
      cpus_per_gpu ? fmt::format("Feed the GPUs faster: raise DataLoader(num_workers=...) towards the {} CPUs per GPU "
                                 "you have, and raise --cpus-per-gpu (8-24) if the workers need more",
                                 *cpus_per_gpu)
                   : std::string("Feed the GPUs faster: raise DataLoader(num_workers=...) towards the CPUs per GPU "
                                 "you have (gpurun gives 8-24 per GPU: --cpus-per-gpu)"),
      "Use DataLoader(pin_memory=True) so host-to-GPU copies overlap with compute",
      "Try a larger batch size while memory allows (see the memory peak)",
      "Use mixed precision (torch.autocast / AMP) so the tensor cores do the work"};
  if (gpus > 1 && efficiency < 50)
    list.emplace_back("Make one GPU busy before asking for several: low efficiency only multiplies with more GPUs");
  return list;
}

std::optional<double> gpu_efficiency(const JobReport& report) {
  double sum = 0;
  int counted = 0;
  for (const auto& [index, stats] : report.stats) {
    if (const auto mean = stats.mean()) {
      sum += *mean;
      ++counted;
    }
  }
  if (counted == 0) return std::nullopt;
  return sum / counted;
}

std::string format_job_report(const JobReport& report) {
  std::string gpu_list;
  for (const Gpu& g : report.gpus) gpu_list += fmt::format("{}{}", gpu_list.empty() ? "" : ", ", g.index);
  std::string text = fmt::format(
      "gpurun: job report\n"
      "  exit status     {}\n"
      "  wall time       {}\n"
      "  granted         {} GPU{} ({}), {} CPUs\n",
      report.exit_status, format_duration(std::chrono::seconds(round_to_integer(report.wall_s))), report.gpus.size(),
      report.gpus.size() == 1 ? "" : "s", gpu_list, report.cpus);
  using Align = Column::Align;
  Table table({Column::fixed("GPU", Align::right, 3), Column::fixed("UTIL MEAN", Align::right, 9),
               Column::fixed("UTIL P95", Align::right, 8), Column::fixed("UNDER 50%", Align::right, 9),
               Column::fixed("MEM PEAK", Align::left, 18), Column::fixed("SAMPLES", Align::right, 7)},
              2);
  for (const Gpu& g : report.gpus) {
    const UtilizationStats& s = report.stats.at(g.index);
    const std::string memory = s.memory_peak_mib()
                                   ? fmt::format("{:.0f} / {} MiB", *s.memory_peak_mib(),
                                                 g.memory_total_mib ? fmt::format("{:.0f}", *g.memory_total_mib) : "?")
                                   : "n/a";
    table.add_row({std::to_string(g.index), percent(s.mean()), s.p95() ? fmt::format("{}%", *s.p95()) : "n/a",
                   s.share_under_50() ? fmt::format("{:.0f}%", *s.share_under_50() * 100) : "n/a", memory,
                   std::to_string(s.samples())});
  }
  text += table.str();
  const auto efficiency = gpu_efficiency(report);
  text += fmt::format("  GPU efficiency  {}\n", percent(efficiency));
  if (!efficiency) {
    text += "  (no utilization samples: the job ended before the first one, or nvidia-smi could not report it)\n";
  } else if (*efficiency < report.threshold_percent) {
    text += fmt::format("  Below {:g}%: the GPUs waited for work much of the time. What usually helps:\n",
                        report.threshold_percent);
    const std::optional<int> cpus_per_gpu =
        report.gpus.empty() ? report.cpus : report.cpus / static_cast<int>(report.gpus.size());
    for (const auto& hint : low_efficiency_hints(cpus_per_gpu, report.gpus.size(), *efficiency))
      text += fmt::format("    - {}\n", hint);
  }
  return text;
}

nlohmann::ordered_json job_report_json(const JobReport& report) {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const Gpu& g : report.gpus) {
    const UtilizationStats& s = report.stats.at(g.index);
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"name", g.name},
                    {"samples", s.samples()},
                    {"missing_samples", s.missing()},
                    {"util_mean", or_null(s.mean())},
                    {"util_p95", or_null(s.p95())},
                    {"util_under_50_share", or_null(s.share_under_50())},
                    {"mem_peak_mib", or_null(s.memory_peak_mib())},
                    {"mem_total_mib", or_null(g.memory_total_mib)}});
  }
  return {{"wall_s", report.wall_s},
          {"exit_status", report.exit_status},
          {"cpus", report.cpus},
          {"gpu_efficiency", or_null(gpu_efficiency(report))},
          {"threshold", report.threshold_percent},
          {"gpus", gpus}};
}

void check_report_destination(const std::string& file) {
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code error;
  if (std::filesystem::is_directory(file, error))
    throw Error(fmt::format("--report-json {}: it is a directory; name a file in it, such as {}",
                            text::printable(file, 200),
                            text::printable((std::filesystem::path(file) / "report.json").string(), 200)));
  if (!std::filesystem::is_directory(dir, error))
    throw Error(
        fmt::format("--report-json {}: the directory {} does not exist; create it first, or name a file in "
                    "an existing one",
                    text::printable(file, 200), text::printable(dir.string(), 200)));
  if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
    throw Error(fmt::format("--report-json {}: cannot write in {}: {}", text::printable(file, 200),
                            text::printable(dir.string(), 200), std::strerror(errno)));
}

int write_report_json(const std::string& path, const JobReport& report, int job_status) {
  if (path.empty()) return job_status;
  // Whole or not at all: a script may be waiting for the file.
  const std::optional<std::string> problem = replace_whole(path, json_text(job_report_json(report)));
  if (!problem) return job_status;
  spdlog::error("cannot write the report to {}: {}", text::printable(path, 200), *problem);
  return job_status == 0 ? exit_code::failure : job_status;
}

}  // namespace gpurun
