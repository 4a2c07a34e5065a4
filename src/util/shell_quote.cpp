#include "gpurun/util/shell_quote.hpp"

#include <algorithm>

namespace gpurun {
namespace {

bool is_safe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_-+=.,/:@%").find(c) != std::string_view::npos;
}

std::string single_quoted(std::string_view word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'')
      quoted += "'\\''";  // close, escaped quote, reopen
    else
      quoted += c;
  }
  return quoted + "'";
}

}  // namespace

std::string shell_quote(std::string_view word) {
  // Words made only of these characters mean the same to the shell unquoted.
  // A leading '=' is left quoted too: zsh would expand it.
  if (!word.empty() && word.front() != '=' && std::all_of(word.begin(), word.end(), is_safe)) return std::string(word);
  return single_quoted(word);
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& word : argv) {
    // A first word holding '=' would read as a variable assignment.
    if (line.empty() && word.find('=') != std::string::npos) {
      line = single_quoted(word);
      continue;
    }
    if (!line.empty()) line += ' ';
    line += shell_quote(word);
  }
  return line;
}

}  // namespace gpurun
