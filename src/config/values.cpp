#include "gpurun/config/values.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "gpurun/util/error.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/rounding.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;

bool whole(const json& j, long long min) {
  if (!j.is_number_integer()) return false;
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(INT_MAX) && static_cast<long long>(u) >= min;
  }
  const auto v = j.get<std::int64_t>();
  return v >= min && v <= INT_MAX;
}

bool all_strings(const json& j) {
  return j.is_array() && std::all_of(j.begin(), j.end(), [](const json& item) { return item.is_string(); });
}

// Runs one of the option parsers to check a value early, where the file and line are known.
template <typename Parse>
std::optional<std::string> parser_problem(Parse parse) {
  try {
    parse();
    return std::nullopt;
  } catch (const Error& e) {
    return e.what();
  }
}

std::optional<bool> boolean_word(std::string_view word) {
  const std::string w = text::to_lower(text::trim(word));
  if (w == "1" || w == "true" || w == "yes" || w == "on") return true;
  if (w == "0" || w == "false" || w == "no" || w == "off") return false;
  return std::nullopt;
}

}  // namespace

std::string describe_json(const json& j) {
  if (j.is_string()) return fmt::format("\"{}\"", text::printable(j.get<std::string>()));
  return text::printable(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string_view expectation(ValueType type) {
  switch (type) {
    case ValueType::text:
      return "a string";
    case ValueType::program:
      return "a name or path, not empty";
    case ValueType::word:
      return "a string, not empty";
    case ValueType::seconds:
      return "a number of seconds of at least 0.001, at most 3600";
    case ValueType::interval:
      return "a number of seconds above 0, at most 86400";
    case ValueType::count:
      return "a whole number from 1 to 2147483647";
    case ValueType::whole:
      return "a whole number from 0 to 2147483647";
    case ValueType::percent:
      return "a percentage such as 10 or \"10%\"";
    case ValueType::memory:
      return "a string such as \"10%\", \"500MiB\" or \"2GiB\"";
    case ValueType::size:
      return "a string such as \"500MiB\" or \"20GiB\"";
    case ValueType::boolean:
      return "true or false";
    case ValueType::wait:
      return "a duration such as \"30m\", true (no limit) or false";
    case ValueType::duration:
      return "a duration such as \"90m\", \"8h\" or \"2d\"";
    case ValueType::list:
    case ValueType::appended_list:
      return "a list of strings";
    case ValueType::gpu_indices:
      return "a list of GPU indices (whole numbers from 0)";
  }
  return "a value";
}

// Why `j` is not a valid value of `type`; nullopt when it is.
std::optional<std::string> value_problem(ValueType type, const json& j, std::string_view flag) {
  const auto expected = [&] { return fmt::format("expected {}, got {}", expectation(type), describe_json(j)); };
  switch (type) {
    case ValueType::text:
      if (!j.is_string()) return expected();
      return std::nullopt;
    case ValueType::program:  // "" would run nothing, or look for a program named "" on PATH
    case ValueType::word:
      if (!j.is_string() || text::trim(j.get<std::string>()).empty()) return expected();
      return std::nullopt;
    case ValueType::seconds:
    case ValueType::interval:
      // Seconds are kept as whole milliseconds: 0.0001 was 0, a timeout that killed every child at once.
      if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= 0 ||
          (type == ValueType::seconds && j.get<double>() < 0.001) ||
          j.get<double>() > (type == ValueType::seconds ? 3600 : 86400))
        return expected();
      return std::nullopt;
    case ValueType::count:
    case ValueType::whole:
      if (!whole(j, type == ValueType::count ? 1 : 0)) return expected();
      return std::nullopt;
    case ValueType::percent:
      if (j.is_number() && j.get<double>() >= 0 && j.get<double>() <= 100) return std::nullopt;
      if (j.is_string()) return parser_problem([&] { parse_percent(j.get<std::string>(), flag); });
      return expected();
    case ValueType::memory:
      if (j.is_string()) return parser_problem([&] { parse_memory_limit(j.get<std::string>()); });
      return expected();
    case ValueType::size:
      if (j.is_string()) return parser_problem([&] { parse_memory_size(j.get<std::string>(), flag); });
      return expected();
    case ValueType::boolean:
      if (!j.is_boolean()) return expected();
      return std::nullopt;
    case ValueType::wait:
      if (j.is_boolean()) return std::nullopt;
      if (j.is_string()) return parser_problem([&] { parse_wait_duration(j.get<std::string>()); });
      return expected();
    case ValueType::duration:
      if (!duration_value(j)) return expected();
      return std::nullopt;
    case ValueType::list:
    case ValueType::appended_list:
      if (!all_strings(j)) return expected();
      // An empty -e, -v, -p or srun option reaches the program as a word of its own, which it takes
      // for the next thing it expects (its image). (A command's word may be empty, and so may a
      // --docker-opt, after one that takes a value: --entrypoint "".)
      if (type == ValueType::appended_list && flag != "--docker-opt" &&
          std::any_of(j.begin(), j.end(), [](const json& i) { return i.get<std::string>().empty(); }))
        return std::string("an empty item would reach docker run (or srun) as a word of its own; leave it out");
      return std::nullopt;
    case ValueType::gpu_indices: {
      if (!j.is_array() || !std::all_of(j.begin(), j.end(), [](const json& i) { return whole(i, 0); }))
        return expected();
      std::vector<long long> seen;  // [0, 0, 0, 0] is one GPU, not four
      for (const json& i : j) {
        if (std::find(seen.begin(), seen.end(), i.get<long long>()) != seen.end())
          return fmt::format("GPU {} is listed twice; list each GPU once", i.get<long long>());
        seen.push_back(i.get<long long>());
      }
      return std::nullopt;
    }
  }
  return expected();
}

json json_literal(std::string_view text) {
  if (text == "null") return nullptr;
  if (text == "true" || text == "false") return text == "true";
  if (text == "[]") return json::array();
  const auto plain_char = [](char c) {  // printable ASCII; UTF-8 is for the parser to check
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\';
  };
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"' &&
      std::all_of(text.begin() + 1, text.end() - 1, plain_char))
    return std::string(text.substr(1, text.size() - 2));
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!text.empty() && text.size() <= 9 && (text == "0" || text.front() != '0') &&
      std::all_of(text.begin(), text.end(), digit))
    return static_cast<std::uint64_t>(std::stoul(std::string(text)));  // as the parser types it: unsigned
  return json::parse(text);
}

// A GPURUN_* value as JSON of the key's type; left a string when it does not read as one, so
// that value_problem() says what was expected.
json value_from_text(ValueType type, const std::string& raw, std::string_view where) {
  switch (type) {
    case ValueType::seconds:
    case ValueType::interval:
      if (const auto v = text::parse_double(raw)) return *v;
      return raw;
    case ValueType::count:
    case ValueType::whole:
      if (const auto v = text::parse_integer(raw)) return *v;
      return raw;
    case ValueType::boolean:
      if (const auto v = boolean_word(raw)) return *v;
      return raw;
    case ValueType::duration:
      // `--time-limit 90`: seconds in a file's "90", minutes to Slurm's --time; typed, a unit says which.
      if (text::parse_double(text::trim(raw)))
        throw Error(fmt::format("{}: expected a duration with its unit, such as \"{}m\" or \"{}s\", got \"{}\"", where,
                                text::trim(raw), text::trim(raw), text::printable(raw, 20)));
      return raw;
    case ValueType::wait:
      // On the command line a number is seconds (`--wait=1`: one second, as the error for
      // `--wait 1` tells); in a variable 1 and 0 are booleans, as for every other (GPURUN_WAIT=1).
      if (text::equals_ignoring_case(text::trim(raw), "forever")) return true;
      if (where.starts_with("--") && text::parse_double(text::trim(raw))) return raw;
      if (const auto v = boolean_word(raw)) return *v;
      return raw;
    case ValueType::list:
    case ValueType::appended_list:
      // A JSON list holds several items; anything else is one item, never split on spaces.
      if (text::trim(raw).starts_with("[")) {
        json list = json::parse(raw, nullptr, false);
        if (list.is_discarded())  // one item that starts with '[' ("[::1]:8080:80") is a JSON list of one
          throw Error(fmt::format(
              "{}: a value that starts with '[' is read as a JSON list of strings, and this is none; for one "
              "item write it as a list of one: '{}'",
              where, json_line(json::array({raw}))));
        return list;
      }
      return json::array({raw});
    default:
      return raw;
  }
}

Percent percent_value(const json& value, std::string_view flag) {
  return value.is_number() ? Percent{value.get<double>()} : parse_percent(value.get<std::string>(), flag);
}

MemoryLimit memory_value(const json& value) { return parse_memory_limit(value.get<std::string>()); }

std::optional<double> size_mib_value(const json& value, std::string_view flag) {
  if (value.is_null()) return std::nullopt;
  return parse_memory_size(value.get<std::string>(), flag);
}

WaitLimit wait_value(const json& value) {
  if (value.is_boolean()) return {value.get<bool>(), std::nullopt};
  return {true, parse_wait_duration(value.get<std::string>())};
}

std::optional<std::chrono::seconds> duration_value(const json& value) {
  if (value.is_number()) {
    const double seconds = value.get<double>();
    if (!std::isfinite(seconds) || seconds < 1 || seconds > kLongestDuration.count()) return std::nullopt;
    return std::chrono::seconds(static_cast<long long>(seconds));
  }
  if (!value.is_string()) return std::nullopt;
  try {
    const auto parsed = parse_wait_duration(value.get<std::string>());
    if (!parsed || parsed->count() < 1 || *parsed > kLongestDuration) return std::nullopt;
    return parsed;
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::chrono::milliseconds milliseconds_value(const json& value) {
  return std::chrono::milliseconds(round_to_integer(value.get<double>() * 1000.0));
}

std::optional<int> optional_int(const json& value) {
  return value.is_null() ? std::nullopt : std::optional<int>(value.get<int>());
}

std::string text_or_empty(const json& value) { return value.is_null() ? "" : value.get<std::string>(); }

}  // namespace gpurun
