#include "smi/csv_snapshot_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "gpurun/util/error.hpp"
#include "smi/smi_csv.hpp"

namespace gpurun {
namespace {

std::string shown(const std::string& path) { return path == "-" ? "stdin" : path; }

std::string slurp(const std::string& path, const char* flag) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("cannot read {} {}: {}", flag, path, std::strerror(errno)));
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

}  // namespace

CsvSnapshotSource::CsvSnapshotSource(std::string path, std::optional<std::string> apps_path)
    : path_(std::move(path)), apps_path_(std::move(apps_path)) {
  if (apps_path_ && *apps_path_ == "-" && path_ == "-")
    throw Error("--from-csv and --from-apps-csv cannot both read stdin: give one of them as a file");
}

std::string CsvSnapshotSource::contents(const std::string& path, const char* flag) {
  if (path != "-") return slurp(path, flag);
  if (!stdin_) stdin_.emplace(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  return *stdin_;
}

std::string CsvSnapshotSource::name() const { return "snapshot " + shown(path_); }

Snapshot CsvSnapshotSource::read(std::chrono::milliseconds /*timeout*/) {
  GpuTable table;
  try {
    table = parse_gpu_table(contents(path_, "--from-csv"));
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
    try {
      attach_processes(snapshot.gpus, parse_compute_apps_csv(contents(*apps_path_, "--from-apps-csv")));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", shown(*apps_path_), e.what()));
    }
  }
  std::stable_sort(snapshot.gpus.begin(), snapshot.gpus.end(),
                   [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return snapshot;
}

}  // namespace gpurun
