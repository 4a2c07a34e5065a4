#pragma once
// The checks of a command line's options that CLI11 does not make, each failing with the message
// that says what to type instead: docker's options given to gpurun, options gpurun does not have,
// a switch given a value, an option left without one, a verb's own flag given to another verb.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "gpurun/verbs/verb_table.hpp"

namespace gpurun::cli {

// Each of `words` (the options before N) is gpurun's and has its value; `args` is the whole command line.
void check_known_options(const std::vector<std::string>& words, const std::vector<std::string>& args,
                         const CLI::App& app);

// A setting typed with a verb that would ignore it (Verb::refused_flags): said, with what to do instead.
void check_refused_flags(const std::vector<std::pair<std::string, nlohmann::json>>& given, const Verb& verb);

// Each flag `given` is the verb's own or every verb's.
void check_verb_flags(const std::vector<std::pair<std::string, nlohmann::json>>& given, const Verb& verb);

}  // namespace gpurun::cli
