#include "gpurun/util/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "gpurun/util/text.hpp"

namespace gpurun {

bool colour_wanted(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(fd) != 0;
}

std::size_t terminal_width(int fd) {
  constexpr std::size_t kNarrowest = 80;
  if (const char* columns = std::getenv("COLUMNS"))
    if (const auto number = text::parse_integer(columns); number && *number > 0)
      return std::max(kNarrowest, static_cast<std::size_t>(*number));
  struct winsize size {};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return std::max<std::size_t>(kNarrowest, size.ws_col);
  return kNarrowest;
}

std::optional<std::size_t> width_to_fit(int fd) {
  const char* columns = std::getenv("COLUMNS");
  const bool given = columns != nullptr && text::parse_integer(columns).value_or(0) > 0;
  if (!given && ::isatty(fd) == 0) return std::nullopt;
  return terminal_width(fd);
}

std::string coloured(std::string_view text, Colour colour, bool on) {
  if (!on) return std::string(text);
  const char* code = "";
  switch (colour) {
    case Colour::red:
      code = "31";
      break;
    case Colour::green:
      code = "32";
      break;
    case Colour::yellow:
      code = "33";
      break;
    case Colour::dim:
      code = "2";
      break;
    case Colour::bold_red:
      code = "1;31";
      break;
  }
  return std::string("\033[") + code + "m" + std::string(text) + "\033[0m";
}

}  // namespace gpurun
