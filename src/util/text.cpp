#include "gpurun/util/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gpurun::text {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
  return out;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; });
  return out;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
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

std::optional<double> parse_double(std::string_view s) {
  double value = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc{} || ptr != end || !std::isfinite(value)) return std::nullopt;
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

std::string printable(std::string_view s, std::size_t max_length) {
  std::string out;
  for (char c : s.substr(0, max_length)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 0xf];
    }
  }
  if (s.size() > max_length) out += "...";
  return out;
}

std::string printable_words(std::string_view s, std::size_t max_length) {
  if (s.size() <= max_length) return printable(s, max_length);
  std::size_t cut = s.rfind(' ', max_length);
  if (cut == std::string_view::npos || cut < max_length / 2) cut = max_length;  // one long word: cut it
  return printable(text::trim(s.substr(0, cut)), max_length) + " ...";
}

}  // namespace gpurun::text
