// Unit tests for the descriptor owner (gpurun/util/fd.hpp) and the argv conversion for exec and spawn.
#include "gpurun/util/fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpurun/util/exec.hpp"

namespace gpurun {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(Fd, ClosesWhatItOwnsWhenItGoes) {
  int raw = -1;
  {
    const Fd fd(open_null());
    raw = fd.get();
    ASSERT_TRUE(fd.valid());
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(Fd, AMoveHandsTheDescriptorOverAndLeavesNothingBehind) {
  Fd from(open_null());
  const int raw = from.get();
  Fd to(std::move(from));
  EXPECT_FALSE(from.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(to.get(), raw);
  Fd other(open_null());
  const int other_raw = other.get();
  other = std::move(to);  // closes what `other` held
  EXPECT_EQ(other.get(), raw);
  EXPECT_FALSE(is_open(other_raw));
  EXPECT_TRUE(is_open(raw));
}

TEST(Fd, ReleaseGivesUpWithoutClosingAndResetCloses) {
  Fd fd(open_null());
  const int raw = fd.release();
  EXPECT_FALSE(fd.valid());
  EXPECT_TRUE(is_open(raw));
  fd.reset(raw);
  fd.reset();
  EXPECT_FALSE(is_open(raw));
}

TEST(CArgv, PointsIntoTheStringsAndEndsWithNull) {
  const std::vector<std::string> argv{"docker", "run", ""};
  const std::vector<char*> c = c_argv(argv);
  ASSERT_EQ(c.size(), 4U);
  for (std::size_t i = 0; i < argv.size(); ++i) EXPECT_EQ(c[i], argv[i].c_str());
  EXPECT_EQ(c[3], nullptr);
  EXPECT_EQ(c_argv({}), std::vector<char*>{nullptr});
}

}  // namespace
}  // namespace gpurun
