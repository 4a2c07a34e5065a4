#pragma once
// JSON parsed keeping only the members a reader needs. An engine's inspect answer is about 4 KB
// of which gpurun reads a dozen members; nlohmann's parser took half a millisecond of every launch
// that asks the engine for seven of them (docs/performance.md, issue 25). Boost.JSON (part of the
// Boost headers gpurun uses already) parses them in a quarter of that, into one arena, and only
// the members kept are copied into the nlohmann values the readers take.
#include <nlohmann/json.hpp>

#include <span>
#include <string_view>

namespace gpurun {

// `text` parsed, keeping of each element of a top-level array (or of the top-level value, when it
// is no array) only the members on the way to and under `paths` ("/Config/Labels", "/Id"); an
// array on such a path is kept whole. A value that is not valid JSON gives a discarded value, as
// json::parse(text, nullptr, false) does. Text nested deeper than 64 levels (no engine's answer
// does) is parsed whole, by nlohmann's parser: more members than asked, never fewer.
nlohmann::json parse_json_keeping(std::string_view text, std::span<const std::string_view> paths);

}  // namespace gpurun
