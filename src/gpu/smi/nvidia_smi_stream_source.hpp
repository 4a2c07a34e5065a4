#pragma once
// gpurund's nvidia-smi: the GPU query and the compute-apps query each kept running in loop mode
// (`-lms`) and read as they print, instead of two processes per sample.
#include <chrono>
#include <memory>
#include <string>

#include "gpurun/gpu/gpu_source.hpp"

namespace gpurun {

// `every`: the loop's period, the reader's sampling interval. The first read (and the first after a
// stream broke) is the one-shot NvidiaSmiSource's, whose errors say what to do.
std::unique_ptr<GpuSource> make_nvidia_smi_stream_source(std::string program, bool sensors,
                                                         std::chrono::milliseconds every);

}  // namespace gpurun
