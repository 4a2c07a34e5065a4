#include "gpurun/util/text.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>

namespace gpurun::text {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

namespace {
char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower_ascii);
  return out;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; });
  return out;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower_ascii(x) == lower_ascii(y); });
}

bool starts_with_ignoring_case(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && equals_ignoring_case(s.substr(0, prefix.size()), prefix);
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  parts.reserve(static_cast<std::size_t>(std::count(s.begin(), s.end(), separator)) + 1);  // one allocation
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

std::vector<Line> non_blank_lines(std::string_view s) {
  std::vector<Line> lines;
  std::size_t number = 0;
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);  // a UTF-8 byte-order mark from an editor
  for (std::string_view line : split(s, '\n')) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!trim(line).empty()) lines.push_back({number, line});
  }
  return lines;
}

// What std::from_chars takes for a finite double: an optional '-', digits with at most one '.', an
// optional exponent; no sign '+', no space, no hexadecimal, no "inf" or "nan". It is not used
// itself: libstdc++'s code for doubles needs libm, which gpurun does not load (rounding.hpp).
// strtod_l reads the rest, in the C locale whatever the process's own, correctly rounded.
std::optional<double> parse_double(std::string_view s) {
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = s.starts_with('-') ? 1 : 0;
  const std::size_t first_digit = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i < s.size() && s[i] == '.') ++i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (!std::any_of(s.begin() + static_cast<std::ptrdiff_t>(first_digit), s.begin() + static_cast<std::ptrdiff_t>(i),
                   is_digit))
    return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    i += (i + 1 < s.size() && (s[i + 1] == '-' || s[i + 1] == '+')) ? std::size_t{2} : std::size_t{1};
    if (i == s.size() || !is_digit(s[i])) return std::nullopt;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  if (i != s.size()) return std::nullopt;
  static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", locale_t{});
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  const double value = ::strtod_l(text.c_str(), &end, c_locale);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<long long> parse_integer(std::string_view s) {
  long long value = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

NumberWithUnit split_unit(std::string_view s) {
  s = trim(s);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) != 0 || s[i] == '.' || s[i] == '-' ||
                          s[i] == '+' || s[i] == 'e' || s[i] == 'E')) {
    // An 'e' only belongs to the number as an exponent followed by a digit or sign.
    if ((s[i] == 'e' || s[i] == 'E') &&
        (i + 1 >= s.size() ||
         (std::isdigit(static_cast<unsigned char>(s[i + 1])) == 0 && s[i + 1] != '-' && s[i + 1] != '+')))
      break;
    ++i;
  }
  return {trim(s.substr(0, i)), trim(s.substr(i))};
}

namespace {

// "\\x1b": one byte as printable() and terminal_safe() show it.
void append_hex_escape(std::string& out, unsigned char u) {
  static constexpr char hex[] = "0123456789abcdef";
  out += "\\x";
  out += hex[u >> 4];
  out += hex[u & 0xf];
}

// The code point of one well-formed UTF-8 sequence.
char32_t decode(std::string_view sequence) {
  const auto byte = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(sequence[k])); };
  if (sequence.size() == 2) return ((byte(0) & 0x1f) << 6) | (byte(1) & 0x3f);
  if (sequence.size() == 3) return ((byte(0) & 0x0f) << 12) | ((byte(1) & 0x3f) << 6) | (byte(2) & 0x3f);
  return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3f) << 12) | ((byte(2) & 0x3f) << 6) | (byte(3) & 0x3f);
}

// Characters that show nothing yet change what a line shows: bidirectional overrides and
// isolates (U+202E turns the rest of a table row around), zero-width spaces and joiners, the soft
// hyphen, fillers, the line and paragraph separators, the byte-order mark, interlinear
// annotations and tag characters (Unicode's format characters, Cf). Variation selectors stay:
// emoji need them.
bool invisible_control(char32_t c) {
  return c == 0x00ad || c == 0x034f || c == 0x061c || c == 0x115f || c == 0x1160 || c == 0x180e ||
         (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) || c == 0x3164 ||
         c == 0xfeff || c == 0xffa0 || (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f);
}

}  // namespace

std::string_view program_of(std::string_view command_line) {
  const std::string_view program = command_line.substr(0, command_line.find(' '));
  const std::size_t slash = program.rfind('/');
  return slash == std::string_view::npos ? program : program.substr(slash + 1);
}

std::string printable(std::string_view s, std::size_t max_length) {
  std::string out;
  for (char c : s.substr(0, max_length)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      out += c;
    else
      append_hex_escape(out, u);
  }
  if (s.size() > max_length) out += "...";
  return out;
}

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto escape = [&out](unsigned char u) { append_hex_escape(out, u); };
  for (std::size_t i = 0; i < s.size();) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x80) {
      if (u < 0x20 || u == 0x7f)
        escape(u);
      else
        out += s[i];
      ++i;
      continue;
    }
    // The length of a well-formed sequence (RFC 3629), or 0.
    const std::size_t length = (u >= 0xc2 && u <= 0xdf)   ? 2
                               : (u >= 0xe0 && u <= 0xef) ? 3
                               : (u >= 0xf0 && u <= 0xf4) ? 4
                                                          : 0;
    bool valid = length != 0 && i + length <= s.size();
    for (std::size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (valid) {
      const auto second = static_cast<unsigned char>(s[i + 1]);
      valid = !(u == 0xe0 && second < 0xa0) && !(u == 0xed && second > 0x9f) && !(u == 0xf0 && second < 0x90) &&
              !(u == 0xf4 && second > 0x8f) && !(u == 0xc2 && second < 0xa0);  // overlong, surrogate, C1
    }
    if (!valid) {
      escape(u);
      ++i;
      continue;
    }
    if (invisible_control(decode(s.substr(i, length)))) {
      for (std::size_t k = 0; k < length; ++k) escape(static_cast<unsigned char>(s[i + k]));
    } else {
      out.append(s.substr(i, length));
    }
    i += length;
  }
  return out;
}

std::string terminal_safe_cut(std::string_view s, std::size_t max_chars) {
  std::string safe = terminal_safe(s);
  std::size_t chars = 0;
  for (std::size_t i = 0; i < safe.size(); ++i) {
    if ((static_cast<unsigned char>(safe[i]) & 0xc0) == 0x80) continue;  // inside a character
    if (++chars > max_chars) {
      safe.resize(i);
      return safe + "...";
    }
  }
  return safe;
}

std::string printable_words(std::string_view s, std::size_t max_length) {
  if (s.size() <= max_length) return printable(s, max_length);
  std::size_t cut = s.rfind(' ', max_length);
  if (cut == std::string_view::npos || cut < max_length / 2) cut = max_length;  // one long word: cut it
  return printable(text::trim(s.substr(0, cut)), max_length) + " ...";
}

std::string percent_encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view s, UrlPart part) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+' && part == UrlPart::query) {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      if (i + 2 >= s.size()) return std::nullopt;
      const int high = hex(s[i + 1]);
      const int low = hex(s[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      out += static_cast<char>(high * 16 + low);
      i += 2;
    }
  }
  return out;
}

}  // namespace gpurun::text
