#pragma once
// Names and ids of users and groups, from the system's databases (NSS), and the machine's own name.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace gpurun {

// This machine's host name (gethostname); "" when it has none.
std::string host_name();

// The id of the group `name`; nullopt when there is no such group (or `name` is empty).
std::optional<gid_t> group_id(const std::string& name);

// The name of group `gid`, or its number when it has none.
std::string group_name(gid_t gid);

// Whether group `gid` is `user`'s private group, as useradd makes one: named as the user, the
// user's primary group, no one else in its member list. False for an unknown group or user.
bool group_private_to(gid_t gid, uid_t user);

// The groups of `login` whose primary group is `primary`: it first, then the supplementary ones
// (getgrouplist).
std::vector<gid_t> group_list(const std::string& login, gid_t primary);

// The groups of the user `name` (group_list with their primary group); empty when there is no such user.
std::vector<gid_t> group_ids_of(const std::string& name);

// The uid of the user `name`; nullopt when there is no such user (or `name` is empty).
std::optional<uid_t> user_id(const std::string& name);

// The login name of user `uid`, or its number when it has none.
std::string user_name(uid_t uid);

// The login name of this process's real user (getuid), or nullopt when it has none; looked up
// once per process, as a launch needs it twice (the container's name, the audit line).
const std::optional<std::string>& own_login_name();

}  // namespace gpurun
