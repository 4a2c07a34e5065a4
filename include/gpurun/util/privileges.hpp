#pragma once
// Acting for another user (gpurun under sudo). The process keeps real and saved uid 0 but runs
// with the caller's effective uid, gid and groups, so that every file it opens, reads, writes or
// resolves is checked by the kernel with the caller's rights: a file the caller cannot read cannot
// be read (nor echoed in an error) by mistake. Only what needs root gets it: the children gpurun
// spawns take the real ids, root's (POSIX_SPAWN_RESETIDS, util/process.cpp), and AsRoot raises the
// whole process for a short scope (exec'ing docker, the lock directory, the system file). Since
// credentials are per process, AsRoot is for moments no other thread reads a caller's file.
#include <sys/types.h>

#include <string>
#include <vector>

namespace gpurun {

struct UserIds {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as getgrouplist() gives them
};

// Switches the effective ids to `ids` (from root; real and saved uid stay 0). Throws Error when
// the kernel refuses. Called once, before any file of the caller is touched.
void act_as(const UserIds& ids);

// Whether act_as() was called: gpurun acts for a caller (also while an AsRoot is in scope).
bool acting_for_caller();

// The ids act_as() took on (empty ids when not acting for a caller).
const UserIds& caller_ids();

// Root for the scope of this object when acting for a caller; nothing otherwise.
class AsRoot {
 public:
  AsRoot();
  ~AsRoot();
  AsRoot(const AsRoot&) = delete;
  AsRoot& operator=(const AsRoot&) = delete;

 private:
  bool raised_ = false;
};

}  // namespace gpurun
