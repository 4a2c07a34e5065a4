#pragma once
// The one table printer: a header line and rows, columns two spaces apart, each as wide as its
// widest cell within its bounds; a last column aligned left is never padded (no trailing blanks).
// Given a width, it fits: the columns that may give way are cut (with "…"), left to right.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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
  // To fit a width, cells may be cut down to this many columns (never below the header); 0: never cut.
  std::size_t gives_way_to = 0;

  // A column exactly `width` wide: a longer cell overflows.
  static Column fixed(std::string header, Align align, std::size_t width) {
    return {std::move(header), align, width, width, 0};
  }
  // A column as wide as its widest cell (or its header).
  static Column fitted(std::string header, Align align = Align::left) { return {std::move(header), align, 0, {}, 0}; }
  // A fitted column that may be cut down to `least` columns to fit a width.
  static Column shrinkable(std::string header, std::size_t least, Align align = Align::left) {
    return {std::move(header), align, 0, {}, least};
  }
};

// Columns on screen: two for a wide East Asian character (a command line's 训练.py, a
// fullwidth ｗｉｄｅ), none for a combining mark, else one for each UTF-8 code point.
std::size_t display_width(std::string_view s);

// `s` cut to `width` columns (never inside a character), the last of them "…" when cut.
std::string cut_to_width(std::string_view s, std::size_t width);

class Table {
 public:
  // `indent`: spaces before every line.
  explicit Table(std::vector<Column> columns, std::size_t indent = 0);

  // One cell per column (missing cells are empty, extra ones are an error). `paint` dresses the
  // last cell once it is cut to fit (colour); the width counts it undressed.
  using Paint = std::function<std::string(const std::string&)>;
  void add_row(std::vector<std::string> cells, Paint paint = {});

  // Cut the columns that give way so that each line fits `width` columns, where they can: in
  // `order` (column indices), else left to right.
  void fit(std::size_t width, std::vector<std::size_t> order = {});

  // The longest line's width as the cells stand, uncut.
  std::size_t natural_width() const;

  // The header line and the rows, each ending with a newline.
  std::string str() const;
  // The same as separate lines (without newlines): the header first, then row i at i + 1.
  std::vector<std::string> lines() const;

 private:
  struct Row {
    std::vector<std::string> cells;
    Paint paint;
  };
  std::vector<std::size_t> widths(bool fitted) const;

  std::vector<Column> columns_;
  std::size_t indent_;
  std::optional<std::size_t> width_;
  std::vector<std::size_t> give_way_order_;
  std::vector<Row> rows_;
};

}  // namespace gpurun
