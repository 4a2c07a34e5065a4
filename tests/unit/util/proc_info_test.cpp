// Unit tests for who runs a process, read from /proc.
#include "gpurun/util/proc_info.hpp"

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace gpurun {
namespace {

// The pid of a process that has come and gone.
long gone_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

TEST(ProcessUser, IsTheLoginNameOfTheRealUser) {
  const passwd* me = ::getpwuid(::getuid());
  const std::string expected = me != nullptr ? me->pw_name : "uid " + std::to_string(::getuid());
  EXPECT_EQ(process_user(::getpid()), expected);
}

TEST(ProcessCommand, IsTheCommandNameCutTo15Characters) { EXPECT_EQ(process_command(::getpid()), "gpurun_unit_tes"); }

TEST(ProcessInfo, AProcessThatIsGoneHasNoUserAndNoCommand) {
  const long pid = gone_pid();
  EXPECT_EQ(process_user(pid), std::nullopt);
  EXPECT_EQ(process_command(pid), "");
  EXPECT_EQ(process_user(-1), std::nullopt);
  EXPECT_EQ(process_command(-1), "");
}

}  // namespace
}  // namespace gpurun
