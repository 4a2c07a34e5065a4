#pragma once
// Times as the service and `gpurun history` write and read them: RFC 3339 in UTC, and the
// --since of history and usage (a duration back from now, or a date).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpurun/history/run_tracker.hpp"

namespace gpurun {

// Unix time in milliseconds, as the service's queries, store and files carry a time.
std::int64_t unix_ms(WallTime when);
// The time `ms` stands for; nullopt beyond a nanosecond clock's reach (years 1678 to 2262; within
// ±9e12 ms), which a wider one would overflow.
std::optional<WallTime> from_unix_ms(long long ms);

// RFC 3339 in UTC, to the second: "2026-11-24T13:05:01Z".
std::string rfc3339(WallTime when);

// "2026-11-24T13:05:01Z" (or with an offset, "+02:00"; without a zone, "2026-11-24" and
// "2026-11-24T13:05:01" are local time); nullopt for anything else.
std::optional<WallTime> parse_rfc3339(std::string_view text);

// --since: "30d", "12h", "90m", "2w", "45s" back from `now`, or a date, "2026-11-01" (local
// midnight) or RFC 3339. Throws Error saying what it takes otherwise.
WallTime parse_since(std::string_view text, WallTime now);

}  // namespace gpurun
