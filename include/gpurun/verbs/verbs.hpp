#pragma once
// One library function per verb (the launch itself is gpurun/job/launch.hpp); the CLI layer fills
// Options and calls one of these.
// Each returns the process exit code or throws gpurun::Error. Results go to `out`.
#include <iosfwd>
#include <string>

#include "gpurun/config/config.hpp"
#include "gpurun/config/options.hpp"

namespace gpurun {

// Prints the chosen GPUs' indices, "2,5" (or JSON).
int run_pick(const Options& options, std::ostream& out);

// Prints every GPU with its state (a table, or JSON).
int run_status(const Options& options, std::ostream& out);

// Prints the running containers that hold GPUs, whoever started them (a table, or JSON).
int run_ps(const Options& options, std::ostream& out);

// `gpurun logs|attach|stop|rm NAME`: execs the engine's `logs --follow` or `attach`, or runs its
// `stop` or `rm` and prints the name, on a container gpurun started; under sudo only on the caller's own (or any, for
// the policy's admin_group).
int run_manage(const std::string& verb, const std::string& name, const Options& options, std::ostream& out);

// `gpurun config [--json]`: the effective configuration; `gpurun config init`: writes the starter
// user file (never over an existing one) and prints its path.
// `config`: the table (or --json); `config init`: writes the starter user file (with --system,
// prints the starter system file).
int run_config(const Config& config, const ConfigInputs& inputs, bool init, const Options& options, std::ostream& out);
// `config --check FILE`: 0 and what the file sets, or Error (125) naming file, line and key.
int run_config_check(const std::string& path, std::ostream& out);

// What the gpurun service recorded, asked over its socket (Error, 125, without the service):
// `history` the runs, newest first; `usage` their sums per user, image or GPU (default the last
// 30 days); `report NAME` one run's --report-like summary, with hints.
int run_history(const Options& options, std::ostream& out);
int run_usage(const Options& options, std::ostream& out);
int run_report(const std::string& name, const Options& options, std::ostream& out);

}  // namespace gpurun
