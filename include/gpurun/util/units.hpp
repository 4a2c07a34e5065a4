#pragma once
// The typed values of gpurun's settings, parsed once where they are read: utilization limits,
// memory limits and durations. Each parser throws Error saying what was expected.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gpurun {

// --max-memory: an absolute amount ("2GiB", "500MiB") or a share of each GPU's total ("15%").
struct MemoryLimit {
  enum class Kind { percent, mib };
  Kind kind = Kind::percent;
  double value = 10.0;
  bool operator==(const MemoryLimit&) const = default;
};
MemoryLimit parse_memory_limit(std::string_view input);  // throws Error on bad input

// --min-free-memory: an amount above 0 ("20GiB", "500MiB"), in MiB; throws Error naming `what`.
double parse_memory_size(std::string_view input, std::string_view what);

// --max-util, --report-threshold: a share from 0 to 100.
struct Percent {
  double value = 0.0;  // 0..100
  bool operator==(const Percent&) const = default;
};
// "10" or "10%", 0..100; throws Error naming `what` (the flag) otherwise.
Percent parse_percent(std::string_view input, std::string_view what);
double parse_utilization_limit(std::string_view input);  // parse_percent(input, "--max-util").value

// --wait: not at all, without limit, or up to a duration.
struct WaitLimit {
  bool enabled = false;
  std::optional<std::chrono::seconds> limit;  // nullopt while enabled: no limit
  bool operator==(const WaitLimit&) const = default;
};
// "30" or "30s", "5m", "2h", "1d"; "" (bare --wait) is nullopt: no limit. Throws Error otherwise.
std::optional<std::chrono::seconds> parse_wait_duration(std::string_view input);

// How a duration is written: `exact` to the second ("1h 02m 05s", "3m 07s", "12s"; hours do not
// roll over into days), `brief` in its two largest units ("1d 3h", "1h 2m", "3m 7s", "12s"; "2d", not "2d 0h").
enum class DurationStyle { exact, brief };
std::string format_duration(std::chrono::seconds duration, DurationStyle style = DurationStyle::exact);

}  // namespace gpurun
