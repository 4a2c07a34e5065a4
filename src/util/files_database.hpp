#pragma once
// The account databases' local files (/etc/passwd, /etc/group), read directly where nsswitch.conf
// has `files` answer first and no nscd runs. An entry found there is the answer NSS would give, but
// NSS costs a launch its start-up first (two attempts at nscd's socket, its parse of nsswitch.conf,
// libc's NSS code paged in): 75 µs of a 2 ms launch on the benchmark's VM (docs/performance.md).
// Anything else is nullopt, and the caller asks NSS as before: another source first, an action
// after `files`, two lines for the database, nscd's socket, a name the file lacks, and any line
// before the entry that glibc could read otherwise (one it would skip as malformed, an indented
// one, a + or - entry, a NUL byte). The rules follow glibc 2.36's parsers.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace gpurun::files_database {

// Whether nsswitch.conf's text has exactly one line for `database` ("group", "passwd"), as glibc
// reads the file, and its first source is `files` with no [STATUS=action] after it (which could
// merge or go on looking).
bool files_answer_first(std::string_view nsswitch_conf, std::string_view database);

// The gid of group `name` in a group file's text (name:password:gid:members), from its first line
// with that name, as NSS's files source reads it; nullopt when there is none or it does not parse.
std::optional<gid_t> group_id_in(std::string_view group_file, std::string_view name);

// The login name of `uid` in a passwd file's text (name:password:uid:gid:gecos:home:shell), from
// its first line with that uid; nullopt when there is none or it does not parse.
std::optional<std::string> login_name_in(std::string_view passwd_file, uid_t uid);

// The same from /etc/group and /etc/passwd, when /etc/nsswitch.conf has files answer first and
// nscd's socket (which glibc asks before any source) is absent.
std::optional<gid_t> group_id(std::string_view name);
std::optional<std::string> login_name(uid_t uid);

}  // namespace gpurun::files_database
