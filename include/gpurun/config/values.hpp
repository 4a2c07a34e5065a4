#pragma once
// The types a setting's value may have, checked where the value is read (a file's line, a
// variable, a flag) and turned into the typed value Options holds. Values travel between the
// layers as JSON, the files' own form.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gpurun/util/units.hpp"

namespace gpurun {

enum class ValueType {
  text,      // a string
  program,   // a program's name or path: a string, not empty
  word,      // a string, not empty: where "" would quietly mean "not given" (--since, --user)
  seconds,   // a number of seconds, 0 < s <= 3600
  interval,  // a number of seconds, 0 < s <= 86400
  count,     // a whole number >= 1
  whole,     // a whole number >= 0
  percent,   // 0..100, as a number or "10%"
  memory,    // "10%", "500MiB", "2GiB"
  size,      // "500MiB", "20GiB": an amount of memory above 0
  boolean,
  wait,           // a duration, true (no limit) or false
  duration,       // a duration above 0: "90m", "8h", "2d" (or a number of seconds)
  list,           // a list of strings; a higher layer replaces it
  appended_list,  // a list of strings; the layers add up
  gpu_indices,    // a list of whole numbers >= 0
};

// "a percentage such as 10 or "10%"": what a value of `type` looks like, for messages.
std::string_view expectation(ValueType type);

// Why `j` is not a valid value of `type`; nullopt when it is. `flag` names the setting in the
// messages of the unit parsers ("--max-memory "lots": ...").
std::optional<std::string> value_problem(ValueType type, const nlohmann::json& j, std::string_view flag);

// A value written as text (a GPURUN_* variable, a flag's argument) as JSON of `type`; left a
// string when it does not read as one, so that value_problem() says what was expected. Throws
// Error naming `where` for a list that starts like JSON but is not. `where` is the flag ("--wait")
// or the variable ("GPURUN_WAIT"): a wait's 1 is a second on the command line, "yes" in a variable.
nlohmann::json value_from_text(ValueType type, const std::string& raw, std::string_view where);

// A JSON literal (the settings table's defaults) as nlohmann's parser reads it, type included.
// The simple forms (null, true, false, [], a number that is not negative, a string without
// escapes) are read without the parser, which costs about 1 600 instructions a call, and every
// start reads all the option defaults (issue 25). Throws json::parse_error as the parser does.
nlohmann::json json_literal(std::string_view text);

// A JSON value for messages: "\"me/x\"", "[1,2]", never longer than one line.
std::string describe_json(const nlohmann::json& j);

// The typed value of a checked JSON value (value_problem() found nothing).
Percent percent_value(const nlohmann::json& value, std::string_view flag);
MemoryLimit memory_value(const nlohmann::json& value);
std::optional<double> size_mib_value(const nlohmann::json& value, std::string_view flag);  // null: nullopt
WaitLimit wait_value(const nlohmann::json& value);
// A `duration` value ("90m", "8h", "2d", or seconds as a number), from 1 s to a year; nullopt for
// anything else (null included).
inline constexpr std::chrono::seconds kLongestDuration{366L * 86400};
std::optional<std::chrono::seconds> duration_value(const nlohmann::json& value);
std::chrono::milliseconds milliseconds_value(const nlohmann::json& value);
std::optional<int> optional_int(const nlohmann::json& value);  // null: nullopt
std::string text_or_empty(const nlohmann::json& value);        // null: ""

}  // namespace gpurun
