#pragma once
// The one table printer: a header line and rows, columns two spaces apart, each as wide as its
// widest cell within its bounds; a last column aligned left is never padded (no trailing blanks).
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpurun {

struct Column {
  enum class Align { left, right };
  std::string header;
  Align align = Align::left;
  std::size_t min_width = 0;
  // A cell longer than this overflows (and pushes the rest of its row on) instead of widening
  // the column for every row.
  std::optional<std::size_t> max_width;

  // A column exactly `width` wide: a longer cell overflows.
  static Column fixed(std::string header, Align align, std::size_t width) {
    return {std::move(header), align, width, width};
  }
  // A column as wide as its widest cell (or its header).
  static Column fitted(std::string header, Align align = Align::left) { return {std::move(header), align, 0, {}}; }
};

class Table {
 public:
  // `indent`: spaces before every line.
  explicit Table(std::vector<Column> columns, std::size_t indent = 0);

  // One cell per column (missing cells are empty, extra ones are an error).
  void add_row(std::vector<std::string> cells);

  // The header line and the rows, each ending with a newline.
  std::string str() const;

 private:
  std::vector<Column> columns_;
  std::size_t indent_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gpurun
