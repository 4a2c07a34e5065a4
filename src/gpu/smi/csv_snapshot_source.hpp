#pragma once
// A recorded `nvidia-smi --query-gpu` CSV (--from-csv), with its compute-apps CSV when one was
// recorded too (--from-apps-csv). Without one, the snapshot says processes were not checked.
#include <optional>
#include <string>

#include "gpurun/gpu/gpu_source.hpp"

namespace gpurun {

class CsvSnapshotSource final : public GpuSource {
 public:
  // "-" reads stdin (for one of the two files only).
  CsvSnapshotSource(std::string path, std::optional<std::string> apps_path);

  // Reads the file(s) on every call: a snapshot rewritten between reads is seen anew.
  Snapshot read(std::chrono::milliseconds timeout) override;
  std::string name() const override;

 private:
  std::string path_;
  std::optional<std::string> apps_path_;
  std::optional<std::string> stdin_;  // stdin can be read once: kept for the next read()

  // A pipe that sends nothing for `timeout` is given up (the flag names it in the error).
  std::string contents(const std::string& path, const char* flag, std::chrono::milliseconds timeout);
};

}  // namespace gpurun
