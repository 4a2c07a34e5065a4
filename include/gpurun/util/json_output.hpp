#pragma once
// The one way gpurun prints JSON for people and programs: indented by two, invalid UTF-8 (a
// container name, a command) replaced rather than thrown on, what a terminal would act on or hide
// (C1 controls, bidirectional overrides) escaped, one newline at the end.
#include <nlohmann/json.hpp>
#include <string>

namespace gpurun {

std::string json_text(const nlohmann::ordered_json& value);
std::string json_text(const nlohmann::json& value);

// The same on one line, without the newline: what the service's HTTP answers, the webhook's
// body and the kept notifications carry (read raw, in a terminal or a log, they hide nothing).
std::string json_line(const nlohmann::ordered_json& value);
std::string json_line(const nlohmann::json& value);

// `text`, or null where it is empty: what a table shows as "?" (unknown) is null in JSON, not a
// user or command named "".
nlohmann::ordered_json string_or_null(const std::string& text);

}  // namespace gpurun
