#pragma once
// One configuration file: read safely, parsed (JSON with comments), every key checked against the
// settings registry where the file and line are known, so that a mistake is reported as
// "FILE:LINE: key "max_util": ..." before anything runs.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpurun/config/source.hpp"
#include "gpurun/util/error.hpp"
#include "key_lines.hpp"

namespace gpurun {

struct ParsedFile {
  std::string path;
  ConfigSource::Kind layer;
  nlohmann::json content;
  std::map<std::string, std::size_t> lines;

  std::size_t line_of(const std::string& key_path) const {
    const auto it = lines.find(key_path);
    return it != lines.end() ? it->second : 0;
  }
  std::string location(const std::string& key_path) const { return source(key_path).location(); }
  ConfigSource source(const std::string& key_path, std::string profile = {}) const {
    return {profile.empty() ? layer : ConfigSource::Kind::profile, path, line_of(key_path), std::move(profile)};
  }
  Error error(const std::string& key_path, std::string_view problem) const {
    return Error(location(key_path) + ": key \"" + dotted(key_path) + "\": " + std::string(problem));
  }
};

struct FileText {
  std::string text;
  struct stat st {};                     // of the very file read, for the trust check
  std::optional<std::string> untrusted;  // why it was not read (given an owner to trust)
};

// A configuration file is a few KB; one larger than this is refused, not read.
constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

// The file's text; nullopt when it does not exist and need not. A FIFO or directory under the
// name is refused (O_NONBLOCK: it never hangs gpurun), and so is a file over kMaxConfigBytes.
// Given `owner`, a file untrusted() for that owner is not read at all: `untrusted` says why.
// Throws Error naming the file otherwise.
std::optional<FileText> read_text(const std::string& path, bool must_exist, std::optional<uid_t> owner = std::nullopt);

// Parses and checks a file's text (Error naming file, line and key); blank or comments only sets nothing.
ParsedFile checked_file(const std::string& path, ConfigSource::Kind layer, const std::string& text);

// read_text, then checked_file; nullopt when the file does not exist and need not.
std::optional<ParsedFile> load_file(const std::string& path, ConfigSource::Kind layer, bool must_exist);

// The site policy keys whose value is an object with a reader of its own ("idle_policy",
// "notify"): whether `key` is one, and the first problem of `value` as ("key", "what is wrong").
bool is_policy_object(std::string_view key);
std::optional<std::pair<std::string, std::string>> policy_object_problem(std::string_view key,
                                                                         const nlohmann::json& value);

// Why the system file (`path`, whose opened file is `st`) must not be believed where root runs
// what it names (under sudo; gpurund): anyone but root (or whoever runs gpurun: a test's own) who
// may write it, or replace it or a directory above it (one others may write, but for a sticky
// one), where its name points or where a link leads, could choose them. nullopt when it may.
std::optional<std::string> not_roots_alone(const std::string& path, const struct stat& st);

// Why a .gpurun.json found by the search must not be used; nullopt when it may: the user's own (or
// root's: whoever controls root controls gpurun anyway), writable by no one else. Group write is
// the owner's alone only in their private group (group_private_to).
std::optional<std::string> untrusted(const struct stat& st, uid_t user);

}  // namespace gpurun
