#include "gpurun/util/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace gpurun {

Table::Table(std::vector<Column> columns, std::size_t indent) : columns_(std::move(columns)), indent_(indent) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() > columns_.size())
    throw std::logic_error(fmt::format("a table row of {} cells for {} columns", cells.size(), columns_.size()));
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::str() const {
  std::vector<std::size_t> widths;
  widths.reserve(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const Column& column = columns_[c];
    std::size_t width = std::max(column.min_width, column.header.size());
    for (const auto& row : rows_) width = std::max(width, row[c].size());
    widths.push_back(column.max_width ? std::min(width, *column.max_width) : width);
  }
  std::string out;
  auto it = std::back_inserter(out);
  const auto line = [&](auto cell_of) {
    out.append(indent_, ' ');
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cell_of(c);
      if (c + 1 == columns_.size() && columns_[c].align == Column::Align::left) {
        out += cell;  // no trailing blanks
      } else if (c + 1 == columns_.size()) {
        fmt::format_to(it, "{:>{}}", cell, widths[c]);
      } else if (columns_[c].align == Column::Align::right) {
        fmt::format_to(it, "{:>{}}  ", cell, widths[c]);
      } else {
        fmt::format_to(it, "{:<{}}  ", cell, widths[c]);
      }
    }
    out += '\n';
  };
  line([&](std::size_t c) -> const std::string& { return columns_[c].header; });
  for (const auto& row : rows_) line([&](std::size_t c) -> const std::string& { return row[c]; });
  return out;
}

}  // namespace gpurun
