#pragma once
// The option lines of `gpurun --help`: `--wait[=DURATION]` where CLI11 writes `--wait{forever}`
// (its default value, which reads as syntax), and each description wrapped to the width under
// its own column instead of one line of 130 columns.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace gpurun::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(std::size_t width) : width_(width) {}
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;

 private:
  std::size_t width_;
};

// `text` in lines of at most `width` columns (a longer word stands alone), each but the first
// after `indent` spaces.
std::string wrapped(const std::string& text, std::size_t width, std::size_t indent);

}  // namespace gpurun::cli
