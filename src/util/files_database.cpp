#include "files_database.hpp"

#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdint>

#include "gpurun/util/whole_file.hpp"

namespace gpurun::files_database {
namespace {

constexpr std::size_t kLargestFile = std::size_t{16} << 20;

// A system file, read whole (util/whole_file); nullopt when it is not a regular file or cannot be read.
std::optional<std::string> read_system_file(const std::string& path) {
  return read_bounded(path, kLargestFile, FileKinds::regular_only).text;
}

// C's isspace in the "C" locale, as glibc's parsers use it.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// The next '\n'-ended line of `text`, taken off it.
std::string_view next_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

// An entry line's ':'-separated fields, the first kMaxFields of them; `count` says how many the
// line has (more than kMaxFields: kMaxFields + 1). No allocation: /etc/group is read at every launch.
struct Fields {
  static constexpr std::size_t kMaxFields = 7;
  std::array<std::string_view, kMaxFields> at{};
  std::size_t count = 0;
};

Fields fields_of(std::string_view line) {
  Fields fields;
  for (;;) {
    const std::size_t colon = line.find(':');
    if (fields.count == Fields::kMaxFields) {
      ++fields.count;
      return fields;
    }
    fields.at[fields.count++] = line.substr(0, colon);
    if (colon == std::string_view::npos) return fields;
    line.remove_prefix(colon + 1);
  }
}

enum class Entry { other, match, unclear };

// The first entry line of an account file that `visit(fields)` says is a match, or a line before it
// that leaves unclear what NSS's files source would answer; `other` when there is neither. Empty and
// # lines are skipped, as NSS skips them. Unclear: an indented line (glibc strips the indent with a
// memmove that keeps the old tail on a last line without '\n'), a name beginning with + or - (which
// glibc never matches: compat's entries), a NUL byte anywhere (glibc's strings end there).
template <typename Visit>
Entry find_entry(std::string_view file, Visit visit) {
  if (file.find('\0') != std::string_view::npos) return Entry::unclear;
  while (!file.empty()) {
    const std::string_view line = next_line(file);
    if (line.empty() || line.front() == '#') continue;
    if (is_space(line.front()) || line.front() == '+' || line.front() == '-') return Entry::unclear;
    if (const Entry entry = visit(fields_of(line)); entry != Entry::other) return entry;
  }
  return Entry::other;
}

// A whole decimal id, as NSS's files source takes it; nullopt for anything else (empty, a sign,
// trailing text, beyond 32 bits, or -1, which no account may have).
std::optional<std::uint32_t> parse_id(std::string_view field) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || error != std::errc{} || end != field.data() + field.size() || value == UINT32_MAX)
    return std::nullopt;
  return value;
}

}  // namespace

bool files_answer_first(std::string_view nsswitch_conf, std::string_view database) {
  // Read as glibc 2.36's nss_database.c reads it: the name runs to a space or ':', then any spaces
  // and colons; names are case-sensitive; no comments are stripped (a '#' is part of a word); a
  // service's name runs to a space or '['. The last line for a database wins there: two are unclear.
  if (nsswitch_conf.find('\0') != std::string_view::npos) return false;
  int lines = 0;
  bool first = false;
  while (!nsswitch_conf.empty()) {
    const std::string_view line = next_line(nsswitch_conf);
    std::size_t i = 0;
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t name_start = i;
    while (i < line.size() && !is_space(line[i]) && line[i] != ':') ++i;
    if (i == name_start || line.substr(name_start, i - name_start) != database) continue;
    ++lines;  // with nothing after the name too: glibc counts it when a '\n' ends it
    while (i < line.size() && (is_space(line[i]) || line[i] == ':')) ++i;
    const std::size_t source_start = i;
    while (i < line.size() && !is_space(line[i]) && line[i] != '[') ++i;
    const std::string_view source = line.substr(source_start, i - source_start);
    while (i < line.size() && is_space(line[i])) ++i;
    first = source == "files" && (i == line.size() || line[i] != '[');  // no [STATUS=action] after it
  }
  return lines == 1 && first;
}

std::optional<gid_t> group_id_in(std::string_view group_file, std::string_view name) {
  if (name.empty() || name.front() == '+' || name.front() == '-') return std::nullopt;  // glibc matches no such line
  std::optional<gid_t> gid;
  const Entry found = find_entry(group_file, [&](const Fields& fields) {
    gid = fields.count >= 3 ? parse_id(fields.at[2]) : std::nullopt;
    if (!gid || fields.at[0].empty()) return Entry::unclear;  // a line NSS would skip as malformed
    return fields.at[0] == name ? Entry::match : Entry::other;
  });
  return found == Entry::match ? gid : std::nullopt;
}

std::optional<std::string> login_name_in(std::string_view passwd_file, uid_t uid) {
  std::string_view name;
  const Entry found = find_entry(passwd_file, [&](const Fields& fields) {
    const auto id = fields.count == 7 ? parse_id(fields.at[2]) : std::nullopt;
    if (!id || fields.at[0].empty() || !parse_id(fields.at[3])) return Entry::unclear;
    name = fields.at[0];
    return *id == uid ? Entry::match : Entry::other;
  });
  return found == Entry::match ? std::optional<std::string>(name) : std::nullopt;
}

namespace {

// Read again at each lookup, as glibc does: gpurund lives for months, and an admin may switch a
// database to sssd or start nscd meanwhile. glibc asks nscd before any source, and its cache may
// differ from the files.
bool files_first(std::string_view database) {
  if (::access("/var/run/nscd/socket", F_OK) == 0) return false;
  const std::optional<std::string> conf = read_system_file("/etc/nsswitch.conf");
  return conf && files_answer_first(*conf, database);
}

}  // namespace

std::optional<gid_t> group_id(std::string_view name) {
  if (!files_first("group")) return std::nullopt;
  const auto file = read_system_file("/etc/group");
  return file ? group_id_in(*file, name) : std::nullopt;
}

std::optional<std::string> login_name(uid_t uid) {
  if (!files_first("passwd")) return std::nullopt;
  const auto file = read_system_file("/etc/passwd");
  return file ? login_name_in(*file, uid) : std::nullopt;
}

}  // namespace gpurun::files_database
