#pragma once
// The nvidia-smi command lines gpurun runs.
#include <span>
#include <string>
#include <string_view>

#include "gpurun/util/process.hpp"
#include "smi/smi_csv.hpp"

namespace gpurun {

// The two nvidia-smi invocations gpurun makes (GPUs, and the compute processes on them). The
// GPU query asks for `fields` (kGpuQueryFields, less any an old driver does not know); a stamped
// process query puts the time first (loop mode: rows of one iteration share it).
ProcessSpec gpu_query(const std::string& nvidia_smi, std::span<const std::string_view> fields = kGpuQueryFields);
ProcessSpec compute_apps_query(const std::string& nvidia_smi, bool stamped = false);

}  // namespace gpurun
