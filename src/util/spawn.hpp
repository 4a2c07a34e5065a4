#pragma once
// Starting one child and ending it (util/process.cpp waits for them, util/child_stream.cpp reads
// one as a stream): posix_spawn with its file actions and attributes, and the kill and reap that
// never hang on a child stuck in the kernel.
#include <spawn.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gpurun/util/fd.hpp"
#include "gpurun/util/process.hpp"

namespace gpurun::spawning {

// Owns one posix_spawn object (file actions, attributes) from its init to its destroy.
template <typename T, int (*init)(T*), int (*destroy)(T*)>
class SpawnObject {
 public:
  SpawnObject() { init(&object_); }
  ~SpawnObject() { destroy(&object_); }
  SpawnObject(const SpawnObject&) = delete;
  SpawnObject& operator=(const SpawnObject&) = delete;
  T* get() { return &object_; }

 private:
  T object_{};
};

using FileActions =
    SpawnObject<posix_spawn_file_actions_t, ::posix_spawn_file_actions_init, ::posix_spawn_file_actions_destroy>;

// Default signal handling, an empty mask, root's real ids under sudo, and a group of its own where
// set_children_in_own_groups asks.
class SpawnAttributes : public SpawnObject<posix_spawnattr_t, ::posix_spawnattr_init, ::posix_spawnattr_destroy> {
 public:
  SpawnAttributes();
  const bool own_group;
};

struct Running {
  pid_t pid = -1;
  bool own_group = false;  // it leads a process group of its own (set_children_in_own_groups)
  Fd out;
  Fd err;
  Fd pidfd;  // readable once the child has ended; invalid where the kernel has none (before 5.3)
  bool reaped = false;
};

// Starts one child with stdin from `spec.input` (else /dev/null), stdout into a pipe, and stderr
// into another (or /dev/null, where nobody will read it: a closed pipe would kill the child with
// SIGPIPE at its first warning). A child not started has pid -1 and its errno in `result`.
Running spawn(const ProcessSpec& spec, ProcessResult& result, bool read_stderr = true);

// waitpid, again after EINTR.
pid_t wait_for(pid_t pid, int& status, int flags);

// The end `status` says, into `result`.
void record_status(int status, ProcessResult& result);

// SIGKILL for a child not yet reaped and, where it leads a group of its own, for all that group.
void kill_child(pid_t pid, bool own_group);

// Whether a child has ended, asked without reaping it.
bool has_ended(pid_t pid);

// Reaps `pid`, just killed, within `limit`; false past it (the child is left to later spawns).
bool reap_killed(pid_t pid, int& status, std::chrono::milliseconds limit = std::chrono::seconds(2));

}  // namespace gpurun::spawning
