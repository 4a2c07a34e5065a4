// End-to-end: each launch and each refusal is one line in the system log, sent where
// GPURUN_SYSLOG_SOCKET points (a datagram socket this test listens on, as syslogd or journald
// listens on /dev/log).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "gpurun/engine/docker_command.hpp"
#include "gpurun_fixture.hpp"

namespace gpurun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

class AuditLogTest : public GpurunTest {
 protected:
  void SetUp() override {
    GpurunTest::SetUp();
    socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(socket_, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = socket_path();
    ASSERT_LT(path.size(), sizeof address.sun_path);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(socket_, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  }
  void TearDown() override {
    if (socket_ >= 0) ::close(socket_);
    GpurunTest::TearDown();
  }
  std::string socket_path() const { return dir() + "/log.sock"; }
  Env env(const std::string& scenario) const {
    Env e = fakes(scenario);
    e.emplace_back("GPURUN_SYSLOG_SOCKET", socket_path());
    return e;
  }
  // Every line sent so far.
  std::vector<std::string> lines() const {
    std::vector<std::string> got;
    char buffer[8192];
    for (ssize_t n; (n = ::recv(socket_, buffer, sizeof buffer, 0)) > 0;) got.emplace_back(buffer, buffer + n);
    return got;
  }

 private:
  int socket_ = -1;
};

TEST_F(AuditLogTest, ALaunchIsOneNoticeToLogUserNamingUserGpusImageAndCommand) {
  const Outcome run =
      gpurun({"--image", "me/torch:24.05", "--name", "job", "2", "--", "python", "train.py", "--lr", "0.1"},
             env("busy_dgx.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], StartsWith("<13>"));  // LOG_USER | LOG_NOTICE
  EXPECT_THAT(got[0], HasSubstr(" gpurun["));
  EXPECT_THAT(got[0], HasSubstr(fmt::format("]: launch user={} sudo=no gpus=2,5 name=job image=me/torch:24.05 "
                                            "command=python train.py --lr 0.1",
                                            current_identity().login)));
}

TEST_F(AuditLogTest, ADryRunIsNotLogged) {
  const Outcome run = gpurun({"--dry-run", "--image", "me/torch:24.05", "1", "--", "true"}, env("busy_dgx.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(lines(), IsEmpty());
}

TEST_F(AuditLogTest, ARefusalIsOneWarningWithTheReasonAndWhatWasAsked) {
  std::ofstream(system_config()) << R"({"refused_docker_options": ["--privileged"]})";
  const Outcome run =
      gpurun({"--image", "me/x", "--docker-opt", "--privileged", "1", "--", "sh", "-c", "echo \"hi\"; rm -rf /\n"},
             env("busy_dgx.json"));
  ASSERT_EQ(run.exit_code, 125);
  EXPECT_FALSE(docker_ran());
  const std::vector<std::string> got = lines();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(got[0], StartsWith("<12>"));  // LOG_USER | LOG_WARNING: not under sudo
  EXPECT_THAT(got[0], HasSubstr("]: refused user="));
  EXPECT_THAT(got[0], HasSubstr("gpus=1 reason=\"docker option \\\"--privileged\\\" (from flag --docker-opt) is "
                                "refused by the site policy"));
  // The caller's words arrive printable: the newline they typed is shown, never sent as a line break.
  EXPECT_THAT(got[0], HasSubstr("image=me/x command=sh -c 'echo \"hi\"; rm -rf /\\x0a'"));
  EXPECT_THAT(got[0], Not(HasSubstr("\n")));
}

TEST_F(AuditLogTest, AnErrorThatIsNoRefusalIsNotLogged) {
  const Outcome run = gpurun({"--image", "me/x", "9", "--", "true"}, env("busy_dgx.json"));
  ASSERT_EQ(run.exit_code, 125);
  EXPECT_THAT(lines(), IsEmpty());
}

TEST_F(AuditLogTest, NoListeningLogNeverFailsTheLaunch) {
  Env e = fakes("busy_dgx.json");
  e.emplace_back("GPURUN_SYSLOG_SOCKET", dir() + "/nobody-listens.sock");
  EXPECT_EQ(gpurun({"--image", "me/x", "1", "--", "true"}, e).exit_code, 0);
}

}  // namespace
}  // namespace gpurun::testing
