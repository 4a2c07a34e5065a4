// Unit tests for the system log's lines (gpurun/config/audit_log.hpp) and their datagrams
// (gpurun/util/syslog.hpp).
#include "gpurun/config/audit_log.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "gpurun/config/options.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/syslog.hpp"
#include "support/test_support.hpp"

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
  o.docker_opts = {"--shm-size=8g", "--ipc=host", "--env=HF_TOKEN=hf_secret", "-e", "OTHER=secret2"};
  o.env = {"WANDB_API_KEY=secret", "EPOCHS=3"};
  const std::string line = launch_log_line(o, "0", "job");
  EXPECT_THAT(line, HasSubstr(" volumes=/home/alice/data:/data:ro docker_opts=\"--shm-size=8g --ipc=host "
                              "--env=HF_TOKEN --env=OTHER\" env=WANDB_API_KEY,EPOCHS image="));
  EXPECT_THAT(line, Not(HasSubstr("secret")));
  // A long first mount cannot push the docker options out of the record.
  o.volumes = {std::string(5000, 'x') + ":/x"};
  EXPECT_THAT(launch_log_line(o, "0", "job"), HasSubstr("docker_opts=\"--shm-size=8g --ipc=host"));
}

TEST(AuditLog, ARefusalQuotesItsReason) {
  const Options o = alice_options();
  EXPECT_EQ(refusal_log_line(o, o.caller, "docker option \"--privileged\": no"),
            "refused user=alice sudo=yes gpus=2 reason=\"docker option \\\"--privileged\\\": no\" "
            "image=me/torch:24.05 command=python train.py --note 'two words'");
}

TEST(AuditLog, ARefusalOfAForgedSudoUidNamesWhomItClaimed) {
  // SUDO_UID set on sudo's command line is refused before the caller is known: still on record.
  const std::string line = sudo_id_refusal_log_line(0, "SUDO_UID 0 is not who ran sudo (uid 1000)");
  EXPECT_THAT(line, HasSubstr(" sudo=refused SUDO_UID=0 reason=\"SUDO_UID 0 is not who ran sudo (uid 1000)\""));
  EXPECT_THAT(refusal_log_line(Options{}, std::nullopt, "x"), HasSubstr(" sudo=no "));  // root's own
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

// Some syslog-ng setups listen on a stream socket: connecting a datagram one fails (EPROTOTYPE),
// and every sudo launch was refused as unrecorded. As syslog(3), it is sent over a stream then,
// ended by a NUL; no socket at all is no log.
TEST(Syslog, ALogListeningOnAStreamSocketIsSentToAndNoSocketIsNoLog) {
  const test::TempDir dir;
  const std::string path = dir / "log";
  const Fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  ::setenv("GPURUN_SYSLOG_SOCKET", path.c_str(), 1);
  EXPECT_EQ(send_to_syslog(LogFacility::user, LogSeverity::notice, "over a stream"), SyslogSent::sent);
  const Fd accepted(::accept(listener.get(), nullptr, nullptr));
  char got[256] = {};
  ASSERT_GT(::read(accepted.get(), got, sizeof got - 1), 0);
  EXPECT_THAT(std::string(got), EndsWith("gpurun[" + std::to_string(::getpid()) + "]: over a stream"));
  ::setenv("GPURUN_SYSLOG_SOCKET", (dir / "none").c_str(), 1);
  EXPECT_EQ(send_to_syslog(LogFacility::user, LogSeverity::notice, "to nobody"), SyslogSent::no_log);
  ::unsetenv("GPURUN_SYSLOG_SOCKET");
}

TEST(Syslog, AVeryLongMessageIsCut) {
  EXPECT_LT(syslog_datagram(LogFacility::user, LogSeverity::info, std::string(100'000, 'a')).size(), 2200u);
}

}  // namespace
}  // namespace gpurun
