#pragma once
// Who holds a GPU, from the GPU's processes rather than from an engine: the container a process
// runs in (its /proc/PID/cgroup) and the user who owns it. This sees containers no engine we ask
// can show: a rootless docker's or podman's (one engine per user), a Kubernetes pod's.
#include <unistd.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/engine/containers.hpp"
#include "gpurun/gpu/gpu.hpp"

namespace gpurun {

// The container a cgroup path names.
struct CgroupContainer {
  std::string id;           // the container's full ID (64 hex digits)
  std::string engine;       // "docker", "podman", "containerd", "cri-o", or "" when the path does not say
  bool kubernetes = false;  // under kubepods
  // Under user@UID.service, or monitored by a conmon that UID runs: that user's own engine runs it.
  std::optional<unsigned> rootless_uid;
};

// Reads /proc/PID/cgroup text (cgroup v2's "0::/path", v1's "N:controllers:/path"); nullopt
// when no line names a container. The outermost container wins (it is the host engine's).
std::optional<CgroupContainer> container_from_cgroup(std::string_view cgroup_text);

struct ProcessOwner {
  long pid = 0;
  std::optional<unsigned> uid;  // the process's real uid
  // Whom to name: the rootless engine's user where there is one (inside a user namespace the
  // process's uid is one of that user's subordinate uids), else the process's; the login name,
  // or "uid N" when it has none.
  std::string user;
  std::optional<CgroupContainer> container;
};

// Where /proc is read: under $GPURUN_SYSFS_ROOT like sysfs (tests build a fake tree there), else
// "/proc".
std::string host_proc_root();

// What /proc (or `proc_root`, a fake tree in tests) says about `pid`; nullopt when the process
// is gone or hidden from us (hidepid). Where its cgroup names no container (rootless podman on
// cgroup v1 leaves its containers in the user's cgroup), the conmon among its ancestors does.
std::optional<ProcessOwner> process_owner(long pid, const std::string& proc_root = "/proc");

// Whether a process in `found` runs in `holder`. A rootless engine's container is one the engine
// asked listed only where that engine is the asker's own (`asking_uid`'s): under root, a user who
// names a scope in their own cgroup (or a parent process) after someone else's container ID
// claims nothing of that container.
bool runs_in(const CgroupContainer& found, const GpuContainer& holder, unsigned asking_uid);

// The containers that hold GPUs as their processes show, added to `holders` (the engine's own
// answer): a container the engine did not name is added (from_processes), named by its short ID
// and owner, holding the GPUs (by UUID) its processes run on; one it named (runs_in) gets any GPU
// it lacks. `asking_uid`: whose engine was asked (the real uid of this process).
void add_process_holders(std::vector<GpuContainer>& holders, const std::vector<Gpu>& gpus,
                         const std::string& proc_root = "/proc", unsigned asking_uid = ::getuid());

}  // namespace gpurun
