#pragma once
// Shell completion scripts (`gpurun completion bash|zsh`). The CLI layer describes its verbs and
// options in a CompletionSpec; the scripts are generated from it, so they never drift from the
// parser. Profile names are not baked in: the scripts ask `gpurun completion profiles` each time,
// so a profile added to any config file (project files included) completes at once.
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/config.hpp"
#include "gpurun/config/settings.hpp"

namespace gpurun {

// What the word after an option is (the registry's completion hint).
using CompletionValue = CompletionHint;

struct CompletionOption {
  std::vector<std::string> names;  // "-P", "--profile"
  CompletionValue value = CompletionValue::none;
  std::string help;                  // one line
  bool repeatable = false;           // may be given more than once (-e, --verbose)
  std::vector<std::string> choices;  // CompletionValue::choice: the words it takes
};

struct CompletionVerb {
  std::string name;                // "config"
  std::string help;                // one line
  std::vector<std::string> words;  // what may follow it: "init"; "bash", "zsh"
  bool takes_count = false;        // pick N
};

struct CompletionSpec {
  std::string program = "gpurun";
  std::vector<CompletionVerb> verbs;
  std::vector<CompletionOption> options;
};

std::string bash_completion(const CompletionSpec& spec);
std::string zsh_completion(const CompletionSpec& spec);

// `gpurun completion bash|zsh` prints a script; `gpurun completion profiles` prints the names of
// the profiles the config files define, one per line (for the scripts). Throws Error for any
// other word, naming the ones it takes.
int run_completion(std::string_view what, const CompletionSpec& spec, const ConfigInputs& inputs, std::ostream& out);

}  // namespace gpurun
