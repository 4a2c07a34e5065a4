#pragma once
// Where things are in a configuration file's text, for messages that name a line: each key's line
// (nlohmann reports no positions for keys), and a parse error's line and column.
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace gpurun {

// Every key's line, by path ("image", "profiles/jupyter/gpus"), found by a scan that knows strings
// and comments: a plain text search would find a profile's "gpus" when the top-level one is meant.
// Keys are compared and recorded as JSON reads them: "im\u0061ge" is "image".
struct KeyScan {
  std::map<std::string, std::size_t> lines;
  bool has_content = false;       // anything besides blanks and comments
  std::size_t too_deep_line = 0;  // where an object or array first nests deeper than kMaxNesting; 0: nowhere
  // The first key given twice in one object (its path, and its two lines): JSON parsers keep one of
  // the two without a word, so a setting written twice would be decided by which comes last.
  struct Duplicate {
    std::string path;
    std::size_t first_line = 0;
    std::size_t line = 0;
  };
  std::optional<Duplicate> duplicate;
  // The first number beyond a double's range (1e400), which nlohmann refuses without a position.
  struct Overflow {
    std::string number;
    std::size_t line = 0;
  };
  std::optional<Overflow> overflow;
};
// Far deeper than any setting (profiles, a profile, its list: four levels): a file nested deeper is no configuration,
// and following it would cost memory as the square of its depth.
constexpr std::size_t kMaxNesting = 32;
KeyScan scan_keys(std::string_view s);

// "profiles" + "jupyter" -> "profiles/jupyter"; "profiles/jupyter" -> "profiles.jupyter" (dotted,
// printable: for messages).
std::string join_path(const std::string& parent, std::string_view key);
std::string dotted(std::string path);

// nlohmann's byte offset (characters read, the offending one included) as line and column.
std::pair<std::size_t, std::size_t> line_column(std::string_view s, std::size_t byte);

// "syntax error while parsing object - unexpected '}'; ..." out of nlohmann's message.
std::string parse_detail(const std::string& what);

}  // namespace gpurun
