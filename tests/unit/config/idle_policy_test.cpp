// Unit tests for the idle policy's object (gpurun/config/idle_policy.hpp): what it reads, and a
// message naming the key and what to write for anything else.
#include "gpurun/config/idle_policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using json = nlohmann::json;

TEST(ReadIdlePolicy, ReadsEveryKey) {
  const IdlePolicyRead read = read_idle_policy(json::parse(
      R"({"below": "10%", "warn_after": "1h", "stop_after": "2h", "scope": "all", "exempt_users": ["alice"],
          "dry_run": true})"));
  ASSERT_FALSE(read.problem);
  EXPECT_DOUBLE_EQ(read.policy.below_percent, 10);
  EXPECT_EQ(read.policy.warn_after, 3600s);
  EXPECT_EQ(read.policy.stop_after, 7200s);
  EXPECT_EQ(read.policy.scope, IdleScope::all);
  EXPECT_EQ(read.policy.exempt_users, std::vector<std::string>{"alice"});
  EXPECT_TRUE(read.policy.dry_run);
}

TEST(ReadIdlePolicy, DefaultsToFivePercentAndGpurunsOwnContainersAndTakesSecondsAsNumbers) {
  const IdlePolicyRead read = read_idle_policy(json::parse(R"({"stop_after": 90, "below": 2})"));
  ASSERT_FALSE(read.problem);
  EXPECT_DOUBLE_EQ(read.policy.below_percent, 2);
  EXPECT_FALSE(read.policy.warn_after);
  EXPECT_EQ(read.policy.stop_after, 90s);
  EXPECT_EQ(read.policy.scope, IdleScope::gpurun);
  EXPECT_DOUBLE_EQ(read_idle_policy(json::parse(R"({"warn_after": "30m"})")).policy.below_percent, 5);
}

TEST(ReadIdlePolicy, NamesTheKeyAndWhatToWriteForAnythingElse) {
  const std::vector<std::pair<const char*, const char*>> cases{
      {R"("2h")", "expected an object"},
      {R"({"below": "5%"})", "needs warn_after or stop_after"},
      {R"({"below": "150%", "stop_after": "1h"})", "0% to 99%"},
      {R"({"below": "100%", "stop_after": "1h"})", "every GPU would be idle"},
      {R"({"stop_after": "1h", "exempt_users": ["alice "]})", "no spaces"},
      {R"({"stop_after": "1h", "exempt_users": ["root:x"]})", "no ':'"},
      {R"({"stop_after": "1h", "exempt_containers": "dcgm-exporter"})", "shell patterns allowed"},
      {R"({"stop_after": "1h", "exempt_containers": [""]})", "shell patterns allowed"},
      {R"({"stop_after": "soon"})", "\"2h\""},
      {R"({"stop_after": 0})", "at least 1 s"},
      {R"({"warn_after": "2h", "stop_after": "1h"})", "before stop_after"},
      {R"({"stop_after": "1h", "scope": "everyone"})", "\"all\""},
      {R"({"stop_after": "1h", "exempt_users": "alice"})", "list of login names"},
      {R"({"stop_after": "1h", "dry_run": "yes"})", "true or false"},
      {R"({"stop_afer": "1h"})", "did you mean \"stop_after\""},
  };
  for (const auto& [text, expected] : cases) {
    const IdlePolicyRead read = read_idle_policy(json::parse(text));
    ASSERT_TRUE(read.problem) << text;
    EXPECT_THAT(read.problem->second, HasSubstr(expected)) << text;
  }
  EXPECT_EQ(read_idle_policy(json::parse(R"({"stop_after": "1h", "scope": 3})")).problem->first, "scope");
}

}  // namespace
}  // namespace gpurun
