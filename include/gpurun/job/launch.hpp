#pragma once
// The launch: pick GPUs (waiting for them with --wait), reserve them, and run the job on them.
#include <iosfwd>

#include "gpurun/config/options.hpp"

namespace gpurun {

// Picks GPUs and execs `docker run` (never returns then), or prints the command (--dry-run).
int run_launch(const Options& options, std::ostream& out);

}  // namespace gpurun
