#include "gpurun/util/table.hpp"

#include <fmt/format.h>

#include <locale.h>
#include <wchar.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "gpurun/util/text.hpp"

namespace gpurun {

namespace {

// The UTF-8 sequence at the start of `s`: its length (1 for a byte that starts none) and its code
// point (0 where it is not one).
std::pair<std::size_t, char32_t> next_code_point(std::string_view s) {
  const auto u = static_cast<unsigned char>(s[0]);
  const std::size_t length = u < 0x80 ? 1 : (u >> 5) == 0x6 ? 2 : (u >> 4) == 0xE ? 3 : (u >> 3) == 0x1E ? 4 : 1;
  if (length == 1 || length > s.size()) return {1, u < 0x80 ? u : 0};
  char32_t c = u & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(s[i]);
    if ((next & 0xC0) != 0x80) return {1, 0};
    c = (c << 6) | (next & 0x3F);
  }
  return {length, c};
}

// The columns a code point takes on a terminal, as libc's wcwidth says under C.UTF-8 (Debian's
// libc-bin has it): 2 for a wide East Asian character, 0 for a combining mark; 1 where it cannot
// tell (the locale missing, a character it does not know).
std::size_t columns_of(char32_t c) {
  if (c < 0x80) return 1;
  static const locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t{});
  if (utf8 == locale_t{}) return 1;
  const locale_t before = ::uselocale(utf8);
  const int width = ::wcwidth(static_cast<wchar_t>(c));
  ::uselocale(before);
  return width < 0 ? 1 : static_cast<std::size_t>(width);
}

}  // namespace

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  while (!s.empty()) {
    const auto [length, c] = next_code_point(s);
    width += columns_of(c);
    s.remove_prefix(length);
  }
  return width;
}

std::string cut_to_width(std::string_view s, std::size_t width) {
  if (display_width(s) <= width) return std::string(s);
  if (width == 0) return {};
  std::string out;
  std::size_t used = 0;
  while (!s.empty()) {
    const auto [length, c] = next_code_point(s);
    const std::size_t columns = columns_of(c);
    if (used + columns > width - 1) break;  // the last column is the ellipsis's
    used += columns;
    out.append(s.substr(0, length));
    s.remove_prefix(length);
  }
  return out + "…";
}

Table::Table(std::vector<Column> columns, std::size_t indent) : columns_(std::move(columns)), indent_(indent) {}

void Table::add_row(std::vector<std::string> cells, Paint paint) {
  if (cells.size() > columns_.size())
    throw std::logic_error(fmt::format("a table row of {} cells for {} columns", cells.size(), columns_.size()));
  cells.resize(columns_.size());
  for (std::string& cell : cells) cell = text::terminal_safe(cell);  // names and labels are anyone's
  rows_.push_back({std::move(cells), std::move(paint)});
}

void Table::fit(std::size_t width, std::vector<std::size_t> order) {
  width_ = width;
  if (order.empty())
    for (std::size_t c = 0; c < columns_.size(); ++c) order.push_back(c);
  give_way_order_ = std::move(order);
}

std::size_t Table::natural_width() const {
  const std::vector<std::size_t> natural = widths(false);
  return natural.empty() ? indent_
                         : indent_ + std::accumulate(natural.begin(), natural.end(), 2 * (natural.size() - 1));
}

std::vector<std::size_t> Table::widths(bool fitted) const {
  std::vector<std::size_t> widths;
  widths.reserve(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const Column& column = columns_[c];
    std::size_t width = std::max(column.min_width, display_width(column.header));
    for (const auto& row : rows_) width = std::max(width, display_width(row.cells[c]));
    widths.push_back(column.max_width ? std::min(width, *column.max_width) : width);
  }
  if (!fitted || !width_ || widths.empty()) return widths;
  const auto line = [&] { return indent_ + std::accumulate(widths.begin(), widths.end(), 2 * (widths.size() - 1)); };
  for (std::size_t c : give_way_order_) {
    if (line() <= *width_) break;
    if (c >= columns_.size() || columns_[c].gives_way_to == 0) continue;
    const std::size_t least = std::max(columns_[c].gives_way_to, display_width(columns_[c].header));
    if (widths[c] > least) widths[c] -= std::min(widths[c] - least, line() - *width_);
  }
  return widths;
}

std::vector<std::string> Table::lines() const {
  const std::vector<std::size_t> fitted = widths(true);
  std::vector<std::string> lines;
  const auto line = [&](const std::vector<std::string>& cells, const Paint& paint) {
    std::string out(indent_, ' ');
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      std::string cell = width_ && columns_[c].gives_way_to > 0 ? cut_to_width(cells[c], fitted[c]) : cells[c];
      const bool last = c + 1 == columns_.size();
      // Padded by display_width, the measure the widths were taken in (a cut cell's "…" is one
      // column); by hand, not fmt's "{:<N}", which weighs every code point again (thousands of rows).
      const std::string blanks(fitted[c] - std::min(fitted[c], display_width(cell)), ' ');
      std::string padded = last && columns_[c].align == Column::Align::left ? cell  // no trailing blanks
                           : columns_[c].align == Column::Align::right      ? blanks + cell
                                                                            : cell + blanks;
      if (last && paint) padded = paint(padded);
      out += padded;
      if (!last) out += "  ";
    }
    lines.push_back(std::move(out));
  };
  line(
      [this] {
        std::vector<std::string> headers;
        for (const Column& column : columns_) headers.push_back(column.header);
        return headers;
      }(),
      {});
  for (const Row& row : rows_) line(row.cells, row.paint);
  return lines;
}

std::string Table::str() const {
  std::string out;
  for (const std::string& line : lines()) out += line + '\n';
  return out;
}

}  // namespace gpurun
