#pragma once
// The gpurun service's loop: every interval, one look at the machine (GPU source + engine, as
// gpurun opens them), fed to the run model; the runs written to the store every flush interval
// and whenever one starts or ends; the socket (gpurun/service/service_server.hpp) answers meanwhile. One recorder per
// state directory (an flock on gpurund.lock); a failing GPU source or engine is logged (once per distinct message) and
// tried again at the next tick; a store that cannot be written keeps the runs in memory and writes them when it can.
#include <chrono>
#include <string>

#include "gpurun/config/options.hpp"
#include "gpurun/config/service_section.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/service/service_server.hpp"
#include "gpurun/util/stop_request.hpp"

namespace gpurun {

struct RecorderSettings {
  std::string state_dir = "/var/lib/gpurun";
  std::chrono::milliseconds interval{10'000};
  std::chrono::milliseconds flush_every{10'000};  // and whenever a run starts or ends
  TrackerSettings tracker;
  // How long the GPU history is kept (runs are kept for ever): raw samples, one-minute rows.
  std::chrono::hours keep_samples{24 * 14};
  std::chrono::hours keep_minutes{24 * 400};
  // How long a detached job's container stays after its job ended (its output, for gpurun logs)
  // before the service removes it (gpurun/service/ended_containers.hpp).
  std::chrono::seconds keep_ended_containers{std::chrono::hours(24 * 7)};
  ServerSettings server;             // the socket `gpurun history`, `usage` and `report` ask
  std::string listen;                // HOST:PORT of /metrics (gpurun/service/web_server.hpp); "": none
  std::string dcgm_job_mapping_dir;  // DCGM's job mapping files for dcgm-exporter; "": none
};

// Sets what `section` sets (the system file's "service" section, or gpurund's flags in that shape);
// the rest stays. gpurund applies the file's, then the flags'.
void apply_service_section(const ServiceSection& section, RecorderSettings& settings);

// Runs until `stop` is requested (a signal handler requests it), which also ends at once what a
// sample waits for (nvidia-smi, the engine); writes what it holds and returns 0 then. Throws
// Error when it cannot start: another recorder holds the directory, no database.
int run_recorder(const Options& options, const RecorderSettings& settings, const StopRequest& stop);

}  // namespace gpurun
