#include "gpurun/util/accounts.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>
#include <vector>

namespace gpurun {
namespace {

// Calls a getXXnam_r/getXXid_r-style `lookup(buffer, size)` with a buffer that grows while the entry
// does not fit (ERANGE: a group with thousands of members), and returns its status. The buffer is
// left uninitialized: the lookup writes what it returns, and zeroing 16 KB cost each launch pages.
template <typename Lookup>
int with_entry_buffer(std::unique_ptr<char[]>& buffer, Lookup lookup) {
  constexpr std::size_t kFirstSize = 16384;
  constexpr std::size_t kLargestSize = std::size_t{16} << 20;
  for (std::size_t size = kFirstSize;; size *= 2) {
    buffer = std::make_unique_for_overwrite<char[]>(size);
    const int status = lookup(buffer.get(), size);
    if (status != ERANGE || size >= kLargestSize) return status;
  }
}

}  // namespace

std::optional<gid_t> group_id(const std::string& name) {
  if (name.empty()) return std::nullopt;
  struct group entry {};
  struct group* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getgrnam_r(name.c_str(), &entry, data, size, &found); });
  if (status != 0 || found == nullptr) return std::nullopt;
  return found->gr_gid;
}

std::string group_name(gid_t gid) {
  struct group entry {};
  struct group* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getgrgid_r(gid, &entry, data, size, &found); });
  if (status != 0 || found == nullptr || found->gr_name == nullptr) return std::to_string(gid);
  return found->gr_name;
}

namespace {

std::optional<std::string> login_name(uid_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getpwuid_r(uid, &entry, data, size, &found); });
  if (status != 0 || found == nullptr || found->pw_name == nullptr) return std::nullopt;
  return found->pw_name;
}

// The users whose primary group is `gid`, from the whole passwd database (getpwent_r: local files,
// and a directory service only where it enumerates). nullopt when the enumeration fails.
std::optional<std::vector<uid_t>> primary_members(gid_t gid) {
  std::vector<uid_t> members;
  ::setpwent();
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::unique_ptr<char[]> buffer;
  int status = 0;
  while ((status = with_entry_buffer(
              buffer, [&](char* data, std::size_t size) { return ::getpwent_r(&entry, data, size, &found); })) == 0 &&
         found != nullptr)
    if (found->pw_gid == gid) members.push_back(found->pw_uid);
  ::endpwent();
  if (status != 0 && status != ENOENT) return std::nullopt;
  return members;
}

}  // namespace

bool group_private_to(gid_t gid, uid_t user) {
  // Debian's rule for OpenSSH's StrictModes with user private groups (user-group-modes).
  struct group entry {};
  struct group* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getgrgid_r(gid, &entry, data, size, &found); });
  if (status != 0 || found == nullptr) return false;
  const std::optional<std::vector<uid_t>> primary = primary_members(gid);
  if (!primary) return false;
  for (const uid_t member : *primary)
    if (member != user) return false;
  const std::optional<std::string> login = login_name(user);
  if (!login) return false;
  std::size_t listed = 0;
  for (char** name = found->gr_mem; name != nullptr && *name != nullptr; ++name, ++listed)
    if (*login != *name) return false;
  return !primary->empty() || listed > 0;
}

std::vector<gid_t> group_list(const std::string& login, gid_t primary) {
  // getgrouplist says how many there are when they do not fit; they may change between the calls.
  int count = 64;
  std::vector<gid_t> groups;
  for (int attempt = 0; attempt < 4; ++attempt) {
    groups.resize(static_cast<std::size_t>(count));
    if (::getgrouplist(login.c_str(), primary, groups.data(), &count) >= 0) {
      groups.resize(static_cast<std::size_t>(count));
      return groups;
    }
  }
  return {primary};  // a list that keeps growing: the primary group alone, never more rights
}

std::optional<uid_t> user_id(const std::string& name) {
  if (name.empty()) return std::nullopt;
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getpwnam_r(name.c_str(), &entry, data, size, &found); });
  if (status != 0 || found == nullptr) return std::nullopt;
  return found->pw_uid;
}

std::vector<gid_t> group_ids_of(const std::string& name) {
  if (name.empty()) return {};
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getpwnam_r(name.c_str(), &entry, data, size, &found); });
  if (status != 0 || found == nullptr) return {};
  return group_list(name, found->pw_gid);
}

std::string user_name(uid_t uid) { return login_name(uid).value_or(std::to_string(uid)); }

const std::optional<std::string>& own_login_name() {
  static const std::optional<std::string> name = login_name(::getuid());
  return name;
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

}  // namespace gpurun
