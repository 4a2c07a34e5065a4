#pragma once
// The verbs, one row each: adding a verb is a row here (verb_table.cpp) plus its function. The CLI
// finds the row of the word it parsed and calls it; --help, the completion scripts and the parser's
// rules (does it take N? a word of its own?) read the same rows.
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/config.hpp"
#include "gpurun/config/options.hpp"
#include "gpurun/render/completion.hpp"

namespace gpurun {

// What a verb is given.
struct Invocation {
  const Options& options;
  const Config* config = nullptr;  // null for a verb that runs before configuration (completion)
  const ConfigInputs& inputs;
  std::string argument;                          // the word after the verb: `config init`, `stop NAME`
  std::function<CompletionSpec()> describe_cli;  // the parser's options, for `completion`
};

struct Verb {
  std::string_view name;           // "" for the launch itself (no verb)
  std::string_view help;           // one line, for --help and the completion scripts
  std::string_view synopsis;       // what follows `gpurun` ("status [--json] [--watch[=S]]"), for its --help
  std::vector<std::string> words;  // what may follow it, offered by completion: "init"; "bash", "zsh"
  bool takes_count = false;        // `pick 2`
  bool takes_argument = false;     // the word after it is its own (`config init`, `logs NAME`)
  // The settings (keys) that are this verb's own flags, refused with any other: logs -f.
  std::vector<std::string_view> own_flags;
  // Settings it would ignore where typed with it, each with what to do instead: pick --wait.
  std::vector<std::pair<std::string_view, std::string_view>> refused_flags = {};
  bool configured = true;  // false: runs before the configuration files are read
  // One of its own flags (a key) that makes it run before the configuration files are read:
  // `config --check FILE` must work while the installed file is broken.
  std::string_view unconfigured_with;
  int (*run)(const Invocation& invocation, std::ostream& out) = nullptr;
};

// Every verb, the launch (name "") first.
const std::vector<Verb>& verb_table();

// The row named `name`, or nullptr ("" finds the launch).
const Verb* find_verb(std::string_view name);

}  // namespace gpurun
