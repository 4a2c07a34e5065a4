#pragma once
// Everything a gpurun invocation asks for, filled in by the CLI layer.
#include <optional>
#include <string>
#include <vector>

namespace gpurun {

struct Options {
  // Where the GPU table comes from.
  std::string nvidia_smi = "nvidia-smi";
  double smi_timeout_s = 10.0;
  std::optional<std::string> from_csv;  // a recorded --query-gpu snapshot ("-" for stdin)
  std::optional<std::string> from_apps_csv;  // with it, a recorded --query-compute-apps snapshot

  // What counts as free, and how many to take.
  int gpus = 1;
  std::string max_util = "10%";
  std::string max_memory = "10%";
  bool allow_busy = false;
  bool container_awareness = true;  // ask the Docker engine which containers hold GPUs
  std::string lock_dir;             // reservations; empty: the default place
  std::optional<std::vector<int>> allowed_gpus;  // site policy: only these may be handed out
  std::string not_allowed_reason;                // why the others are not (names the rule and file)

  // The docker run command.
  std::string docker = "docker";
  std::string image;
  std::optional<int> cpus_per_gpu;
  std::optional<int> host_cpus;
  std::string name;
  std::vector<std::string> env;
  std::vector<std::string> volumes;
  std::vector<std::string> publish;
  std::vector<std::string> docker_opts;
  std::vector<std::string> command;
  bool dry_run = false;
  bool detach = false;
  std::optional<std::string> wait;  // --wait[=DURATION]: "" waits without limit

  // --report: run the job as a child and summarise how well it used its GPUs.
  bool report = false;
  std::string report_json;        // also write the summary as JSON here
  double report_threshold = 80;   // below this GPU efficiency (%), give hints
  double report_interval_s = 1;   // seconds between samples

  // status --watch: redraw every this many seconds; stop after watch_count frames (0: never).
  std::optional<double> watch_s;
  int watch_count = 0;

  // Output.
  bool json = false;
};

}  // namespace gpurun
