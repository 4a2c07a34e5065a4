// Unit tests for gpurun's JSON output (gpurun/util/json_output.hpp): what a terminal would act on
// or hide is escaped, and the text still means the same to a JSON reader.
#include "gpurun/util/json_output.hpp"

#include <gtest/gtest.h>

namespace gpurun {
namespace {

// Another user's command in `gpurun history --json`: U+009B is CSI, which xterm acts on in UTF-8;
// U+202E turns the rest of the line around.
TEST(JsonText, WhatATerminalWouldActOnOrHideIsEscaped) {
  const nlohmann::json value = {{"command", "a\u009b2Jb\u202eevil\u2066x\u2028y\u200f\u061c"},
                                {"name", "caf\u00e9 \u00a0ok"}};
  const std::string text = json_text(value);
  EXPECT_EQ(text.find("\u009b"), std::string::npos);
  EXPECT_EQ(text.find("\u202e"), std::string::npos);
  EXPECT_NE(text.find(R"(a\u009b2Jb\u202eevil\u2066x\u2028y\u200f\u061c)"), std::string::npos) << text;
  EXPECT_NE(text.find("caf\u00e9 \u00a0ok"), std::string::npos) << text;  // the rest as it was
  EXPECT_EQ(nlohmann::json::parse(text), value);
}

// One line (the service's answers, a webhook's body): the same escapes, so a chat or a page shows
// another user's command as it is, not turned around.
TEST(JsonLine, WhatATerminalWouldActOnOrHideIsEscapedToo) {
  const nlohmann::ordered_json value = {{"text", "run 3 (\u202egnp.exe) \u009bstopped"}};
  const std::string line = json_line(value);
  EXPECT_EQ(line, R"({"text":"run 3 (\u202egnp.exe) \u009bstopped"})");
  EXPECT_EQ(nlohmann::ordered_json::parse(line), value);
  EXPECT_EQ(json_line(nlohmann::json(value)), line);
}

}  // namespace
}  // namespace gpurun
