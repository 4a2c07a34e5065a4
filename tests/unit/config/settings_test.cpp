// Unit tests of the settings registry: every entry complete, names unique, defaults equal to the
// Options defaults, and values read from text as the files would write them.
#include "gpurun/config/settings.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/options.hpp"
#include "gpurun/config/values.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;

TEST(Settings, EveryEntryIsComplete) {
  for (const Setting& s : settings()) {
    EXPECT_FALSE(s.help.empty()) << s.key;
    EXPECT_NO_THROW((void)s.default_value()) << s.key;
    if (s.scope == Scope::policy) {
      EXPECT_TRUE(s.flag.empty()) << s.key << ": policy is set in the system file only";
      continue;
    }
    EXPECT_NE(s.apply, nullptr) << s.key;
    EXPECT_FALSE(s.flag.empty()) << s.key;
    EXPECT_FALSE(s.group.empty()) << s.key;
    if (s.scope == Scope::option) {
      EXPECT_FALSE(s.example.empty()) << s.key << ": the starter file shows every key a file may set";
      EXPECT_TRUE(s.env().starts_with("GPURUN_")) << s.key;
    } else {
      EXPECT_EQ(s.env(), "") << s.key << ": per-invocation settings have no variable";
    }
  }
}

// default_value reads simple literals without the parser (json_literal): it must give what the
// parser gives, type and all (a non-negative number is unsigned there), for the table's literals
// and for edge cases.
TEST(Settings, DefaultValuesAreWhatTheParserReads) {
  std::vector<std::string_view> literals = {"null",       "true",        "false",    "[]",
                                            "0",          "7",           "80",       "123456789",
                                            "1234567890", R"("")",       R"("10%")", R"("/run/lock/gpurun")",
                                            R"("a\"b")",  R"("\u00e9")", "-1",       "1.5",
                                            "[1]",        R"({"a":1})",  " null",    "\"caf\xc3\xa9\""};
  for (const Setting& s : settings()) literals.push_back(s.fallback);
  for (const std::string_view literal : literals) {
    Setting setting;
    setting.fallback = literal;
    const json parsed = json::parse(literal);
    EXPECT_EQ(setting.default_value(), parsed) << literal;
    EXPECT_EQ(setting.default_value().type(), parsed.type()) << literal;
  }
  for (const std::string_view bad : {"01", "nul", "\"a", "[", "", "\"\xff\""}) {
    Setting setting;
    setting.fallback = bad;
    EXPECT_THROW((void)setting.default_value(), json::parse_error) << bad;
  }
}

TEST(Settings, KeysAndFlagsAreUnique) {
  std::set<std::string_view> keys, flags;
  for (const Setting& s : settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    if (!s.flag.empty()) {
      EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    }
    if (!s.short_flag.empty()) {
      EXPECT_TRUE(flags.insert(s.short_flag).second) << s.short_flag;
    }
  }
}

TEST(Settings, FindsByKeyAndByFlag) {
  EXPECT_EQ(find_setting("max_util")->flag, "--max-util");
  EXPECT_EQ(find_flag("-e")->key, "env");
  EXPECT_EQ(find_flag("--volume")->key, "volumes");
  EXPECT_EQ(find_setting("no_such_key"), nullptr);
  EXPECT_EQ(find_flag(""), nullptr);
}

TEST(Settings, DefaultsAppliedGiveTheOptionsDefaults) {
  Options applied;
  applied.gpus = 7;
  applied.max_util = Percent{99};
  applied.wait = WaitLimit{true, std::chrono::seconds(5)};
  applied.report_threshold = 1;
  applied.watch_count = 3;
  applied.json = true;
  for (const Setting& s : settings())
    if (s.apply != nullptr && !s.default_value().is_null()) s.apply(s.default_value(), applied);
  const Options plain;
  EXPECT_EQ(applied.gpus, plain.gpus);
  EXPECT_EQ(applied.max_util, plain.max_util);
  EXPECT_EQ(applied.max_memory, plain.max_memory);
  EXPECT_EQ(applied.wait, plain.wait);
  EXPECT_EQ(applied.smi_timeout, plain.smi_timeout);
  EXPECT_EQ(applied.report_threshold, plain.report_threshold);
  EXPECT_EQ(applied.report_interval_s, plain.report_interval_s);
  EXPECT_EQ(applied.watch_count, plain.watch_count);
  EXPECT_EQ(applied.json, plain.json);
}

TEST(Values, TextIsReadAsTheTypeWants) {
  EXPECT_EQ(value_from_text(ValueType::seconds, "2.5", "--smi-timeout"), json(2.5));
  EXPECT_EQ(value_from_text(ValueType::count, "3", "N"), json(3));
  EXPECT_EQ(value_from_text(ValueType::boolean, "yes", "GPURUN_DETACH"), json(true));
  EXPECT_EQ(value_from_text(ValueType::wait, "forever", "--wait"), json(true));
  EXPECT_EQ(value_from_text(ValueType::wait, "30m", "--wait"), json("30m"));
  EXPECT_EQ(value_from_text(ValueType::wait, "1", "--wait"), json("1"));  // a second, not "yes"
  EXPECT_EQ(value_from_text(ValueType::wait, "0", "--wait"), json("0"));
  EXPECT_EQ(value_from_text(ValueType::wait, "1", "GPURUN_WAIT"), json(true));  // a variable's 1 is "yes"
  EXPECT_EQ(value_from_text(ValueType::wait, "30", "GPURUN_WAIT"), json("30"));
  EXPECT_EQ(value_from_text(ValueType::wait, "no", "--wait"), json(false));
  EXPECT_EQ(value_from_text(ValueType::appended_list, "a b", "GPURUN_ENV"), json::array({"a b"}));
  EXPECT_EQ(value_from_text(ValueType::count, "many", "N"), json("many"));  // value_problem says why
}

TEST(Values, ProblemsSayWhatWasExpected) {
  EXPECT_EQ(value_problem(ValueType::seconds, json(0), "--smi-timeout"),
            "expected a number of seconds of at least 0.001, at most 3600, got 0");
  EXPECT_EQ(value_problem(ValueType::seconds, json(3601), "--smi-timeout"),
            "expected a number of seconds of at least 0.001, at most 3600, got 3601");
  // Kept as whole milliseconds, 0.0001 s was a timeout of 0 that killed every child at once.
  EXPECT_TRUE(value_problem(ValueType::seconds, json(0.0001), "--smi-timeout").has_value());
  EXPECT_EQ(value_problem(ValueType::seconds, json(0.001), "--smi-timeout"), std::nullopt);
  EXPECT_EQ(value_problem(ValueType::whole, json(0), "--count"), std::nullopt);
  EXPECT_EQ(value_problem(ValueType::percent, json("150"), "--report-threshold"),
            "--report-threshold \"150\": expected a percentage from 0 to 100, such as 10 or 10%");
  EXPECT_EQ(value_problem(ValueType::percent, json(55), "--max-util"), std::nullopt);
  EXPECT_EQ(value_problem(ValueType::program, json("docker"), "--docker"), std::nullopt);
  EXPECT_EQ(value_problem(ValueType::program, json(""), "--docker"), "expected a name or path, not empty, got \"\"");
  EXPECT_EQ(value_problem(ValueType::program, json(" "), "--docker"), "expected a name or path, not empty, got \" \"");
}

TEST(Values, TypedValues) {
  EXPECT_EQ(percent_value(json("15%"), "--max-util"), Percent{15});
  EXPECT_EQ(memory_value(json("2GiB")), (MemoryLimit{MemoryLimit::Kind::mib, 2048}));
  EXPECT_EQ(wait_value(json(false)), WaitLimit{});
  EXPECT_EQ(wait_value(json("5m")), (WaitLimit{true, std::chrono::seconds(300)}));
  EXPECT_EQ(milliseconds_value(json(0.25)), std::chrono::milliseconds(250));
  EXPECT_EQ(optional_int(json(nullptr)), std::nullopt);
  EXPECT_EQ(text_or_empty(json(nullptr)), "");
}

}  // namespace
}  // namespace gpurun
