#include "files_database.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdint>

#include "gpurun/util/fd.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun::files_database {
namespace {

constexpr std::size_t kLargestFile = std::size_t{16} << 20;

// A root-owned system file, read whole; nullopt when it is not a regular file or cannot be read.
std::optional<std::string> read_system_file(const char* path) {
  const Fd fd(::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  struct stat info {};
  if (!fd.valid() || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<std::size_t>(info.st_size) > kLargestFile)
    return std::nullopt;
  std::string text(static_cast<std::size_t>(info.st_size) + 1, '\0');
  std::size_t length = 0;
  for (;;) {
    if (length == text.size()) text.resize(text.size() * 2);
    const ssize_t n = ::read(fd.get(), text.data() + length, text.size() - length);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    length += static_cast<std::size_t>(n);
    if (length > kLargestFile) return std::nullopt;
  }
  text.resize(length);
  return text;
}

std::string_view skip_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
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

// Calls `visit(fields)` for each entry line of an account file (blank and # lines skipped, as NSS's
// files source skips them) until it returns true.
template <typename Visit>
void each_entry(std::string_view file, Visit visit) {
  while (!file.empty()) {
    const std::size_t end = file.find('\n');
    const std::string_view line = skip_blanks(file.substr(0, end));
    file.remove_prefix(end == std::string_view::npos ? file.size() : end + 1);
    if (line.empty() || line.front() == '#') continue;
    if (visit(fields_of(line))) return;
  }
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
  int lines = 0;
  bool first = false;
  while (!nsswitch_conf.empty()) {
    const std::size_t end = nsswitch_conf.find('\n');
    std::string_view line = nsswitch_conf.substr(0, end);
    nsswitch_conf.remove_prefix(end == std::string_view::npos ? nsswitch_conf.size() : end + 1);
    line = skip_blanks(line.substr(0, line.find('#')));
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = text::trim(line.substr(0, colon));
    if (!text::equals_ignoring_case(name, database)) continue;
    ++lines;
    const std::string_view services = skip_blanks(line.substr(colon + 1));
    const std::size_t word_end = services.find_first_of(" \t");
    const std::string_view source = services.substr(0, word_end);
    const std::string_view after = skip_blanks(word_end == std::string_view::npos ? "" : services.substr(word_end));
    first = name == database && source == "files" && !after.starts_with('[');
  }
  return lines == 1 && first;
}

std::optional<gid_t> group_id_in(std::string_view group_file, std::string_view name) {
  std::optional<gid_t> found;
  bool unclear = false;
  each_entry(group_file, [&](const Fields& fields) {
    const auto gid = fields.count >= 3 ? parse_id(fields.at[2]) : std::nullopt;
    // A line NSS would skip as malformed leaves unclear which line it would answer with.
    if (!gid || fields.at[0].empty()) return unclear = true;
    if (fields.at[0] != name) return false;
    found = *gid;
    return true;
  });
  return unclear ? std::nullopt : found;
}

std::optional<std::string> login_name_in(std::string_view passwd_file, uid_t uid) {
  std::optional<std::string> found;
  bool unclear = false;
  each_entry(passwd_file, [&](const Fields& fields) {
    const auto id = fields.count == 7 ? parse_id(fields.at[2]) : std::nullopt;
    if (!id || fields.at[0].empty() || !parse_id(fields.at[3])) return unclear = true;
    if (*id != uid) return false;
    found = std::string(fields.at[0]);
    return true;
  });
  return unclear ? std::nullopt : found;
}

namespace {

bool files_first(std::string_view database) {
  static const std::optional<std::string> conf = read_system_file("/etc/nsswitch.conf");
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
