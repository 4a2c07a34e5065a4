// Unit tests for finding and exec'ing the job's program: exit 127 when it is missing, 126 when it
// cannot be executed, and no /bin/sh fallback for files that are not programs.
#include "gpurun/util/exec.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

namespace fs = std::filesystem;

// Runs exec_program(argv) in a forked child; its exit status, or the exit code of the Error it threw.
int exec_in_child(const std::vector<std::string>& argv) {
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      exec_program(argv);
    } catch (const Error& e) {
      ::_exit(e.exit_code());
    }
    ::_exit(99);  // unreachable: exec_program returns only by throwing
  }
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class Exec : public ::testing::Test {
 protected:
  test::TempDir dir_{"gpurun-exec"};
  std::string program_ = test::write_script(dir_ / "bin/prog", "exit 7");
  std::string not_executable_ = test::write_file(dir_ / "other/prog", "#!/bin/sh\nexit 7\n");
};

TEST_F(Exec, FindProgramTakesAPathWithASlashAsItIs) {
  int error = 0;
  EXPECT_EQ(find_program(program_, error), program_);
  EXPECT_EQ(find_program(not_executable_, error), "");
  EXPECT_EQ(error, EACCES);
  EXPECT_EQ(find_program(dir_ / "bin/missing", error), "");
  EXPECT_EQ(error, ENOENT);
  EXPECT_EQ(find_program(dir_ / "bin", error), "");  // a directory is no program
  EXPECT_EQ(error, EACCES);
  EXPECT_EQ(find_program("", error), "");
  EXPECT_EQ(error, ENOENT);
}

TEST_F(Exec, FindProgramSearchesPathSkippingFilesThatCannotRun) {
  int error = 0;
  {
    const test::EnvGuard path("PATH", (dir_ / "other") + ":" + (dir_ / "bin"));
    EXPECT_EQ(find_program("prog", error), program_);
  }
  {
    const test::EnvGuard path("PATH", dir_ / "other");
    EXPECT_EQ(find_program("prog", error), "");
    EXPECT_EQ(error, EACCES);
  }
}

TEST_F(Exec, LocateProgramSaysWhatToDoWith127ForMissingAnd126ForNotExecutable) {
  const test::EnvGuard path("PATH", dir_ / "bin");
  auto e = test::caught_error([] { locate_program("gpurun-no-such-program"); });
  EXPECT_EQ(e.exit_code, 127);
  EXPECT_EQ(e.message,
            "gpurun-no-such-program not found on PATH: install docker (Debian: apt-get install docker.io), "
            "or pass --docker PATH or set GPURUN_DOCKER");
  e = test::caught_error([&] { locate_program(dir_ / "bin/missing"); });
  EXPECT_EQ(e.exit_code, 127);
  EXPECT_EQ(e.message, (dir_ / "bin/missing") +
                           " not found: install docker (Debian: apt-get install docker.io), "
                           "or pass --docker PATH or set GPURUN_DOCKER");
  e = test::caught_error([&] { locate_program(not_executable_); });
  EXPECT_EQ(e.exit_code, 126);
  EXPECT_EQ(e.message, "cannot execute " + not_executable_ + ": Permission denied");
}

TEST_F(Exec, ExecProgramFailsWithoutExecingWhenItCannot) {
  EXPECT_EQ(test::caught_error([] { exec_program({}); }).message, "nothing to execute");
  EXPECT_EQ(test::caught_error([&] { exec_program({dir_ / "bin/missing"}); }).exit_code, 127);
  EXPECT_EQ(test::caught_error([&] { exec_program({not_executable_, "x"}); }).exit_code, 126);
}

TEST_F(Exec, ExecProgramReplacesTheProcessWithTheProgramAndItsArguments) {
  EXPECT_EQ(exec_in_child({program_}), 7);
  EXPECT_EQ(exec_in_child({"/bin/sh", "-c", "exit \"$0\"", "5"}), 5);
}

TEST_F(Exec, AnExecutableFileThatIsNoProgramIsNotRunThroughTheShell) {
  const std::string plain = test::write_file(dir_ / "bin/plain", "exit 7\n");  // no #! line
  fs::permissions(plain, fs::perms::owner_all);
  EXPECT_EQ(exec_in_child({plain}), exit_code::cannot_execute);
}

}  // namespace
}  // namespace gpurun
