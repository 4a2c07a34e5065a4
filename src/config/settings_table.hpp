#pragma once
// The settings table's parts (settings_*.cpp) and what their entries share: the groups that
// --help and the docs show them under, the value types, and the readers of list and choice values.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/config/options.hpp"
#include "gpurun/config/settings.hpp"
#include "gpurun/config/values.hpp"
#include "gpurun/util/choices.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/suggest.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun::settings_table {

using json = nlohmann::json;
using T = ValueType;
using H = CompletionHint;

inline constexpr std::string_view kSource = "Where GPU data comes from";
inline constexpr std::string_view kSelection = "Which GPUs are free";
inline constexpr std::string_view kLaunch = "The docker run command";
inline constexpr std::string_view kReport = "Job report (--report)";
inline constexpr std::string_view kWatch = "status --watch";
inline constexpr std::string_view kOutput = "Output";
inline constexpr std::string_view kContainerVerbs = "logs, ps, stop";
inline constexpr std::string_view kConfigVerb = "config";
inline constexpr std::string_view kSlurm = "On a Slurm cluster (backend slurm)";
inline constexpr std::string_view kHistory = "history, usage, report (the gpurun service)";

inline std::vector<std::string> strings(const json& v) { return v.get<std::vector<std::string>>(); }

// A setting whose value is one of Choices<E>::words: anything else is an error that lists them,
// with the nearest as a suggestion.
template <typename E>
E choice(const json& v, std::string_view key) {
  const std::string word = v.get<std::string>();
  if (const auto value = choice_from<E>(word)) return *value;
  const std::vector<std::string> words(Choices<E>::words.begin(), Choices<E>::words.end());
  throw Error(fmt::format("{} \"{}\": expected one of {}{}", key, text::printable(word), fmt::join(words, ", "),
                          suggestion(word, words)));
}

std::vector<Setting> gpu_settings();      // where GPU data comes from, which GPUs are free
std::vector<Setting> launch_settings();   // the docker run command
std::vector<Setting> backend_settings();  // where the job runs: locally or on Slurm
std::vector<Setting> verb_settings();     // --report, status --watch, what the verbs show
std::vector<Setting> policy_settings();   // site policy: the system file only

}  // namespace gpurun::settings_table
