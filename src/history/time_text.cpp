#include "gpurun/history/time_text.hpp"

#include <fmt/format.h>

#include <ctime>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {

std::int64_t unix_ms(WallTime when) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
}

std::optional<WallTime> from_unix_ms(long long ms) {
  constexpr long long kReach = 9'000'000'000'000LL;
  if (ms < -kReach || ms > kReach) return std::nullopt;
  return WallTime{} + std::chrono::milliseconds(ms);
}

std::string rfc3339(WallTime when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  if (std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc) == 0) return "";
  return text;
}

std::optional<WallTime> parse_rfc3339(std::string_view text) {
  const std::string copy(text);
  std::tm tm{};
  const char* rest = ::strptime(copy.c_str(), "%Y-%m-%d", &tm);
  if (rest == nullptr) return std::nullopt;
  if (*rest == 'T' || *rest == 't' || *rest == ' ') {
    rest = ::strptime(rest + 1, "%H:%M:%S", &tm);
    if (rest == nullptr) return std::nullopt;
    while (*rest == '.' || (*rest >= '0' && *rest <= '9')) ++rest;  // fractions of a second: dropped
  }
  long offset_s = 0;
  bool zoned = true;
  if (*rest == 'Z' || *rest == 'z') {
    ++rest;
  } else if (*rest == '+' || *rest == '-') {
    const std::string_view zone(rest + 1);  // "hh:mm"
    const auto hours = zone.size() == 5 && zone[2] == ':' ? text::parse_integer(zone.substr(0, 2)) : std::nullopt;
    const auto minutes = hours ? text::parse_integer(zone.substr(3, 2)) : std::nullopt;
    if (!hours || !minutes || *hours < 0 || *hours > 23 || *minutes < 0 || *minutes > 59) return std::nullopt;
    offset_s = (*rest == '-' ? -1 : 1) * (*hours * 3600L + *minutes * 60L);
    rest += 6;
  } else {
    zoned = false;
  }
  if (*rest != '\0') return std::nullopt;
  // The clock counts nanoseconds, from 1678 to 2262: a year outside it came back as another.
  if (tm.tm_year < 1970 - 1900 || tm.tm_year > 2200 - 1900) return std::nullopt;
  // Without a zone, the local time, as `date` reads it and as the answers show it.
  tm.tm_isdst = -1;
  const std::tm asked = tm;
  const std::time_t seconds = zoned ? ::timegm(&tm) : ::mktime(&tm);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  // A day the month has not (2026-02-30) came back as another day of the next month.
  if (tm.tm_mday != asked.tm_mday || tm.tm_mon != asked.tm_mon || tm.tm_year != asked.tm_year) return std::nullopt;
  return std::chrono::system_clock::from_time_t(seconds - offset_s);
}

WallTime parse_since(std::string_view text, WallTime now) {
  const auto bad = [&] {
    return Error(
        fmt::format("--since \"{}\": expected a time back from now (30d, 12h, 90m, 2w) or a date "
                    "from 1970 to 2200 (2026-11-01, or 2026-11-01T08:00:00Z)",
                    text::printable(std::string(text))));
  };
  if (text.size() >= 2) {
    const char unit = text.back();
    if (const auto amount = text::parse_integer(text.substr(0, text.size() - 1)); amount && *amount >= 0) {
      long long seconds_per = 0;
      switch (unit) {
        case 's':
          seconds_per = 1;
          break;
        case 'm':
          seconds_per = 60;
          break;
        case 'h':
          seconds_per = 3600;
          break;
        case 'd':
          seconds_per = 86400;
          break;
        case 'w':
          seconds_per = 7LL * 86400;
          break;
        default:
          throw bad();
      }
      if (*amount > 100LL * 365 * 86400 / seconds_per) throw bad();  // more than a century back
      return now - std::chrono::seconds(*amount * seconds_per);
    }
  }
  if (const auto when = parse_rfc3339(text)) {
    // A window that starts later than now holds nothing: a typo (2062 for 2026), never a question.
    if (*when > now)
      throw Error(
          fmt::format("--since \"{}\" is later than now ({}): give a time before it, such as 7d or a date "
                      "that has passed",
                      text::printable(std::string(text)), rfc3339(now)));
    return *when;
  }
  throw bad();
}

}  // namespace gpurun
