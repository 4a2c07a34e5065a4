#pragma once
// A command line's options read off the settings table, without CLI11. CLI11 builds an object per
// option and compares each with every one before it: 0.4 M of the 1.25 M instructions a launch ran
// (docs/performance.md, issue 25). A launch's options are nearly always of the plain forms
// `--name VALUE`, `--name=VALUE`, `-x VALUE` and `--switch`, which this reads. Anything else
// (help, clusters such as -qv, -eVALUE, a one-value option given twice, a value that starts with
// '-', an option gpurun does not have) is left to CLI11, which reads it or says what is wrong.
// tests/unit/cli/plain_options_test.cpp checks that both readers agree.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.hpp"

namespace gpurun::cli {

// Whether `name` ("--image", "-e", "--help") is one of gpurun's options.
bool is_option_name(std::string_view name);

// Whether the option `name` takes the next word as its value: what split_command_line asks.
bool option_takes_value(std::string_view name);

// The long names of the settings that `words` (CommandLine::options) give, their words and the
// options about the run put in `b`; nullopt where a word is not of a plain form (then `b` holds
// part of it, and CLI11 must read the line).
std::optional<Names> read_plain_options(const std::vector<std::string>& words, Bindings& b);

}  // namespace gpurun::cli
