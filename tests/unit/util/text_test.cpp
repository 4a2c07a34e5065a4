// Unit tests for gpurun::text: the string helpers under the parsers.
#include "gpurun/util/text.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <charconv>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun::text {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> strings(const std::vector<std::string_view>& views) { return {views.begin(), views.end()}; }

// Line numbers and texts, flattened so that a whole result compares in one assertion.
std::vector<std::pair<std::size_t, std::string>> numbered(const std::vector<Line>& lines) {
  std::vector<std::pair<std::size_t, std::string>> out;
  for (const Line& line : lines) out.emplace_back(line.number, std::string(line.text));
  return out;
}

TEST(Trim, RemovesAsciiWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f\v"), "x");
  EXPECT_EQ(trim("abc"), "abc");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t\r\n "), "");
}

TEST(ToLowerToUpper, ChangeAsciiLettersAndLeaveOtherBytes) {
  EXPECT_EQ(to_lower("Memory.Used [MiB]"), "memory.used [mib]");
  EXPECT_EQ(to_lower("\xc3\x89T\xc3\x89"), "\xc3\x89t\xc3\x89");  // UTF-8 bytes untouched
  EXPECT_EQ(to_upper("docker_opts cap_sys_admin"), "DOCKER_OPTS CAP_SYS_ADMIN");
  EXPECT_EQ(to_upper("\xc3\xa9t\xc3\xa9"), "\xc3\xa9T\xc3\xa9");  // UTF-8 bytes untouched
}

TEST(IgnoringCase, ComparesAsciiLettersAlikeAndOtherBytesExactly) {
  EXPECT_TRUE(equals_ignoring_case("N/A", "n/a"));
  EXPECT_TRUE(equals_ignoring_case("", ""));
  EXPECT_FALSE(equals_ignoring_case("n/a ", "n/a"));
  EXPECT_FALSE(equals_ignoring_case("\xc3\x89", "\xc3\xa9"));  // not UTF-8 aware: bytes differ
  EXPECT_FALSE(equals_ignoring_case("@", "`"));                // 'A' - 1 and 'a' - 1 stay apart
  EXPECT_TRUE(starts_with_ignoring_case("WARNING: infoROM is corrupted", "warning:"));
  EXPECT_TRUE(starts_with_ignoring_case("warning:", "warning:"));
  EXPECT_FALSE(starts_with_ignoring_case("warn", "warning:"));
  EXPECT_TRUE(starts_with_ignoring_case("anything", ""));
}

TEST(Split, KeepsEmptyFieldsAndNeverReturnsNothing) {
  EXPECT_THAT(strings(split("a, b,c", ',')), ElementsAre("a", " b", "c"));
  EXPECT_THAT(strings(split("a,,b", ',')), ElementsAre("a", "", "b"));
  EXPECT_THAT(strings(split("a,", ',')), ElementsAre("a", ""));
  EXPECT_THAT(strings(split(",", ',')), ElementsAre("", ""));
  EXPECT_THAT(strings(split("", ',')), ElementsAre(""));
  EXPECT_THAT(strings(split("no separator", ',')), ElementsAre("no separator"));
}

TEST(NonBlankLines, NumbersLinesFromOneAndSkipsBlankOnes) {
  EXPECT_THAT(numbered(non_blank_lines("\nfirst\n  \n\t\nsecond\nthird\n\n")),
              ElementsAre(std::pair{2u, "first"}, std::pair{5u, "second"}, std::pair{6u, "third"}));
}

TEST(NonBlankLines, StripsTheCarriageReturnOfCrlfLines) {
  EXPECT_THAT(numbered(non_blank_lines("a, b\r\n\r\nc\r\n")), ElementsAre(std::pair{1u, "a, b"}, std::pair{3u, "c"}));
}

TEST(NonBlankLines, KeepsTheLastLineWithoutNewlineAndInnerSpaces) {
  EXPECT_THAT(numbered(non_blank_lines("x\n  indented ")),
              ElementsAre(std::pair{1u, "x"}, std::pair{2u, "  indented "}));
}

TEST(NonBlankLines, EmptyOrBlankInputHasNoLines) {
  EXPECT_TRUE(non_blank_lines("").empty());
  EXPECT_TRUE(non_blank_lines("\n\r\n \n").empty());
}

TEST(ParseDouble, AcceptsWholeStringNumbers) {
  EXPECT_EQ(parse_double("0"), 0.0);
  EXPECT_EQ(parse_double("42"), 42.0);
  EXPECT_EQ(parse_double("-3.5"), -3.5);
  EXPECT_EQ(parse_double("61.20"), 61.2);
  EXPECT_EQ(parse_double("1e3"), 1000.0);
  EXPECT_EQ(parse_double("2.5E-1"), 0.25);
  EXPECT_EQ(parse_double("1e+2"), 100.0);
  EXPECT_EQ(parse_double(".5"), 0.5);
  EXPECT_EQ(parse_double("5."), 5.0);
  EXPECT_EQ(parse_double("-0"), 0.0);
}

TEST(ParseDouble, ReadsAsStdFromCharsDoes) {
  // Correctly rounded, as std::from_chars is: the nearest double to each text.
  for (const char* text : {"0.1", "2.2250738585072014e-308", "1.7976931348623157e308", "80.00000000000001",
                           "0.30000000000000004", "123456789012345678901234567890", "9007199254740993"}) {
    double expected = 0;
    std::from_chars(text, text + std::strlen(text), expected);
    EXPECT_EQ(parse_double(text), expected) << "input: \"" << text << "\"";
  }
}

TEST(ParseDouble, RejectsAnythingButExactlyOneFiniteNumber) {
  for (const char* bad : {"",   "inf",   "-inf", "infinity", "nan",   "NaN", "1x",    "x1",    "1 2",   " 1",
                          "1 ", "1e999", "0x10", ".",        "-",     "1,5", "[N/A]", "+1",    "1e",    "1e+",
                          "e5", "-.",    "1..2", "1.2.3",    "1e2.5", "\t1", "1\n",   "0x1p3", "1e-400"})
    EXPECT_EQ(parse_double(bad), std::nullopt) << "input: \"" << bad << "\"";
  EXPECT_EQ(parse_double(std::string_view("1\0", 2)), std::nullopt) << "a NUL after the number";
}

TEST(ParseInteger, AcceptsWholeStringIntegers) {
  EXPECT_EQ(parse_integer("0"), 0);
  EXPECT_EQ(parse_integer("3858903"), 3858903);
  EXPECT_EQ(parse_integer("-7"), -7);
  EXPECT_EQ(parse_integer("9223372036854775807"), 9223372036854775807LL);
}

TEST(ParseInteger, RejectsFractionsOverflowAndText) {
  for (const char* bad : {"", "inf", "nan", "1x", "1.5", "1e3", " 1", "1 ", "9223372036854775808", "two", "-"})
    EXPECT_EQ(parse_integer(bad), std::nullopt) << "input: \"" << bad << "\"";
}

struct SplitUnitCase {
  const char* input;
  const char* number;
  const char* unit;
};

void PrintTo(const SplitUnitCase& c, std::ostream* os) { *os << '"' << c.input << '"'; }

class SplitUnit : public ::testing::TestWithParam<SplitUnitCase> {};

TEST_P(SplitUnit, SeparatesTheNumberFromItsUnit) {
  const auto& c = GetParam();
  const NumberWithUnit result = split_unit(c.input);
  EXPECT_EQ(result.number, c.number);
  EXPECT_EQ(result.unit, c.unit);
}

INSTANTIATE_TEST_SUITE_P(Cases, SplitUnit,
                         ::testing::Values(SplitUnitCase{"1234 MiB", "1234", "MiB"}, SplitUnitCase{"45%", "45", "%"},
                                           SplitUnitCase{" 45 % ", "45", "%"}, SplitUnitCase{"61.20 W", "61.20", "W"},
                                           SplitUnitCase{"1234", "1234", ""}, SplitUnitCase{"2GiB", "2", "GiB"},
                                           SplitUnitCase{"1e3 MiB", "1e3", "MiB"},
                                           // An 'e' not followed by a digit or sign is the start of the unit.
                                           SplitUnitCase{"12e", "12", "e"}, SplitUnitCase{"5 em", "5", "em"},
                                           SplitUnitCase{"-1%", "-1", "%"}, SplitUnitCase{"MiB", "", "MiB"},
                                           SplitUnitCase{"[N/A]", "", "[N/A]"}, SplitUnitCase{"", "", ""}));

TEST(Printable, KeepsPrintableAsciiAsIs) { EXPECT_EQ(printable("GPU 3: 12 MiB, \"ok\""), "GPU 3: 12 MiB, \"ok\""); }

TEST(Printable, EscapesControlAndNonAsciiBytesAsHex) {
  EXPECT_EQ(printable("a\tb\nc\rd"), "a\\x09b\\x0ac\\x0dd");
  EXPECT_EQ(printable(std::string_view("\x00\x1b\x7f", 3)), "\\x00\\x1b\\x7f");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\\xc3\\xa9");
}

TEST(TerminalSafe, KeepsUtf8AndEscapesControlsC1AndBytesThatAreNotUtf8) {
  EXPECT_EQ(terminal_safe("Jos\xc3\xa9 \xe6\x9d\x8e GPU-3"), "Jos\xc3\xa9 \xe6\x9d\x8e GPU-3");  // kept whole
  EXPECT_EQ(terminal_safe("al\x1b[31mice\a\n"), "al\\x1b[31mice\\x07\\x0a");
  EXPECT_EQ(terminal_safe("x\xc2\x9b"
                          "2Jy"),
            "x\\xc2\\x9b2Jy");  // C1 CSI, which some terminals obey
  EXPECT_EQ(terminal_safe("\xff\xc3(\xed\xa0\x80\xe2\x82"), "\\xff\\xc3(\\xed\\xa0\\x80\\xe2\\x82");
  EXPECT_EQ(terminal_safe("a\x7f"), "a\\x7f");
  // Invisible, yet they turn the rest of a table row around or hide a difference between names.
  EXPECT_EQ(terminal_safe("job\xe2\x80\xae"
                          "gnp.exe"),
            "job\\xe2\\x80\\xaegnp.exe");  // U+202E
  EXPECT_EQ(terminal_safe("ali\xe2\x80\x8b"
                          "ce"),
            "ali\\xe2\\x80\\x8bce");  // U+200B
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6"
                          "x\xe2\x81\xa9\xef\xbb\xbf"),
            "\\xe2\\x81\\xa6x\\xe2\\x81\\xa9\\xef\\xbb\\xbf");  // U+2066, U+2069, U+FEFF
  EXPECT_EQ(terminal_safe("a\xc2\xad"
                          "b\xf3\xa0\x80\x81"),
            "a\\xc2\\xadb\\xf3\\xa0\\x80\\x81");                                       // U+00AD, U+E0001
  EXPECT_EQ(terminal_safe("\xe2\x9d\xa4\xef\xb8\x8f"), "\xe2\x9d\xa4\xef\xb8\x8f");    // an emoji's selector stays
  EXPECT_EQ(terminal_safe("\xe2\x80\x94 \xe2\x80\x99"), "\xe2\x80\x94 \xe2\x80\x99");  // a dash, an apostrophe: kept
}

TEST(Printable, TruncatesLongInputWithAnEllipsis) {
  const std::string long_input(100, 'x');
  EXPECT_EQ(printable(long_input), std::string(60, 'x') + "...");
  EXPECT_EQ(printable("abcdefgh", 5), "abcde...");
  EXPECT_EQ(printable("abcde", 5), "abcde");  // exactly the limit: nothing cut
}

TEST(Percent, EncodesAllButUnreservedAndDecodesBack) {
  EXPECT_EQ(percent_encode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(percent_encode("ann marie/&=?%\xff"), "ann%20marie%2F%26%3D%3F%25%FF");
  EXPECT_EQ(percent_decode("ann%20marie%2f%26+x"), "ann marie/& x");
  EXPECT_EQ(percent_decode("/v1/runs/a+b%20c", UrlPart::path), "/v1/runs/a+b c");
  EXPECT_EQ(percent_decode(percent_encode("any \x01 byte\xc3\xa9")), "any \x01 byte\xc3\xa9");
  EXPECT_FALSE(percent_decode("%"));
  EXPECT_FALSE(percent_decode("%4"));
  EXPECT_FALSE(percent_decode("%zz"));
}

// A table's names keep their script, and are cut between characters.
TEST(TerminalSafeCut, KeepsUtf8EscapesControlsAndCutsBetweenCharacters) {
  EXPECT_EQ(text::terminal_safe_cut("jos\xc3\xa9", 32), "jos\xc3\xa9");
  EXPECT_EQ(text::terminal_safe_cut("a\x1b[2Jb", 32), "a\\x1b[2Jb");
  EXPECT_EQ(text::terminal_safe_cut("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9...");
  EXPECT_EQ(text::terminal_safe_cut("abc", 3), "abc");
}

}  // namespace
}  // namespace gpurun::text
