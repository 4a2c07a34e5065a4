#pragma once
// gpurun's settings as CLI11 options: which to bind for a command line, and the flags it gave.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace gpurun::cli {

// The option names a command line mentions, as an option or not: "--gpus" of "--gpus=2", and
// "-q" and "-v" of "-qv". nullopt where every option is needed: for help (`-h`, `--help`) and
// the completion scripts, which list them all.
std::optional<Names> mentioned_names(const std::vector<std::string>& args);

// One CLI11 option per registry setting that has a flag (of those `only` names, where given), then
// the options about configuration and diagnostics themselves. Only the mentioned ones, because
// CLI11 compares each option added with every one before it (copying their name lists): binding
// all hundred took 0.4 ms of every launch (docs/performance.md). A name no option has stays
// unknown either way.
void bind_options(CLI::App& app, Bindings& b, const std::optional<Names>& only);

// The long names ("--image") of the options CLI11 filled, for flags_given.
Names filled_names(const CLI::App& app);

// The long names of all gpurun's options, for "did you mean" (an error's path: the parser binds
// only the options a command line mentions).
std::vector<std::string> option_names();

}  // namespace gpurun::cli
