#pragma once
// The GPU source that runs nvidia-smi: the GPU query and the compute-apps query at once.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/gpu/gpu_source.hpp"
#include "gpurun/util/process.hpp"
#include "smi/smi_csv.hpp"

namespace gpurun {

class NvidiaSmiSource final : public GpuSource {
 public:
  // `sensors`: ask power draw and temperature too.
  explicit NvidiaSmiSource(std::string program, bool sensors = false);

  // Throws Error with nvidia-smi's own words (it prints its errors on stdout) and a hint. An
  // answer with data despite a warning exit (14: infoROM corrupted, 15: a GPU lost) is taken,
  // with the warnings in the snapshot. A driver that does not know an optional field (before
  // R450: mig.mode.current) is asked again without it, and never again with it by this source.
  Snapshot read(std::chrono::milliseconds timeout) override;
  std::function<Snapshot()> begin_read(std::chrono::milliseconds timeout) override;  // both queries started
  bool works_in_other_processes() const override { return true; }
  std::string name() const override { return "nvidia-smi"; }

  // The --query-gpu fields asked for now.
  const std::vector<std::string_view>& gpu_fields() const { return fields_; }

 private:
  Snapshot answer_of(std::vector<ProcessResult> results, std::chrono::milliseconds timeout);

  std::string program_;
  std::vector<std::string_view> fields_;
};

// A snapshot of nvidia-smi's two answers, parsed: the table's warnings and lost GPUs said, the processes placed on
// their GPUs. Throws Error when no GPU is listed.
Snapshot smi_snapshot(GpuTable table, const std::vector<GpuProcess>& processes,
                      const std::vector<std::string>& stream_warnings = {});

}  // namespace gpurun
