// Unit tests for shell_quote / shell_join. The property that matters: pasting the printed line
// into a POSIX shell runs exactly the same argv. It is checked by running /bin/sh on the line.
#include "gpurun/util/shell_quote.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "gpurun/util/process.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using Argv = std::vector<std::string>;

// Splits printf '%s\0' output back into words.
Argv split_nul(const std::string& out) {
  Argv words;
  std::size_t start = 0;
  for (std::size_t end; (end = out.find('\0', start)) != std::string::npos; start = end + 1)
    words.push_back(out.substr(start, end - start));
  EXPECT_EQ(start, out.size()) << "output does not end with NUL";
  return words;
}

// What /bin/sh runs when given `line`: the words printf receives, NUL-separated.
ProcessResult run_shell(const std::string& line, std::vector<std::pair<std::string, std::string>> env = {}) {
  return run_process({{"/bin/sh", "-c", line}, std::move(env)}, 5s);
}

struct QuoteCase {
  const char* word;
  const char* quoted;
};

void PrintTo(const QuoteCase& c, std::ostream* os) { *os << '[' << c.word << ']'; }

class ShellQuote : public ::testing::TestWithParam<QuoteCase> {};

TEST_P(ShellQuote, QuotesOnlyWhatTheShellWouldChange) { EXPECT_EQ(shell_quote(GetParam().word), GetParam().quoted); }

INSTANTIATE_TEST_SUITE_P(SafeWordsStayBare, ShellQuote,
                         ::testing::Values(QuoteCase{"python", "python"}, QuoteCase{"train.py", "train.py"},
                                           QuoteCase{"--lr", "--lr"}, QuoteCase{"0.1", "0.1"},
                                           QuoteCase{"/home/a/proj", "/home/a/proj"},
                                           QuoteCase{"--volume=/a:/b", "--volume=/a:/b"},
                                           QuoteCase{"user@host", "user@host"}, QuoteCase{"50%", "50%"},
                                           QuoteCase{"a,b", "a,b"}, QuoteCase{"+x", "+x"},
                                           QuoteCase{"A_b-9", "A_b-9"}));

INSTANTIATE_TEST_SUITE_P(OtherWordsAreSingleQuoted, ShellQuote,
                         ::testing::Values(QuoteCase{"", "''"}, QuoteCase{"two words", "'two words'"},
                                           QuoteCase{"$HOME", "'$HOME'"}, QuoteCase{"`id`", "'`id`'"},
                                           QuoteCase{"say \"hi\"", "'say \"hi\"'"}, QuoteCase{"it's", "'it'\\''s'"},
                                           QuoteCase{"'", "''\\'''"}, QuoteCase{"*", "'*'"}, QuoteCase{"a;b", "'a;b'"},
                                           QuoteCase{"a\nb", "'a\nb'"}, QuoteCase{"~", "'~'"}, QuoteCase{"#x", "'#x'"},
                                           QuoteCase{"a\\b", "'a\\b'"}, QuoteCase{"{a,b}", "'{a,b}'"},
                                           QuoteCase{"!x", "'!x'"}, QuoteCase{"a\tb", "'a\tb'"},
                                           QuoteCase{"x&", "'x&'"}, QuoteCase{"\"device=3,6\"", "'\"device=3,6\"'"}));

TEST(ShellJoin, JoinsQuotedWordsWithSingleSpaces) {
  EXPECT_EQ(shell_join({"docker", "run", "--gpus", "\"device=3,6\"", "--name", "x y", "img", ""}),
            "docker run --gpus '\"device=3,6\"' --name 'x y' img ''");
  EXPECT_EQ(shell_join({}), "");
  EXPECT_EQ(shell_join({""}), "''");
}

TEST(ShellJoin, FirstWordWithEqualsIsQuotedOthersNeedNotBe) {
  // Unquoted, `A=1 cmd` would set a variable instead of running the program "A=1".
  EXPECT_EQ(shell_join({"A=1", "B=2"}), "'A=1' B=2");
  EXPECT_EQ(shell_join({"env", "A=1"}), "env A=1");
}

const std::vector<Argv>& nasty_argvs() {
  static const std::vector<Argv> argvs{
      {"plain"},
      {""},
      {"", "", "x", ""},
      {"two words", "  leading and trailing  "},
      {"$HOME", "${PATH}", "$(id)", "`id`", "$", "$1", "$@"},
      {"'", "''", "it's", "\"", "\\", "\\'", "'\\''", "\"'\"'"},
      {"*", "?", "[a]", "~", "~root", "#comment", "a#b", "a b#c"},
      {";", "&&", "|", ">", "<", "2>&1", "&", "(", ")", "a|b"},
      {"line1\nline2", "\t", " ", "\r", "trailing newline\n"},
      {"!", "!!", "^", "%", "{a,b}", "a=b", "--opt=val with space", "-n", "-e", "--"},
      {"\xc3\xa9t\xc3\xa9", "\x01\x02\x1b[31m\x7f", "\xff"},
      {"python", "train.py", "--lr", "0.1", "--note", "it's \"done\" $now"},
  };
  return argvs;
}

TEST(ShellJoin, RoundTripsThroughShWordForWord) {
  for (const Argv& argv : nasty_argvs()) {
    const std::string line = "printf '%s\\0' " + shell_join(argv);
    SCOPED_TRACE("line: " + line);
    const ProcessResult result = run_shell(line);
    ASSERT_EQ(result.end, ProcessResult::End::exited) << result.err;
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(split_nul(result.out), argv);
  }
}

TEST(ShellJoin, RoundTripsWhenTheFirstWordHoldsEquals) {
  // A program literally named "run=me" must be run, not taken for an assignment.
  const test::TempDir dir("gpurun-shell-quote");
  test::write_script(dir / "run=me", "printf '%s\\0' \"$@\"");

  const Argv args{"x=1", "two words", "it's"};
  Argv argv{"run=me"};
  argv.insert(argv.end(), args.begin(), args.end());
  const char* path = std::getenv("PATH");
  const ProcessResult result =
      run_shell(shell_join(argv), {{"PATH", dir.str() + ":" + (path ? path : "/usr/bin:/bin")}});

  ASSERT_EQ(result.end, ProcessResult::End::exited) << result.err;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(split_nul(result.out), args);
}

}  // namespace
}  // namespace gpurun
