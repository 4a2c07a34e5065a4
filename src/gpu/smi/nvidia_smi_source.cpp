#include "smi/nvidia_smi_source.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>

#include "gpurun/gpu/topology.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/privileges.hpp"
#include "gpurun/util/text.hpp"
#include "smi/smi_csv.hpp"
#include "smi/smi_query.hpp"

namespace gpurun {
namespace {

// Fields gpurun can do without: a driver that does not know one is asked again without it.
constexpr std::array<std::string_view, 6> kOptionalFields{"name",       "utilization.gpu", "mig.mode.current",
                                                          "pci.bus_id", "power.draw",      "temperature.gpu"};

// The GPU query's fields: the bus id only where sysfs can place a GPU by it (gpurun/gpu/topology.hpp), the sensors
// only when asked for.
std::vector<std::string_view> query_fields(bool sensors) {
  std::vector<std::string_view> fields(kGpuQueryFields.begin(), kGpuQueryFields.end());
  if (pci_sysfs_readable(sysfs_root())) fields.push_back(kPciBusIdField);
  if (sensors) fields.insert(fields.end(), kSensorFields.begin(), kSensorFields.end());
  return fields;
}

std::string hint_for(int exit_code) {
  switch (exit_code) {
    case 2:
      return "This driver does not know a field gpurun asks for; a newer driver, or --from-csv, is needed.";
    case 6:
      return "No NVIDIA GPU is visible on this machine.";
    case 9:
      return "Is the NVIDIA driver installed and loaded (lsmod | grep nvidia)?";
    case 18:
      return "The driver and its library differ in version, usually after a driver upgrade: reboot, or reload the "
             "nvidia kernel modules.";
    default:
      return "";
  }
}

// nvidia-smi's own words: it prints its errors on stdout, some on stderr. Lines with `columns`
// cells are data rows, not words: a failed answer's CSV is not repeated in the error.
std::string own_words(const ProcessResult& result, std::size_t columns) {
  std::string words;
  for (const std::string* stream : {&result.out, &result.err}) {
    for (const auto& line : text::non_blank_lines(*stream)) {
      if (words.size() > 800) break;
      if (columns > 1 && text::split(line.text, ',').size() == columns) continue;
      words += fmt::format("{}{}", words.empty() ? "" : " ", text::printable(text::trim(line.text), 300));
    }
  }
  return words;
}

[[noreturn]] void fail(const ProcessResult& result, const ProcessSpec& spec, std::chrono::milliseconds timeout,
                       std::size_t columns) {
  const std::string& program = spec.argv.front();
  if (result.end == ProcessResult::End::not_started && result.spawn_errno == ENOENT)
    throw Error(fmt::format("nvidia-smi not found (looked for \"{}\"{}): {}", program,
                            program.find('/') == std::string::npos ? " on PATH" : "",
                            // Under sudo --nvidia-smi would be refused: only the admin's file names programs.
                            acting_for_caller() ? "ask your admin to install the NVIDIA driver utilities, or to set "
                                                  "\"nvidia_smi\" in /etc/gpurun/config.json"
                                                : "install the NVIDIA driver utilities, or pass --nvidia-smi PATH, or "
                                                  "--from-csv FILE to read a recorded snapshot"));
  const std::string words = own_words(result, columns);
  const std::string hint = result.end == ProcessResult::End::exited      ? hint_for(result.exit_code)
                           : result.end == ProcessResult::End::timed_out ? "A busy or hung driver answers late: "
                                                                           "--smi-timeout SECONDS waits longer."
                                                                         : "";
  // What comes before the hint may end without a full stop ("No devices were found"): one then.
  const bool ended = words.ends_with('.') || words.ends_with('?') || words.ends_with('!');
  throw Error(fmt::format("{} {} {}{}{}", program, spec.argv[1], describe_end(result, timeout),
                          words.empty() ? "" : ": " + words, hint.empty() ? "" : (ended ? " " : ". ") + hint));
}

// Exit 14 (infoROM corrupted) and 15 (a GPU fell off the bus) come with the rows of the others.
bool warning_exit(const ProcessResult& result) {
  return result.end == ProcessResult::End::exited && (result.exit_code == 14 || result.exit_code == 15);
}

// The optional field an old driver rejected: `Field "mig.mode.current" is not a valid field to query.`
std::optional<std::string_view> rejected_field(const ProcessResult& result,
                                               const std::vector<std::string_view>& fields) {
  if (result.end != ProcessResult::End::exited || result.exit_code != 2) return std::nullopt;
  const std::string output = result.out + result.err;
  for (const auto& line : text::non_blank_lines(output)) {
    const std::string_view t = text::trim(line.text);
    if (!t.starts_with("Field \"")) continue;
    const std::string_view name = t.substr(7, t.find('"', 7) - 7);
    const bool optional = std::find(kOptionalFields.begin(), kOptionalFields.end(), name) != kOptionalFields.end();
    const auto known = std::find(fields.begin(), fields.end(), name);
    if (optional && known != fields.end()) return *known;
  }
  return std::nullopt;
}

// A successful answer, or one with a warning exit whose rows parse; anything else is an error.
template <typename Parse>
auto answer(const ProcessResult& result, const ProcessSpec& spec, std::chrono::milliseconds timeout,
            std::size_t columns, Parse parse) {
  if (result.succeeded()) return parse(result.out);
  if (!warning_exit(result)) fail(result, spec, timeout, columns);
  try {
    return parse(result.out);
  } catch (const Error&) {
    fail(result, spec, timeout, columns);
  }
}

void add_unique(std::vector<std::string>& list, std::string item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

}  // namespace

NvidiaSmiSource::NvidiaSmiSource(std::string program, bool sensors)
    : program_(std::move(program)), fields_(query_fields(sensors)) {}

Snapshot NvidiaSmiSource::read(std::chrono::milliseconds timeout) { return begin_read(timeout)(); }

std::function<Snapshot()> NvidiaSmiSource::begin_read(std::chrono::milliseconds timeout) {
  // Shared: a std::function is copyable; the queries are killed if it goes unanswered.
  auto started =
      std::make_shared<StartedProcesses>(start_processes({gpu_query(program_, fields_), compute_apps_query(program_)}));
  return [this, started, timeout] { return answer_of(wait_processes(*started, timeout), timeout); };
}

Snapshot NvidiaSmiSource::answer_of(std::vector<ProcessResult> results, std::chrono::milliseconds timeout) {
  std::vector<ProcessSpec> specs{gpu_query(program_, fields_), compute_apps_query(program_)};
  while (const auto field = rejected_field(results[0], fields_)) {
    spdlog::debug("{} does not know the field {}: asking without it from now on", program_, *field);
    fields_.erase(std::find(fields_.begin(), fields_.end(), *field));
    specs[0] = gpu_query(program_, fields_);
    results[0] = run_process(specs[0], timeout);
  }

  GpuTable table = answer(results[0], specs[0], timeout, fields_.size(),
                          [&](const std::string& out) { return parse_gpu_table(out, fields_); });
  const std::vector<GpuProcess> processes =
      answer(results[1], specs[1], timeout, kComputeAppFields.size(), parse_compute_apps_csv);

  std::vector<std::string> warnings;
  for (const ProcessResult& result : results)
    for (const auto& line : text::non_blank_lines(result.err))
      if (is_warning_line(line.text)) warnings.push_back("nvidia-smi: " + text::printable(text::trim(line.text), 300));
  if (warning_exit(results[0]) && table.warnings.empty() && table.lost.empty() && warnings.empty())
    warnings.push_back(
        fmt::format("nvidia-smi exited with status {} but listed the GPUs; using them", results[0].exit_code));
  return smi_snapshot(std::move(table), processes, warnings);
}

Snapshot smi_snapshot(GpuTable table, const std::vector<GpuProcess>& processes,
                      const std::vector<std::string>& stream_warnings) {
  Snapshot snapshot;
  snapshot.source = "nvidia-smi";
  for (const std::string& warning : table.warnings) add_unique(snapshot.warnings, "nvidia-smi: " + warning);
  for (const std::string& warning : stream_warnings) add_unique(snapshot.warnings, warning);
  for (const LostGpu& lost : table.lost)
    add_unique(snapshot.warnings, fmt::format("nvidia-smi cannot reach the GPU at PCI bus {}{}: it is left out, the "
                                              "others are used",
                                              lost.pci_bus_id, lost.error.empty() ? "" : " (" + lost.error + ")"));
  if (table.gpus.empty())
    throw Error(table.lost.empty() ? "nvidia-smi listed no GPUs"
                                   : fmt::format("nvidia-smi cannot reach any GPU: {}", snapshot.warnings.front()));
  snapshot.gpus = std::move(table.gpus);
  snapshot.lost = std::move(table.lost);
  attach_processes(snapshot.gpus, processes);
  std::stable_sort(snapshot.gpus.begin(), snapshot.gpus.end(),
                   [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return snapshot;
}

}  // namespace gpurun
