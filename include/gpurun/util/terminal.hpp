#pragma once
// What a terminal allows: colour (as gpustat and git decide it) and the width to fit.
#include <cstddef>
#include <string>
#include <string_view>

namespace gpurun {

// Colour on `fd`: only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb.
bool colour_wanted(int fd);

// The columns to fit: $COLUMNS when it is a number, else the terminal's width on `fd`, else 80;
// never fewer than 80.
std::size_t terminal_width(int fd);

enum class Colour { red, green, yellow, dim, bold_red };

// `text` in `colour` (ANSI SGR) when `on`, else `text` as it is.
std::string coloured(std::string_view text, Colour colour, bool on);

}  // namespace gpurun
