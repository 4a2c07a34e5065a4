#include "gpurun/util/json_output.hpp"

#include <fmt/format.h>

namespace gpurun {
namespace {

// The characters a terminal acts on or that hide or reorder text, as \uXXXX: C1 controls (U+0080
// to U+009F: xterm reads CSI and OSC in UTF-8 too), the bidirectional marks, overrides and
// isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069) and the line separators
// (U+2028, U+2029). JSON escapes only
// what is below U+0020, and another user's command in `gpurun history --json` reached a terminal
// raw. They appear only inside strings, so the text means the same to any JSON reader.
std::string escape_invisible(std::string text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0U; };
    unsigned code = 0;
    std::size_t length = 0;
    if (byte(0) == 0xC2 && byte(1) >= 0x80 && byte(1) <= 0x9F) {
      code = byte(1);
      length = 2;
    } else if (byte(0) == 0xE2 && byte(1) == 0x80 &&
               ((byte(2) >= 0xA8 && byte(2) <= 0xAE) || byte(2) == 0x8E || byte(2) == 0x8F)) {
      code = 0x2000U + (byte(2) - 0x80U);
      length = 3;
    } else if (byte(0) == 0xD8 && byte(1) == 0x9C) {  // U+061C, the Arabic letter mark
      code = 0x061CU;
      length = 2;
    } else if (byte(0) == 0xE2 && byte(1) == 0x81 && byte(2) >= 0xA6 && byte(2) <= 0xA9) {
      code = 0x2040U + (byte(2) - 0x80U);
      length = 3;
    }
    if (length == 0) {
      out += text[i];
      continue;
    }
    out += fmt::format("\\u{:04x}", code);
    i += length - 1;
  }
  return out;
}

}  // namespace

std::string json_text(const nlohmann::ordered_json& value) {
  return escape_invisible(value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) + '\n';
}

std::string json_text(const nlohmann::json& value) {
  return escape_invisible(value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + '\n';
}

std::string json_line(const nlohmann::ordered_json& value) {
  return escape_invisible(value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

std::string json_line(const nlohmann::json& value) {
  return escape_invisible(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

nlohmann::ordered_json string_or_null(const std::string& text) {
  return text.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(text);
}

}  // namespace gpurun
