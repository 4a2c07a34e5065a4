// Unit tests for the system log's lines (gpurun/config/audit_log.hpp) and their datagrams
// (gpurun/util/syslog.hpp).
#include "gpurun/config/audit_log.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpurun/config/options.hpp"
#include "gpurun/util/syslog.hpp"

namespace gpurun {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

Options alice_options() {
  Options o;
  Caller& alice = o.caller.emplace();
  alice.ids.uid = 1000;
  alice.ids.gid = 1000;
  alice.login = "alice";
  alice.home = "/home/alice";
  o.image = "me/torch:24.05";
  o.gpus = 2;
  o.command = {"python", "train.py", "--note", "two words"};
  return o;
}

TEST(AuditLog, ALaunchNamesTheCallerTheGpusTheNameTheImageAndTheCommand) {
  EXPECT_EQ(launch_log_line(alice_options(), "0,1", "gpurun-alice-1"),
            "launch user=alice sudo=yes gpus=0,1 name=gpurun-alice-1 image=me/torch:24.05 "
            "command=python train.py --note 'two words'");
}

// Under sudo what the container is given beside the GPUs: the mounts and docker options as typed,
// the variables by name alone (a value may be a token).
TEST(AuditLog, ALaunchNamesItsMountsDockerOptionsAndTheNamesOfItsVariables) {
  Options o = alice_options();
  o.volumes = {"/home/alice/data:/data:ro"};
  o.docker_opts = {"--shm-size=8g", "--ipc=host"};
  o.env = {"WANDB_API_KEY=secret", "EPOCHS=3"};
  const std::string line = launch_log_line(o, "0", "job");
  EXPECT_THAT(line, HasSubstr(" volumes=/home/alice/data:/data:ro docker_opts=\"--shm-size=8g --ipc=host\" "
                              "env=WANDB_API_KEY,EPOCHS image="));
  EXPECT_THAT(line, Not(HasSubstr("secret")));
}

TEST(AuditLog, ARefusalQuotesItsReason) {
  const Options o = alice_options();
  EXPECT_EQ(refusal_log_line(o, o.caller, "docker option \"--privileged\": no"),
            "refused user=alice sudo=yes gpus=2 reason=\"docker option \\\"--privileged\\\": no\" "
            "image=me/torch:24.05 command=python train.py --note 'two words'");
}

TEST(AuditLog, WhatTheCallerTypedArrivesPrintableOnOneLine) {
  Options o = alice_options();
  o.image = "evil\nrefused user=root";
  o.command = {"echo", "a\rb"};
  const std::string line = launch_log_line(o, "0", "x\ty");
  EXPECT_THAT(line, Not(HasSubstr("\n")));
  // Control characters become \xNN; a value with a backslash is quoted, the backslash doubled.
  EXPECT_THAT(line, HasSubstr("image=\"evil\\\\x0arefused user=root\""));
  EXPECT_THAT(line, HasSubstr("name=\"x\\\\x09y\""));
  EXPECT_THAT(line, EndsWith("command=echo 'a\\x0db'"));
}

TEST(Syslog, TheDatagramCarriesFacilityAndSeverityAsSyslog3Does) {
  EXPECT_THAT(syslog_datagram(LogFacility::user, LogSeverity::notice, "hi"), StartsWith("<13>"));
  EXPECT_THAT(syslog_datagram(LogFacility::user, LogSeverity::warning, "hi"), StartsWith("<12>"));
  EXPECT_THAT(syslog_datagram(LogFacility::authpriv, LogSeverity::warning, "hi"), StartsWith("<84>"));
  EXPECT_THAT(syslog_datagram(LogFacility::user, LogSeverity::info, "hi"),
              MatchesRegex("<14>[A-Z][a-z][a-z] [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] gpurun\\[[0-9]+\\]: hi"));
}

TEST(Syslog, AVeryLongMessageIsCut) {
  EXPECT_LT(syslog_datagram(LogFacility::user, LogSeverity::info, std::string(100'000, 'a')).size(), 2200u);
}

}  // namespace
}  // namespace gpurun
