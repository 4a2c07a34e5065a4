#include "help_formatter.hpp"

#include <map>
#include <sstream>
#include <string_view>

namespace gpurun::cli {
namespace {

// What the value after '=' is, for the switches that may take one (Setting::bare_value).
std::string_view value_name(std::string_view long_name) {
  static const std::map<std::string_view, std::string_view> kNames{
      {"wait", "DURATION"}, {"mig", "PROFILE"}, {"watch", "SECONDS"}};
  const auto found = kNames.find(long_name);
  return found == kNames.end() ? "VALUE" : found->second;
}

}  // namespace

std::string wrapped(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out;
  std::size_t column = 0;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (column > 0 && column + 1 + word.size() > width) {
      out += '\n' + std::string(indent, ' ');
      column = 0;
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
  std::string name = CLI::Formatter::make_option_name(opt, is_positional);
  const std::size_t brace = name.find('{');
  if (brace == std::string::npos || opt->get_lnames().empty()) return name;
  return name.substr(0, brace) + "[=" + std::string(value_name(opt->get_lnames().front())) + "]";
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  const std::string left = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
  const std::size_t column = get_column_width();
  const std::size_t room = width_ > column + 20 ? width_ - column : 20;
  const std::string description = wrapped(make_option_desc(opt), room, column);
  if (left.size() >= column) return left + '\n' + std::string(column, ' ') + description + '\n';
  return left + std::string(column - left.size(), ' ') + description + '\n';
}

}  // namespace gpurun::cli
