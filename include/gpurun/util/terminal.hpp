#pragma once
// What a terminal allows: colour (as gpustat and git decide it) and the width to fit.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

// Colour on `fd`: only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb.
bool colour_wanted(int fd);

// The columns to fit: $COLUMNS when it is a number, else the terminal's width on `fd`, else 80;
// never fewer than 80.
std::size_t terminal_width(int fd);

// The same where there is a width to fit: $COLUMNS, or `fd` a terminal. Output piped to a file or
// grep has none: its rows are whole (names not cut to fit 80 columns nobody looks at).
std::optional<std::size_t> width_to_fit(int fd);

enum class Colour { red, green, yellow, dim, bold_red };

// `text` in `colour` (ANSI SGR) when `on`, else `text` as it is.
std::string coloured(std::string_view text, Colour colour, bool on);

}  // namespace gpurun
