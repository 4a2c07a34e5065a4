// Unit tests for what a terminal allows: colour (NO_COLOR, TERM=dumb, not a terminal) and width.
#include "gpurun/util/terminal.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace gpurun {
namespace {

// Sets (or unsets) an environment variable for one test, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A pseudo-terminal's far end: a terminal for isatty().
class Pty {
 public:
  Pty() : fd_(::posix_openpt(O_RDWR | O_NOCTTY)) {}
  ~Pty() {
    if (fd_ >= 0) ::close(fd_);
  }
  Pty(const Pty&) = delete;
  Pty& operator=(const Pty&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

TEST(ColourWanted, OnlyOnATerminalAndNeverWithNoColour) {
  const Pty pty;
  ASSERT_GE(pty.fd(), 0);
  const ScopedEnv term("TERM", "xterm");
  {
    const ScopedEnv no_colour("NO_COLOR", nullptr);
    EXPECT_TRUE(colour_wanted(pty.fd()));
    int ends[2];
    ASSERT_EQ(::pipe(ends), 0);
    EXPECT_FALSE(colour_wanted(ends[1]));
    ::close(ends[0]);
    ::close(ends[1]);
  }
  {
    const ScopedEnv no_colour("NO_COLOR", "1");
    EXPECT_FALSE(colour_wanted(pty.fd()));
  }
  {
    const ScopedEnv no_colour("NO_COLOR", "");  // set but empty: no-color.org says colour stays
    EXPECT_TRUE(colour_wanted(pty.fd()));
  }
  const ScopedEnv dumb("TERM", "dumb");
  EXPECT_FALSE(colour_wanted(pty.fd()));
}

TEST(TerminalWidth, ColumnsFirstAndNeverFewerThanEighty) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);  // not a terminal: no size to ask
  {
    const ScopedEnv columns("COLUMNS", "132");
    EXPECT_EQ(terminal_width(ends[1]), 132u);
  }
  {
    const ScopedEnv columns("COLUMNS", "40");
    EXPECT_EQ(terminal_width(ends[1]), 80u);
  }
  {
    const ScopedEnv columns("COLUMNS", "wide");
    EXPECT_EQ(terminal_width(ends[1]), 80u);
  }
  ::close(ends[0]);
  ::close(ends[1]);
}

// Piped to a file or grep: no width to fit, so that history's names come whole; $COLUMNS still
// asks for one.
TEST(WidthToFit, NoneWhenPipedUnlessColumnsSaysSo) {
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  {
    const ScopedEnv columns("COLUMNS", nullptr);
    EXPECT_EQ(width_to_fit(ends[1]), std::nullopt);
  }
  {
    const ScopedEnv columns("COLUMNS", "100");
    EXPECT_EQ(width_to_fit(ends[1]), 100u);
  }
  ::close(ends[0]);
  ::close(ends[1]);
}

TEST(Coloured, WrapsInAnSgrSequenceOnlyWhenOn) {
  EXPECT_EQ(coloured("free", Colour::green, true), "\033[32mfree\033[0m");
  EXPECT_EQ(coloured("free", Colour::green, false), "free");
  EXPECT_EQ(coloured("error", Colour::bold_red, true), "\033[1;31merror\033[0m");
}

}  // namespace
}  // namespace gpurun
