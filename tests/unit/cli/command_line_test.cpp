// Unit tests for the CLI splitter: `gpurun [options] [VERB] [options] [N] [--] [COMMAND ARGS...]`.
#include "command_line.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using Args = std::vector<std::string>;
constexpr std::nullopt_t N = std::nullopt;  // no N on the command line

bool takes_value(std::string_view option) {
  return option == "--image" || option == "-e" || option == "--env" || option == "--name";
}
bool is_verb(std::string_view word) { return word == "pick" || word == "status"; }

CommandLine split(const Args& args) { return split_command_line(args, takes_value, is_verb); }

struct SplitCase {
  const char* what;
  Args args;
  Args options;
  std::string verb;
  std::optional<std::string> count;
  Args command;
};

void PrintTo(const SplitCase& c, std::ostream* os) { *os << c.what; }

class SplitCommandLine : public ::testing::TestWithParam<SplitCase> {};

TEST_P(SplitCommandLine, SeparatesOptionsVerbCountAndCommand) {
  const SplitCase& c = GetParam();
  const CommandLine line = split(c.args);
  EXPECT_EQ(line.options, c.options);
  EXPECT_EQ(line.verb, c.verb);
  EXPECT_EQ(line.count, c.count);
  EXPECT_EQ(line.command, c.command);
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    Cases, SplitCommandLine,
    ::testing::Values(
        //        name                               args                                        options                    verb   count  command
        SplitCase{"JobFlagsReachTheJob",             {"2", "python", "train.py", "--lr", "0.1"}, {},                        "",    "2",   {"python", "train.py", "--lr", "0.1"}},
        SplitCase{"OptionsBeforeN",                  {"--dry-run", "--image", "img", "2", "python"}, {"--dry-run", "--image", "img"}, "", "2", {"python"}},
        SplitCase{"OptionsBetweenNAndCommand",       {"2", "--dry-run", "python", "--dry-run"},  {"--dry-run"},             "",    "2",   {"python", "--dry-run"}},
        SplitCase{"DoubleDashEndsOptions",           {"--image", "X", "2", "--", "python", "-c", "1"}, {"--image", "X"},    "",    "2",   {"python", "-c", "1"}},
        SplitCase{"DoubleDashWithoutCount",          {"--", "python", "x"},                      {},                        "",    N,     {"python", "x"}},
        SplitCase{"DoubleDashKeepsLaterDoubleDashes", {"1", "--", "a", "--", "b"},               {},                        "",    "1",   {"a", "--", "b"}},
        SplitCase{"NothingAtAll",                    {},                                         {},                        "",    N,     {}},
        SplitCase{"OnlyOptions",                     {"--dry-run", "--image", "x"},              {"--dry-run", "--image", "x"}, "", N,    {}},
        SplitCase{"CountOnly",                       {"4"},                                      {},                        "",    "4",   {}},
        SplitCase{"VerbWithOptionAndCount",          {"pick", "--allow-busy", "2"},              {"--allow-busy"},          "pick", "2",  {}},
        SplitCase{"OptionsVerbOptionsCount",         {"--max-util", "--image", "i", "pick", "-e", "A=1", "3"},
                                                     {"--max-util", "--image", "i", "-e", "A=1"},                           "pick", "3",  {}},
        SplitCase{"VerbAlone",                       {"status", "--json"},                       {"--json"},                "status", N,  {}},
        SplitCase{"VerbAfterCountIsTheCommand",      {"1", "status"},                            {},                        "",    "1",   {"status"}},
        SplitCase{"ShortOptionConsumesItsValue",     {"-e", "FOO=1", "--env", "-x", "2", "cmd"}, {"-e", "FOO=1", "--env", "-x"}, "", "2", {"cmd"}},
        SplitCase{"OptionValueLookingLikeACountIsAValue", {"--name", "7", "2", "cmd"},           {"--name", "7"},           "",    "2",   {"cmd"}},
        SplitCase{"AttachedShortValueDoesNotConsume", {"-eFOO=1", "2", "cmd"},                   {"-eFOO=1"},               "",    "2",   {"cmd"}},
        SplitCase{"AShortOptionsEqualsIsNoPartOfItsValue", {"-e=FOO=1", "-q=x", "-qe=A=1", "-eB=1", "2", "cmd"}, {"-eFOO=1", "-q=x", "-qeA=1", "-eB=1"}, "", "2", {"cmd"}},
        SplitCase{"LongOptionWithEqualsDoesNotConsume", {"--image=x", "2", "cmd"},               {"--image=x"},             "",    "2",   {"cmd"}},
        SplitCase{"FlagClusterDoesNotConsume",       {"-qq", "2", "cmd"},                        {"-qq"},                   "",    "2",   {"cmd"}},
        SplitCase{"ClusterEndingInAValueOptionConsumes", {"-qe", "A=1", "2"},                    {"-qe", "A=1"},            "",    "2",   {}},
        SplitCase{"UnknownOptionsAreFlags",          {"--frobnicate", "2", "cmd"},               {"--frobnicate"},          "",    "2",   {"cmd"}},
        SplitCase{"ValueOptionAtTheEndTakesNothing", {"--image"},                                {"--image"},               "",    N,     {}},
        SplitCase{"NegativeNumberIsTheCount",        {"-3", "cmd"},                              {},                        "",    "-3",  {"cmd"}},
        SplitCase{"LoneDashIsAWord",                 {"-", "cmd"},                               {},                        "",    "-",   {"cmd"}},
        SplitCase{"WordsAfterTheCommandAreUntouched", {"1", "bash", "-c", "echo $HOME", "--", "-e"}, {},                    "",    "1",   {"bash", "-c", "echo $HOME", "--", "-e"}}),
    [](const auto& param_info) { return std::string(param_info.param.what); });
// clang-format on

TEST(SplitCommandLine, LongOptionWithEqualsNeverConsumesTheNextWord) {
  // Even when takes_value is asked about the whole word and says yes.
  const auto greedy = [](std::string_view option) { return option.starts_with("--image"); };
  const CommandLine line = split_command_line({"--image=x", "2", "cmd"}, greedy, is_verb);
  EXPECT_THAT(line.options, ElementsAre("--image=x"));
  EXPECT_EQ(line.count, "2");
  EXPECT_THAT(line.command, ElementsAre("cmd"));
}

// libstdc++'s regex matcher recurses once a character: a word of 100 000 after --wait or --mig
// (one argument may be 128 KiB) overflowed the stack, and gpurun died of SIGSEGV.
TEST(SplitCommandLine, ALongWordAfterWaitOrMigIsAWordNotACrash) {
  const std::string long_duration = std::string(100'000, '1') + "s";
  EXPECT_THAT(test::caught_error([&] {
                split({"--wait", long_duration, "1", "true"});
              }).message,
              HasSubstr("not a duration"));
  const std::string long_profile = "1g.10gb+" + std::string(100'000, 'a');
  EXPECT_THAT(split({"--mig", long_profile, "1", "true"}).options, ElementsAre("--mig"));
}

// The count put after the "--" ran a program named 2 on one GPU, which the container then failed
// to find, long after the launch.
TEST(SplitCommandLine, ANumberFirstAfterTheDoubleDashWithoutNIsRefusedWithBothMeanings) {
  const auto e = test::caught_error([] { split({"--image", "img", "--", "2", "python", "train.py"}); });
  EXPECT_EQ(e.exit_code, exit_code::failure);
  EXPECT_THAT(e.message, AllOf(HasSubstr("gpurun 2 -- python ..."), HasSubstr("gpurun 1 -- 2 python ...")));
  EXPECT_THAT(split({"1", "--", "2", "x"}).command, ElementsAre("2", "x"));  // N given: a program named 2
  EXPECT_THAT(split({"--", "2x"}).command, ElementsAre("2x"));
}

TEST(SplitCommandLine, VerbWithACommandIsAnError) {
  const auto e = test::caught_error([] { split({"pick", "2", "extra"}); });
  EXPECT_EQ(e.exit_code, exit_code::failure);
  EXPECT_THAT(e.message, AllOf(HasSubstr("pick"), HasSubstr("\"extra\"")));
  EXPECT_THROW(split({"status", "--", "x"}), Error);
}

TEST(ParseGpuCount, AcceptsPositiveWholeNumbers) {
  EXPECT_EQ(parse_gpu_count("1"), 1);
  EXPECT_EQ(parse_gpu_count("8"), 8);
  EXPECT_EQ(parse_gpu_count("16"), 16);
}

class ParseGpuCountRejects : public ::testing::TestWithParam<std::string> {};

TEST_P(ParseGpuCountRejects, WithExit125AndAUsageHint) {
  const auto e = test::caught_error([&] { parse_gpu_count(GetParam()); });
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_THAT(e.message,
              AllOf(HasSubstr("\"" + GetParam() + "\""), HasSubstr("Usage: gpurun"), HasSubstr("gpurun -- ")));
}

INSTANTIATE_TEST_SUITE_P(Words, ParseGpuCountRejects, ::testing::Values("two", "", " 2", "2x", "0x2"),
                         [](const auto& param_info) { return "Case" + std::to_string(param_info.index); });

// A number that is no count of GPUs: said so, without a command to run a program named 0.
class ParseGpuCountRejectsNumbers : public ::testing::TestWithParam<std::string> {};

TEST_P(ParseGpuCountRejectsNumbers, SayingTheRangeAlone) {
  const auto e = test::caught_error([&] { parse_gpu_count(GetParam()); });
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_EQ(e.message, "expected the number of GPUs, a whole number from 1 to 4096, got " + GetParam());
}

INSTANTIATE_TEST_SUITE_P(Numbers, ParseGpuCountRejectsNumbers, ::testing::Values("0", "-3", "1.5", "99999999999", "+2"),
                         [](const auto& param_info) { return "Case" + std::to_string(param_info.index); });

TEST(ParseGpuCount, ACommandTypedWithoutNGetsAHintToRunIt) {
  EXPECT_THAT(test::caught_error([] { parse_gpu_count("python"); }).message,
              AllOf(HasSubstr("gpurun 1 python"), HasSubstr("gpurun -- python")));
}

TEST(SplitAndParse, NegativeCountIsRejectedByParseGpuCount) {
  const CommandLine line = split({"-3", "python"});
  ASSERT_TRUE(line.count.has_value());
  EXPECT_THROW(parse_gpu_count(*line.count), Error);
  EXPECT_THAT(line.options, IsEmpty());
  EXPECT_THAT(line.command, ElementsAre("python"));
}

}  // namespace
}  // namespace gpurun::cli

namespace gpurun::cli {
namespace {

TEST(SplitCommandLine, AMigProfileAfterMigIsItsValueNotN) {
  const CommandLine line = split_command_line(
      {"--mig", "1g.10gb", "1", "--", "python", "train.py"}, [](std::string_view) { return false; },
      [](std::string_view) { return false; });
  EXPECT_EQ(line.options, (std::vector<std::string>{"--mig=1g.10gb"}));
  EXPECT_EQ(line.count, "1");
  EXPECT_EQ(line.command, (std::vector<std::string>{"python", "train.py"}));
  // A bare --mig before N leaves N alone; the job's own words are never touched.
  const CommandLine bare = split_command_line(
      {"--mig", "2", "train", "--mig", "1g.10gb"}, [](std::string_view) { return false; },
      [](std::string_view) { return false; });
  EXPECT_EQ(bare.options, (std::vector<std::string>{"--mig"}));
  EXPECT_EQ(bare.count, "2");
  EXPECT_EQ(bare.command, (std::vector<std::string>{"train", "--mig", "1g.10gb"}));
}

TEST(SplitCommandLine, AGpurunOptionIsNeverTheValueOfTheOptionBeforeIt) {
  // `--name --dry-run` would have named the container "--dry-run" and launched for real.
  const auto is_option_name = [](std::string_view w) {
    return w == "--dry-run" || w == "--image" || w == "-q" || w == "--name" || w == "-e";
  };
  const auto split_checked = [&](const Args& args) {
    return split_command_line(args, takes_value, is_verb, is_option_name);
  };
  EXPECT_EQ(test::caught_error([&] {
              split_checked({"--name", "--dry-run", "1"});
            }).message,
            "--name needs a value, but the option --dry-run follows it: write --name=VALUE (or --name=--dry-run if "
            "that is the value meant)");
  EXPECT_THAT(test::caught_error([&] {
                split_checked({"-e", "-q", "1"});
              }).message,
              HasSubstr("write -eVALUE (or -e-q if that is the value meant)"));
  EXPECT_THAT(split_checked({"--name=--dry-run", "1"}).options, ElementsAre("--name=--dry-run"));
  EXPECT_THAT(split_checked({"--name", "-x", "1"}).options, ElementsAre("--name", "-x"));  // not gpurun's
  // docker's options are --docker-opt's values; only gpurun's --dry-run is refused there.
  const auto docker_opt = [](std::string_view w) { return w == "--docker-opt"; };
  const auto split_docker = [&](const Args& args) {
    return split_command_line(args, docker_opt, is_verb, [](std::string_view w) { return w.starts_with("--"); });
  };
  EXPECT_THAT(split_docker({"--docker-opt", "--ipc=host", "1"}).options, ElementsAre("--docker-opt", "--ipc=host"));
  EXPECT_THAT(test::caught_error([&] {
                split_docker({"--docker-opt", "--dry-run", "1"});
              }).message,
              HasSubstr("--docker-opt needs a value, but the option --dry-run follows it"));
}

TEST(IsMigProfile, NamesOfProfiles) {
  for (const char* yes : {"1g.10gb", "3g.40gb", "7g.80gb", "1c.3g.40gb", "1g.10gb+me", "1g.20gb+gfx"})
    EXPECT_TRUE(is_mig_profile(yes)) << yes;
  for (const char* no : {"1", "train.py", "g.10gb", "1g10gb", "--mig"}) EXPECT_FALSE(is_mig_profile(no)) << no;
}

}  // namespace
}  // namespace gpurun::cli
