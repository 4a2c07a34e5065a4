#include "gpurun/util/accounts.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>
#include <string_view>
#include <vector>

#include "files_database.hpp"

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
  if (const auto gid = files_database::group_id(name)) return gid;
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
  if (auto name = files_database::login_name(uid)) return name;
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::unique_ptr<char[]> buffer;
  const int status = with_entry_buffer(
      buffer, [&](char* data, std::size_t size) { return ::getpwuid_r(uid, &entry, data, size, &found); });
  if (status != 0 || found == nullptr || found->pw_name == nullptr) return std::nullopt;
  return found->pw_name;
}

}  // namespace

bool group_private_to(gid_t gid, uid_t user) {
  // A user private group as useradd makes one (USERGROUPS_ENAB): named as its user, the user's
  // primary group, and no one else in its member list. Checked without enumerating passwd for
  // others whose primary group it is: on a directory service that is slow, or not done at all.
  struct passwd owner {};
  struct passwd* found_owner = nullptr;
  std::unique_ptr<char[]> owner_buffer;
  if (with_entry_buffer(
          owner_buffer,
          [&](char* data, std::size_t size) { return ::getpwuid_r(user, &owner, data, size, &found_owner); }) != 0 ||
      found_owner == nullptr || found_owner->pw_name == nullptr || found_owner->pw_gid != gid)
    return false;
  struct group entry {};
  struct group* found = nullptr;
  std::unique_ptr<char[]> buffer;
  if (with_entry_buffer(
          buffer, [&](char* data, std::size_t size) { return ::getgrgid_r(gid, &entry, data, size, &found); }) != 0 ||
      found == nullptr || found->gr_name == nullptr || std::string_view(found->gr_name) != found_owner->pw_name)
    return false;
  for (char** name = found->gr_mem; name != nullptr && *name != nullptr; ++name)
    if (std::string_view(*name) != found_owner->pw_name) return false;
  return true;
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
