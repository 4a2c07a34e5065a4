#include "gpurun/util/units.hpp"

#include <fmt/format.h>

#include <array>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {

namespace {

// "2GiB", "500MiB" (also G, GB, M, MB) in MiB; nullopt for another unit. `u` is lower case.
std::optional<double> in_mib(double value, const std::string& u) {
  if (u == "mib" || u == "m" || u == "mb") return value;
  if (u == "gib" || u == "g" || u == "gb") return value * 1024.0;
  if (u == "tib" || u == "t" || u == "tb") return value * 1024.0 * 1024.0;
  return std::nullopt;
}

}  // namespace

MemoryLimit parse_memory_limit(std::string_view input) {
  const auto [number, unit] = text::split_unit(input);
  const auto value = text::parse_double(number);
  const std::string u = text::to_lower(unit);
  const auto bad = [&](std::string_view why) {
    return Error(fmt::format("--max-memory \"{}\": {}; write it as 2GiB, 500MiB or 15%", text::printable(input), why));
  };
  if (!value || *value < 0) throw bad("not a non-negative amount");
  if (u == "%") {
    if (*value > 100) throw bad("a percentage above 100");
    return {MemoryLimit::Kind::percent, *value};
  }
  if (const auto mib = in_mib(*value, u)) return {MemoryLimit::Kind::mib, *mib};
  if (u.empty()) throw bad("it needs a unit");
  throw bad(fmt::format("unknown unit \"{}\"", text::printable(unit)));
}

double parse_memory_size(std::string_view input, std::string_view what) {
  const auto [number, unit] = text::split_unit(input);
  const auto value = text::parse_double(number);
  const std::string u = text::to_lower(unit);
  const auto bad = [&](std::string_view why) {
    return Error(fmt::format("{} \"{}\": {}; write it as 20GiB or 500MiB", what, text::printable(input), why));
  };
  if (!value || *value <= 0) throw bad("not an amount above 0");
  if (const auto mib = in_mib(*value, u)) return *mib;
  if (u.empty()) throw bad("it needs a unit");
  throw bad(fmt::format("unknown unit \"{}\"", text::printable(unit)));
}

Percent parse_percent(std::string_view input, std::string_view what) {
  const auto [number, unit] = text::split_unit(input);
  const auto value = text::parse_double(number);
  if (!value || *value < 0 || *value > 100 || !(unit.empty() || unit == "%"))
    throw Error(
        fmt::format("{} \"{}\": expected a percentage from 0 to 100, such as 10 or 10%", what, text::printable(input)));
  return {*value};
}

double parse_utilization_limit(std::string_view input) { return parse_percent(input, "--max-util").value; }

std::optional<std::chrono::seconds> parse_wait_duration(std::string_view input) {
  const std::string_view trimmed = text::trim(input);
  if (trimmed.empty() || trimmed == "forever") return std::nullopt;
  const auto [number, unit] = text::split_unit(trimmed);
  const auto value = text::parse_double(number);
  const long long scale = unit.empty() || unit == "s" ? 1
                          : unit == "m"               ? 60
                          : unit == "h"               ? 3600
                          : unit == "d"               ? 86400
                                                      : 0;
  if (!value || *value < 0 || scale == 0)
    throw Error(
        fmt::format("--wait={}: expected a duration such as 90, 30s, 5m or 2h (bare --wait waits without limit)",
                    text::printable(input)));
  if (*value * static_cast<double>(scale) > 1e9)
    throw Error(fmt::format("--wait={}: at most 1000000000 s (31 years); bare --wait waits without limit",
                            text::printable(input)));
  return std::chrono::seconds(static_cast<long long>(*value * static_cast<double>(scale)));
}

std::string format_duration(std::chrono::seconds duration, DurationStyle style) {
  const long long s = duration.count();
  if (s < 60) return fmt::format("{}s", s);
  struct Unit {
    long long value;
    char name;
  };
  const bool exact = style == DurationStyle::exact;
  const std::array<Unit, 4> units{
      {{exact ? 0 : s / 86400, 'd'}, {exact ? s / 3600 : s % 86400 / 3600, 'h'}, {s % 3600 / 60, 'm'}, {s % 60, 's'}}};
  std::size_t first = 0;  // the largest unit that is not zero
  while (units[first].value == 0) ++first;
  const std::size_t end = exact ? units.size() : first + 2;
  std::string text = fmt::format("{}{}", units[first].value, units[first].name);
  for (std::size_t i = first + 1; i < end; ++i)
    if (exact || units[i].value != 0) text += fmt::format(" {:0{}}{}", units[i].value, exact ? 2 : 1, units[i].name);
  return text;
}

}  // namespace gpurun
