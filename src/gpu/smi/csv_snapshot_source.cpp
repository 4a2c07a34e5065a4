#include "smi/csv_snapshot_source.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"
#include "smi/smi_csv.hpp"

namespace gpurun {
namespace {

// As messages name it: a line end in the name stays on the message's line.
std::string shown(const std::string& path) { return path == "-" ? "stdin" : text::terminal_safe(path); }

// nvidia-smi's CSV is about 200 bytes a GPU; more than this is not one.
constexpr std::size_t kMaxSnapshotBytes = std::size_t{64} << 20;

std::string slurp(const std::string& path, const char* flag, std::chrono::milliseconds timeout) {
  BoundedRead file = path == "-" ? read_bounded(STDIN_FILENO, kMaxSnapshotBytes, timeout)
                                 : read_bounded(path, kMaxSnapshotBytes, FileKinds::streams_too, timeout);
  if (!file.text)
    throw Error(fmt::format("cannot read {} {}: {}; give the file nvidia-smi's CSV was saved to", flag, shown(path),
                            file.problem));
  return std::move(*file.text);
}

}  // namespace

CsvSnapshotSource::CsvSnapshotSource(std::string path, std::optional<std::string> apps_path)
    : path_(std::move(path)), apps_path_(std::move(apps_path)) {
  if (apps_path_ && *apps_path_ == "-" && path_ == "-")
    throw Error("--from-csv and --from-apps-csv cannot both read stdin: give one of them as a file");
}

std::string CsvSnapshotSource::contents(const std::string& path, const char* flag, std::chrono::milliseconds timeout) {
  if (path != "-") return slurp(path, flag, timeout);
  if (!stdin_) stdin_ = slurp(path, flag, timeout);
  return *stdin_;
}

std::string CsvSnapshotSource::name() const { return "snapshot " + shown(path_); }

Snapshot CsvSnapshotSource::read(std::chrono::milliseconds timeout) {
  GpuTable table;
  const std::string text = contents(path_, "--from-csv", timeout);
  try {
    table = parse_gpu_table(text);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", shown(path_), e.what()));
  }
  if (table.gpus.empty()) throw Error(fmt::format("{} lists no GPUs", shown(path_)));

  Snapshot snapshot;
  snapshot.source = name();
  snapshot.gpus = std::move(table.gpus);
  snapshot.lost = std::move(table.lost);
  snapshot.warnings = std::move(table.warnings);
  snapshot.processes_known = apps_path_.has_value();
  if (apps_path_) {
    const std::string apps = contents(*apps_path_, "--from-apps-csv", timeout);
    try {
      attach_processes(snapshot.gpus, parse_compute_apps_csv(apps));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", shown(*apps_path_), e.what()));
    }
  }
  std::stable_sort(snapshot.gpus.begin(), snapshot.gpus.end(),
                   [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return snapshot;
}

}  // namespace gpurun
