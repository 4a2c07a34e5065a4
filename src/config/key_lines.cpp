#include "key_lines.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "gpurun/util/text.hpp"

namespace gpurun {

std::string join_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "/" + std::string(key);
}

namespace {

// A key's text as JSON reads it (escapes decoded, by nlohmann); as written where it is not valid,
// which the parse then refuses with its position.
std::string decoded_key(std::string_view raw) {
  if (raw.find('\\') == std::string_view::npos) return std::string(raw);
  try {
    return nlohmann::json::parse("\"" + std::string(raw) + "\"").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::string(raw);
  }
}

// Whether a number's text is beyond a double (read in the C locale, as JSON is).
bool overflows_double(std::string_view number) {
  static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", locale_t{});
  const std::string text(number);
  return std::isinf(::strtod_l(text.c_str(), nullptr, c_locale));
}

}  // namespace

KeyScan scan_keys(std::string_view s) {
  struct Frame {
    bool object;
    std::string path;
    std::string key;
    bool expect_key;
    std::map<std::string, std::size_t> key_lines = {};  // this object's keys so far, and their lines
  };
  KeyScan scan;
  std::vector<Frame> stack;
  std::size_t line = 1;
  std::size_t i = s.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      i = std::min(s.find('\n', i), s.size());
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = std::min(s.find("*/", i + 2), s.size());
      line += static_cast<std::size_t>(
          std::count(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      i = std::min(end + 2, s.size());
    } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (c == '"') {
      scan.has_content = true;
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') j += s[j] == '\\' ? std::size_t{2} : std::size_t{1};
      const std::string_view str = s.substr(i + 1, std::min(j, s.size()) - i - 1);
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& object = stack.back();
        object.key = decoded_key(str);
        object.expect_key = false;
        const std::string path = join_path(object.path, object.key);
        if (const auto [first, fresh] = object.key_lines.try_emplace(object.key, line); !fresh && !scan.duplicate)
          scan.duplicate = KeyScan::Duplicate{.path = path, .first_line = first->second, .line = line};
        scan.lines[path] = line;
      }
      i = j + 1;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      scan.has_content = true;
      std::size_t j = i + 1;
      while (j < s.size() && std::string_view("0123456789+-.eE").find(s[j]) != std::string_view::npos) ++j;
      if (!scan.overflow && overflows_double(s.substr(i, j - i)))
        scan.overflow =
            KeyScan::Overflow{.number = std::string(s.substr(i, std::min<std::size_t>(j - i, 40))), .line = line};
      i = j;
    } else {
      scan.has_content = true;
      if ((c == '{' || c == '[') && stack.size() == kMaxNesting) {
        scan.too_deep_line = line;
        return scan;
      }
      if (c == '{' || c == '[') {
        std::string path;
        if (!stack.empty()) path = join_path(stack.back().path, stack.back().object ? stack.back().key : "[]");
        stack.push_back({c == '{', path, "", c == '{'});
      } else if ((c == '}' || c == ']') && !stack.empty()) {
        stack.pop_back();
      } else if (c == ',' && !stack.empty() && stack.back().object) {
        stack.back().expect_key = true;
      }
      ++i;
    }
  }
  return scan;
}

std::pair<std::size_t, std::size_t> line_column(std::string_view s, std::size_t byte) {
  const std::size_t at = std::min(byte > 0 ? byte - 1 : 0, s.size());
  const std::string_view before = s.substr(0, at);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t line_start = before.rfind('\n');
  const std::size_t column = line_start == std::string_view::npos ? at + 1 : at - line_start;
  return {line, column};
}

std::string parse_detail(const std::string& what) {
  const std::size_t column = what.find("column");
  const std::size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
  std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
  return detail.starts_with("syntax error") ? detail : "syntax error: " + detail;
}

std::string dotted(std::string path) {
  std::replace(path.begin(), path.end(), '/', '.');
  return text::printable(path, 200);  // a key is the file's text: no control character reaches the terminal
}

}  // namespace gpurun
