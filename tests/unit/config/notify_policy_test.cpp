// Unit tests for the notify object (gpurun/config/notify_policy.hpp): what it reads, its default
// events, and a message naming the key and what to write for anything else.
#include "gpurun/config/notify_policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpurun {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

TEST(ReadNotifyPolicy, ReadsEveryKey) {
  const NotifyPolicyRead read = read_notify_policy(json::parse(
      R"({"webhook": "https://chat.example.org/hooks/abc", "mail": true, "mail_domain": "lab.example.org",
          "sendmail": "/usr/lib/sendmail", "events": ["run_ended", "idle_stopped"]})"));
  ASSERT_FALSE(read.problem);
  EXPECT_EQ(read.policy.webhook, "https://chat.example.org/hooks/abc");
  EXPECT_TRUE(read.policy.mail);
  EXPECT_EQ(read.policy.mail_domain, "lab.example.org");
  EXPECT_EQ(read.policy.sendmail, "/usr/lib/sendmail");
  EXPECT_EQ(read.policy.events, (std::vector<std::string>{"run_ended", "idle_stopped"}));
  EXPECT_TRUE(read.policy.wants("run_ended"));
  EXPECT_FALSE(read.policy.wants("idle_warning"));
}

TEST(ReadNotifyPolicy, DefaultsToTheFourPolicyEventsWithoutRunEnded) {
  const NotifyPolicyRead read = read_notify_policy(json::parse(R"({"mail": true})"));
  ASSERT_FALSE(read.problem);
  EXPECT_EQ(read.policy.sendmail, "/usr/sbin/sendmail");
  for (const char* event : {"idle_warning", "idle_stopped", "time_warning", "time_limit_stopped"})
    EXPECT_TRUE(read.policy.wants(event)) << event;
  EXPECT_FALSE(read.policy.wants("run_ended"));
}

TEST(ReadNotifyPolicy, NamesTheKeyAndWhatToWriteForAnythingElse) {
  const std::vector<std::pair<const char*, std::pair<const char*, const char*>>> cases{
      {R"("https://x")", {"", "expected an object"}},
      {R"({"webhook": "ftp://x/y"})", {"webhook", "http:// or https://"}},
      {R"({"webhook": "https://x/a b"})", {"webhook", "http:// or https://"}},
      {R"({"webhook": "https://"})", {"webhook", "http:// or https://"}},
      {R"({"mail": "yes"})", {"mail", "true or false"}},
      {R"({"mail": true, "mail_domain": "lab example"})", {"mail_domain", "a domain name"}},
      {R"({"mail": true, "mail_domain": "a\nBcc: x@y"})", {"mail_domain", "a domain name"}},
      {R"({"mail": true, "sendmail": "sendmail"})", {"sendmail", "absolute path"}},
      {R"({"mail": true, "events": ["idle_warnings"]})", {"events", "did you mean \"idle_warning\""}},
      {R"({"mail": true, "events": "run_ended"})", {"events", "a list of events"}},
      {R"({"mail": true, "webhok": "https://x"})", {"webhok", "did you mean \"webhook\""}},
      {R"({"mail": false})", {"", "a webhook or \"mail\": true"}},
      // Each was accepted, and failed (or notified nothing) only when a job ended.
      {R"({"webhook": "https:///hooks/abc"})", {"webhook", "http:// or https://"}},
      {R"({"mail": true, "sendmail": "/usr/sbin/sendmail -oi"})", {"sendmail", "alone, no arguments"}},
      {R"({"mail": true, "events": []})", {"events", "an empty list notifies nothing"}},
      {R"({"mail": true, "mail_domain": "a..b"})", {"mail_domain", "a domain name"}},
      {R"({"mail": true, "mail_domain": "lab.example.org."})", {"mail_domain", "a domain name"}},
  };
  for (const auto& [text, expected] : cases) {
    const NotifyPolicyRead read = read_notify_policy(json::parse(text));
    ASSERT_TRUE(read.problem) << text;
    EXPECT_EQ(read.problem->first, expected.first) << text;
    EXPECT_THAT(read.problem->second, HasSubstr(expected.second)) << text;
  }
}

}  // namespace
}  // namespace gpurun
