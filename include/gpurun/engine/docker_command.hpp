#pragma once
// Builds the `docker run` argv for a launch: a pure function of its inputs.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/engine/gpu_request.hpp"

namespace gpurun {

// Who launches, and from where; read from the process by current_identity().
struct LaunchIdentity {
  unsigned uid = 0;
  unsigned gid = 0;
  std::string login;             // login name; starts the container name (servers' naming rule)
  std::string workdir;           // mounted at the same path and used as the working directory
  std::string workdir_source;    // the host path mounted there; empty: workdir itself
  std::vector<unsigned> groups;  // supplementary groups to add (--group-add); set under sudo only
};
LaunchIdentity current_identity();
// The working directory alone (getcwd); throws Error, saying what to do, where it cannot be read.
std::string current_workdir();

// Throws Error where the working directory, which every container backend mounts at its own path,
// is / (docker refuses it: all of the host) or a system directory (/usr, /etc, /opt: the image's
// own Python and libraries hidden, a job failing far from the cause), saying what to do.
void check_workdir_mount(const std::string& workdir);

struct DockerRunRequest {
  std::string docker = "docker";  // argv[0]
  std::string image;
  std::vector<int> gpu_indices;                       // ascending
  std::vector<std::string> gpu_uuids;                 // same order as gpu_indices
  GpuRequestForm gpu_request = GpuRequestForm::gpus;  // how the GPUs are asked for (gpu_request.hpp)
  int cpus = 0;
  std::string cpuset_cpus;  // --cpuset-cpus "48-63,176-191"; empty: none
  std::string cpuset_mems;  // --cpuset-mems "3"; empty: none
  LaunchIdentity identity;
  // --init (docker's engines; podman's needs catatonit, which it may lack): an init as the job's
  // PID 1, which passes signals on and reaps. As PID 1 itself a job ignores a SIGTERM it has no
  // handler for, and a shell wrapping it (sh -c) passes none on: `gpurun stop` and the idle policy
  // would wait out their grace and kill, the job never told.
  bool init = false;
  bool tty = false;                                // add --tty (stdin and stdout are terminals)
  bool detach = false;                             // --detach (-dit), and no --rm: the output stays
  std::string name;                                // container name; empty: generated from login and GPUs
  std::string name_suffix;                         // makes a generated name unique per launch
  std::vector<std::string> env;                    // -e/--env
  std::vector<std::string> volumes;                // -v/--volume
  std::vector<std::string> publish;                // -p/--publish
  std::vector<std::string> docker_opts;            // --docker-opt, verbatim
  std::vector<std::string> command;                // after the image; empty: the image's own command
  std::optional<std::chrono::seconds> time_limit;  // the gpurun.time-limit label: the service stops it then
  bool notify = false;                             // the gpurun.notify label: the service tells its user when it ends
  bool for_caller = false;                         // under sudo: --security-opt no-new-privileges, the uid label,
                                                   // NVIDIA_VISIBLE_DEVICES pinned to the reserved GPUs
};

std::vector<std::string> build_docker_argv(const DockerRunRequest& request);

// "<login>_gpu2-5_<suffix>", with characters docker refuses in names replaced by '_'.
std::string container_name(std::string_view login, const std::vector<int>& gpu_indices, std::string_view suffix);

// A short random hex string for container names.
std::string random_suffix();

// The labels gpurun puts on every container it launches (read back by later verbs and gpurund),
// each written even where empty, so that none is the image's.
inline constexpr std::string_view kLabelUser = "gpurun.user";
inline constexpr std::string_view kLabelGpus = "gpurun.gpus";
inline constexpr std::string_view kLabelGpuUuids = "gpurun.gpu-uuids";
inline constexpr std::string_view kLabelUid = "gpurun.uid";  // the launching user's uid
inline constexpr std::string_view kLabelTimeLimit =
    "gpurun.time-limit";                                           // seconds from the container's start; "": none
inline constexpr std::string_view kLabelNotify = "gpurun.notify";  // "run_ended": say when it ends; "": don't
// "true": a detached launch's, whose container stays after its job for its output, and which the
// service removes once ended long enough; "": an attached one's (--rm, or kept on purpose).
inline constexpr std::string_view kLabelDetached = "gpurun.detached";
// The container's own name: gpurun's labels on a container of another name are its image's (one
// committed from a gpurun container, run with plain `docker run`), and none of them holds.
inline constexpr std::string_view kLabelName = "gpurun.name";

// Whether the gpurun labels of the container named `name` were written at its launch: its
// gpurun.name label (`name_label`; none on containers of gpurun before it wrote one) names it.
inline bool labels_written_for(const std::optional<std::string>& name_label, std::string_view name) {
  return !name_label || *name_label == name;
}

}  // namespace gpurun
