// Unit tests for the plain options reader: where it reads a command line, it reads it as CLI11
// does (the same settings, values, counts and errors), and it leaves every other form to CLI11.
#include "plain_options.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/verbs/verb_table.hpp"
#include "option_binding.hpp"

namespace gpurun::cli {
namespace {

using Args = std::vector<std::string>;

bool is_verb(std::string_view word) { return !word.empty() && find_verb(word) != nullptr; }

// What one reader made of a command line: the configuration layer and the options about the run,
// or the error it gave (a value the config layer refuses is refused by both).
std::string outcome(const Names& given, const Bindings& b) {
  std::string text;
  try {
    text = nlohmann::json(flags_given(given, b, Scope::option)).dump() + " " +
           nlohmann::json(flags_given(given, b, Scope::invocation)).dump();
  } catch (const Error& e) {
    text = std::string("error: ") + e.what();
  }
  return text + nlohmann::json({b.verbose, b.quiet, b.profile, b.config_files, b.no_config}).dump();
}

// The reading of CLI11, bound as cli.cpp binds it for this command line; "" where it refuses it.
std::string cli11_outcome(const Args& args, const CommandLine& line) {
  CLI::App app;
  Bindings b;
  bind_options(app, b, mentioned_names(args));
  std::vector<std::string> reversed(line.options.rbegin(), line.options.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::Error&) {
    return "";
  }
  return outcome(filled_names(app), b);
}

// Whether the plain reader read `args`; when it did, it must agree with CLI11.
bool read_alike(const Args& args) {
  CommandLine line;
  try {
    line = split_command_line(args, option_takes_value, is_verb);
  } catch (const Error&) {
    return false;
  }
  Bindings b;
  const std::optional<Names> given = read_plain_options(line.options, b);
  if (!given) return false;
  std::string joined;
  for (const auto& word : args) joined += " " + word;
  EXPECT_EQ(outcome(*given, b), cli11_outcome(args, line)) << "command line:" << joined;
  return true;
}

TEST(PlainOptionsTest, NamesAndValuesAreCli11s) {
  CLI::App app;
  Bindings unused;
  bind_options(app, unused, std::nullopt);
  int names = 0;
  for (const CLI::Option* option : app.get_options()) {
    std::vector<std::string> all;
    for (const auto& name : option->get_snames()) all.push_back("-" + name);
    for (const auto& name : option->get_lnames()) all.push_back("--" + name);
    for (const auto& name : all) {
      ++names;
      EXPECT_TRUE(is_option_name(name)) << name;
      EXPECT_EQ(option_takes_value(name), option->get_items_expected_min() > 0) << name;
    }
  }
  EXPECT_GT(names, 60);
  for (const std::string_view unknown : {"--imag", "-x", "-", "--", "N", "--N", "COMMAND", "-qv", "--image=x"}) {
    EXPECT_EQ(is_option_name(unknown), app.get_option_no_throw(std::string(unknown)) != nullptr) << unknown;
    EXPECT_FALSE(option_takes_value(unknown)) << unknown;
  }
}

TEST(PlainOptionsTest, ReadsTheFormsALaunchUses) {
  for (const Args& args : std::vector<Args>{
           {"--image", "img", "2", "--", "python", "train.py"},
           {"--ignore-containers", "--gpu-request", "gpus", "--gpu-source", "nvidia-smi", "--nvidia-smi", "/x/smi",
            "--docker", "/x/docker", "--lock-dir", "/tmp/l", "--image", "img", "--allow-busy", "1", "--", "true"},
           {"--dry-run", "--image=me/pytorch:24.05", "-v", "/data:/data:ro", "-v", "/x:/x", "-e", "A=1", "2", "python"},
           {"--docker-opt=--ipc=host", "--docker-opt=--shm-size=8g", "1", "true"},
           {"--verbose", "--verbose", "-q", "--no-config", "-P", "lab", "--config", "a.json", "--config", "b.json",
            "1"},
           {"--max-util", "50", "--min-free-memory", "20GiB", "--cpus-per-gpu", "12", "4", "--", "sh", "-c", "true"},
           {"status", "--json"},
           {"pick", "--max-util", "10%", "2"},
           {"--max-util", "lots", "1", "true"},  // a value the config layer refuses: both say so
           // Given twice, the last wins (an alias's --image overridden).
           {"--image", "a", "2", "--image", "b"},
           {"--dry-run", "--dry-run", "--name", "x", "--name", "y", "2"},
           {"-P", "a", "--profile", "b"},
       })
    EXPECT_TRUE(read_alike(args)) << args.front();
}

TEST(PlainOptionsTest, LeavesEveryOtherFormToCli11) {
  for (const Args& args : std::vector<Args>{
           {"--help"},
           {"-h", "2"},
           {"--version", "--json"},
           {"-qq", "2"},
           {"-eA=1", "2"},
           {"--dry-run=false", "2"},
           {"--image", "-x", "2"},  // a value that looks like an option
           {"--image=", "2"},
           {"--image"},
           {"--wait=30m", "2"},
           {"--imgae", "img", "2"},  // unknown: CLI11 and check_known_options say what to type
           {"--no-config", "--no-config"},
       }) {
    CommandLine line = split_command_line(args, option_takes_value, is_verb);
    Bindings b;
    EXPECT_FALSE(read_plain_options(line.options, b).has_value()) << args.front();
  }
}

// Random command lines from gpurun's own option names, values of every kind and odd words: each
// one the plain reader reads, CLI11 reads the same.
TEST(PlainOptionsTest, AgreesWithCli11OnRandomCommandLines) {
  CLI::App app;
  Bindings unused;
  bind_options(app, unused, std::nullopt);
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
  }
  const std::vector<std::string> values{"img",   "2",        "0",    "a=b",  "10%", "20GiB", "30s",  "true",
                                        "false", "-x",       "--",   "",     "5m",  "1,2",   "x y",  "é",
                                        "-1",    "/a:/b:ro", "auto", "gpus", "cdi", "lab",   "none", "--ipc=host"};
  const std::vector<std::string> others{"2", "status", "pick", "python", "--", "-qv", "-vq", "-ex", "--imag"};
  std::mt19937 random(20261126);
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(random)];
  };
  int read = 0;
  for (int round = 0; round < 4000; ++round) {
    Args args;
    const int length = std::uniform_int_distribution<int>(0, 6)(random);
    for (int i = 0; i < length; ++i) {
      switch (std::uniform_int_distribution<int>(0, 5)(random)) {
        case 0:
          args.push_back(pick(names));
          break;
        case 1:
          args.push_back(pick(names) + "=" + pick(values));
          break;
        case 2:
          args.push_back(pick(values));
          break;
        case 3:
          args.push_back(pick(others));
          break;
        default:
          args.push_back(pick(names));
          args.push_back(pick(values));
      }
    }
    read += read_alike(args) ? 1 : 0;
  }
  EXPECT_GT(read, 400);  // the comparison saw many lines, not only the ones left to CLI11
}

}  // namespace
}  // namespace gpurun::cli
