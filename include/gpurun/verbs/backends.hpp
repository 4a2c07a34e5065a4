#pragma once
// Where jobs run, as one table of functions per backend: chosen once (the backend setting) by the
// verb table, so no verb asks which backend it is on. A new backend (Kubernetes, say) is one more
// table here and the functions it names.
#include <iosfwd>
#include <string>
#include <string_view>

#include "gpurun/config/options.hpp"

namespace gpurun {

struct BackendTable {
  std::string_view name;                                     // "local", "slurm"
  int (*launch)(const Options& options, std::ostream& out);  // pick, reserve, run the job
  int (*pick)(const Options& options, std::ostream& out);    // print the GPUs a launch would take
  int (*status)(const Options& options, std::ostream& out);  // every GPU (or node)
  int (*ps)(const Options& options, std::ostream& out);      // the jobs that hold GPUs
  // `logs|attach|stop|rm NAME` (the verb's name first); logs and attach may exec and not return.
  int (*manage)(const std::string& verb, const std::string& name, const Options& options, std::ostream& out);
};

// The table of `backend`.
const BackendTable& backend_table(Backend backend);

}  // namespace gpurun
