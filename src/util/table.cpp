#include "gpurun/util/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "gpurun/util/text.hpp"

namespace gpurun {

std::size_t display_width(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string cut_to_width(std::string_view s, std::size_t width) {
  if (display_width(s) <= width) return std::string(s);
  if (width == 0) return {};
  std::string out;
  std::size_t used = 0;
  for (char c : s) {
    if ((c & 0xC0) != 0x80 && ++used > width - 1) break;  // a code point starts here
    out += c;
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
