#pragma once
// Cells the GPU tables share (status, watch, the launch's ranking): unknown values shown as "?".
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "gpurun/gpu/gpu.hpp"

namespace gpurun {

// "97%", or "?" when the driver did not say.
inline std::string number_or_unknown(const std::optional<double>& value, std::string_view suffix = "") {
  return value ? fmt::format("{:.0f}{}", *value, suffix) : "?";
}

// "1024 / 81559 MiB"
inline std::string memory_cell(const Gpu& g) {
  return fmt::format("{} / {} MiB", number_or_unknown(g.memory_used_mib), number_or_unknown(g.memory_total_mib));
}

}  // namespace gpurun
