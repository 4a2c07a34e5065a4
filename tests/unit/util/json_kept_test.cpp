// Unit tests for JSON parsed keeping only some members: what is kept is what a full parse gives
// there, what is not kept is absent, and any text nlohmann's parser refuses is refused.
#include "gpurun/util/json_kept.hpp"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace gpurun {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kPaths{"/Id", "/Config/Labels", "/HostConfig/DeviceRequests",
                                                 "/State/Status"};

json kept(std::string_view text) { return parse_json_keeping(text, kPaths); }

// Every value's type, depth first: json's == takes 1 (unsigned) for 1 (signed); a reader may not.
std::string types_of(const json& value) {
  std::string out = value.type_name();
  if (value.is_number_unsigned()) out += "(unsigned)";
  if (value.is_structured()) {
    out += "[";
    for (const json& item : value) out += types_of(item) + ",";
    out += "]";
  }
  return out;
}

TEST(ParseJsonKeeping, KeepsOnlyTheMembersOnAndUnderThePaths) {
  const json parsed =
      kept(R"([{"Id": "a1", "Name": "/x", "Config": {"Image": "img", "Labels": {"k": "v", "n": {"deep": [1]}}},
      "HostConfig": {"Runtime": "runc", "DeviceRequests": [{"Driver": "", "Count": -1}]}, "State": {"Status": "running", "Pid": 7}},
     {"Name": "/no-id", "Config": null}])");
  EXPECT_EQ(parsed, json::parse(R"([{"Id": "a1", "Config": {"Labels": {"k": "v", "n": {"deep": [1]}}},
      "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": -1}]}, "State": {"Status": "running"}},
     {"Config": null}])"));
}

TEST(ParseJsonKeeping, AKeptValueIsWhatAFullParseGivesThere) {
  std::ifstream file(std::string(GPURUN_TEST_DATA_DIR) + "/engine/dockerd-20.10-inspect.json");
  ASSERT_TRUE(file) << "tests/data/engine/dockerd-20.10-inspect.json";
  std::stringstream text;
  text << file.rdbuf();
  const json full = json::parse(text.str());
  const json parsed = kept(text.str());
  ASSERT_EQ(parsed.size(), full.size());
  for (std::size_t i = 0; i < full.size(); ++i)
    for (const std::string_view path : kPaths) {
      const json::json_pointer pointer{std::string(path)};
      ASSERT_EQ(parsed[i].contains(pointer), full[i].contains(pointer)) << path;
      if (full[i].contains(pointer)) {
        EXPECT_EQ(parsed[i].at(pointer), full[i].at(pointer)) << path;
        EXPECT_EQ(types_of(parsed[i].at(pointer)), types_of(full[i].at(pointer))) << path;
      }
    }
  EXPECT_FALSE(parsed[0].contains("/GraphDriver"_json_pointer));
}

TEST(ParseJsonKeeping, KeepsATopLevelObjectByTheSamePaths) {
  EXPECT_EQ(kept(R"({"Id": "a", "Name": "b"})"), json::parse(R"({"Id": "a"})"));
  EXPECT_EQ(kept("[1, \"x\", null, [2]]"), json::parse("[1, \"x\", null, [2]]"));  // no object: kept as is
}

TEST(ParseJsonKeeping, NumbersStringsAndDuplicatesAsNlohmannReadsThem) {
  constexpr std::array<std::string_view, 1> all_of_it{"/v"};
  for (const char* text : {R"({"v": [0, -1, 18446744073709551615, 1.5e300, -0.0, true, null]})",
                           R"({"v": "caf\u00e9 \ud83d\ude00 \"q\" \\ \n"})", R"({"v": 1, "v": 2})", R"({"v": {}})"}) {
    EXPECT_EQ(parse_json_keeping(text, all_of_it), json::parse(text)) << text;
    EXPECT_EQ(types_of(parse_json_keeping(text, all_of_it)), types_of(json::parse(text))) << text;
  }
}

TEST(ParseJsonKeeping, RefusesWhatIsNoJson) {
  for (const char* text : {"", "[", "[1,]", "{\"Id\": }", "[1] x", "{'Id': 1}", "\"\xff\"", "[1] [2]", "nul"})
    EXPECT_TRUE(kept(text).is_discarded()) << text;
}

// Boost.JSON's parser recurses once per level: deep text must not overflow the stack, and is
// read whole instead, by nlohmann's parser.
TEST(ParseJsonKeeping, AnyDepthWithoutOverflowingTheStack) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const json parsed = kept(R"([{"Skipped": )" + deep + R"(, "Id": 1}])");
  ASSERT_TRUE(parsed.is_array());
  EXPECT_TRUE(parsed[0].contains("Skipped"));  // (compared no further: nlohmann's == recurses)
  EXPECT_EQ(parsed[0].at("Id"), 1);
  const std::string shallow = std::string(60, '[') + std::string(60, ']');
  EXPECT_EQ(kept(R"([{"Id": 1, "Skipped": )" + shallow + "}]"), json::parse(R"([{"Id": 1}])"));
  EXPECT_TRUE(kept(std::string(200000, '[')).is_discarded());
}

}  // namespace
}  // namespace gpurun
