#pragma once
// Splits gpurun's argv into its parts: `gpurun [options] [VERB] [options] [N] [--] [COMMAND ARGS...]`.
// Options stop at the first word after N (as in env, sudo, timeout), so the job's own flags
// (`gpurun 2 python train.py --lr 0.1`) reach the job untouched.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpurun::cli {

struct CommandLine {
  std::vector<std::string> options;  // for CLI11, in order
  std::string verb;                  // "", "pick", "status", ...
  std::optional<std::string> count;  // N as typed
  std::vector<std::string> command;  // the job's argv
};

// `takes_value("--image")` tells whether an option consumes a value ("-e" as well as "--env").
// `is_verb(word)` tells whether a first positional word is a verb. `is_option_name(word)`, where
// given, tells gpurun's options: one of them is never taken as the value of the option before it
// (`--name --dry-run` would launch for real), but with '='. Throws gpurun::Error for either, and
// for a verb that takes no command but is given one.
CommandLine split_command_line(const std::vector<std::string>& args,
                               const std::function<bool(std::string_view)>& takes_value,
                               const std::function<bool(std::string_view)>& is_verb,
                               const std::function<bool(std::string_view)>& is_option_name = {});

// Whether `word` names a MIG profile: "1g.10gb", "3g.40gb", "1c.3g.40gb", "1g.10gb+me".
bool is_mig_profile(std::string_view word);

// N as a number: a positive whole number; throws gpurun::Error with a usage hint otherwise.
int parse_gpu_count(const std::string& word);

}  // namespace gpurun::cli
