#pragma once
// "Did you mean": the nearest known name to a mistyped one, for messages about keys, variables
// and profiles.
#include <string>
#include <string_view>
#include <vector>

namespace gpurun {

// " (did you mean "image"?)" for a near miss among `candidates`, else "". Case, '-' and '_' do
// not count; a swapped pair of letters is one edit.
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gpurun
