#include "gpurun/util/accounts.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <vector>

namespace gpurun {
namespace {

constexpr std::size_t kBufferSize = 16384;  // enough for any sane group's member list

}  // namespace

std::optional<gid_t> group_id(const std::string& name) {
  if (name.empty()) return std::nullopt;
  struct group entry {};
  struct group* found = nullptr;
  std::vector<char> buffer(kBufferSize);
  if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr)
    return std::nullopt;
  return found->gr_gid;
}

std::string group_name(gid_t gid) {
  struct group entry {};
  struct group* found = nullptr;
  std::vector<char> buffer(kBufferSize);
  if (::getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->gr_name == nullptr)
    return std::to_string(gid);
  return found->gr_name;
}

std::string user_name(uid_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(kBufferSize);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_name == nullptr)
    return std::to_string(uid);
  return found->pw_name;
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

}  // namespace gpurun
