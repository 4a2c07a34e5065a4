#pragma once
// Small string helpers shared by the parsers.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun::text {

std::string_view trim(std::string_view s);
std::string to_lower(std::string_view s);  // ASCII only, locale-independent
std::string to_upper(std::string_view s);
// ASCII case-insensitive comparisons, without a lowered copy (parsers call them per line).
bool equals_ignoring_case(std::string_view a, std::string_view b);
bool starts_with_ignoring_case(std::string_view s, std::string_view prefix);
std::vector<std::string_view> split(std::string_view s, char separator);
// The program a command line runs, by its file's name alone: "/usr/bin/python3 train.py --token=T"
// is "python3". Where a command is shown to whoever may look, its arguments may carry tokens.
std::string_view program_of(std::string_view command_line);

// One line of input with its 1-based number; the trailing CR of a CRLF line is removed.
struct Line {
  std::size_t number;
  std::string_view text;
};
// The non-blank lines of `s`.
std::vector<Line> non_blank_lines(std::string_view s);

// Whole-string numbers; nullopt when `s` is not exactly one number.
std::optional<double> parse_double(std::string_view s);
std::optional<long long> parse_integer(std::string_view s);

// Splits "1234 MiB" / "45%" into the number text and the unit text (both trimmed).
struct NumberWithUnit {
  std::string_view number;
  std::string_view unit;
};
NumberWithUnit split_unit(std::string_view s);

// Makes arbitrary input printable in one line of an error message.
std::string printable(std::string_view s, std::size_t max_length = 60);

// Safe to write to a terminal, whole and readable: UTF-8 text is kept (names in any script), and
// control characters (C0, DEL and C1, which a terminal obeys), invisible characters that change
// how a line shows (bidirectional overrides, zero-width spaces: their UTF-8 bytes), and bytes
// that are not UTF-8, become \xNN as printable() writes them.
std::string terminal_safe(std::string_view s);

// terminal_safe(), cut to `max_chars` characters (code points) with "..." when longer: a name
// in a table, whole and readable in any script (printable() would show josé as jos\xc3\xa9).
std::string terminal_safe_cut(std::string_view s, std::size_t max_chars);

// printable(), cut where a word ends (not inside one) when longer than `max_length`.
std::string printable_words(std::string_view s, std::size_t max_length);

// URL query values: every byte but A-Z a-z 0-9 - . _ ~ as %XX, and back (nullopt for a broken %).
// A '+' is a space in a query (a form's encoding) and itself in a path.
enum class UrlPart { query, path };
std::string percent_encode(std::string_view s);
std::optional<std::string> percent_decode(std::string_view s, UrlPart part = UrlPart::query);

}  // namespace gpurun::text
