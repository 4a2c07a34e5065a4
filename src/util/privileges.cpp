#include "gpurun/util/privileges.hpp"

#include <grp.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

UserIds& taken() {
  static UserIds ids;
  return ids;
}
std::vector<gid_t>& root_groups() {
  static std::vector<gid_t> groups;
  return groups;
}

[[noreturn]] void fail(const char* what) { throw Error(fmt::format("cannot {}: {}", what, std::strerror(errno))); }

void lower_to(const UserIds& ids) {
  if (::setgroups(ids.groups.size(), ids.groups.data()) != 0) fail("take on the caller's groups");
  if (::setegid(ids.gid) != 0) fail("take on the caller's group id");
  if (::seteuid(ids.uid) != 0) fail("take on the caller's user id");
}

}  // namespace

void act_as(const UserIds& ids) {
  const int count = ::getgroups(0, nullptr);
  root_groups().resize(static_cast<std::size_t>(count > 0 ? count : 0));
  if (count > 0 && ::getgroups(count, root_groups().data()) < 0) fail("read root's groups");
  lower_to(ids);
  taken() = ids;
}

bool acting_for_caller() { return taken().uid != 0; }

const UserIds& caller_ids() { return taken(); }

AsRoot::AsRoot() {
  if (!acting_for_caller() || ::geteuid() == 0) return;  // not under sudo, or raised already
  // Back to root: uid first (the group calls need it), then root's own gid and groups.
  if (::seteuid(0) != 0) fail("take on root's rights again");
  if (::setegid(0) != 0 || ::setgroups(root_groups().size(), root_groups().data()) != 0) {
    // Half raised (a seccomp or LSM denial): back to the caller before the error is thrown, since
    // those who catch it go on with what they meant to do with the caller's rights.
    const int error = errno;
    try {
      lower_to(taken());
    } catch (const Error&) {
      std::abort();  // never go on as root where the caller's rights were meant
    }
    errno = error;
    fail("take on root's rights again");
  }
  raised_ = true;
}

AsRoot::~AsRoot() {
  if (!raised_) return;
  try {
    lower_to(taken());
  } catch (const Error&) {
    std::abort();  // never go on as root where the caller's rights were meant
  }
}

}  // namespace gpurun
