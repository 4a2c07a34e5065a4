#include "gpurun/util/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

// Optimal string alignment distance: a swapped pair of letters counts as one edit.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string normal_key(std::string_view word) {
  std::string normal = text::to_lower(word);
  std::replace(normal.begin(), normal.end(), '-', '_');  // --flag-style spellings
  return normal;
}

}  // namespace

std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string normal = normal_key(word);
  const std::string* best = nullptr;
  std::size_t best_distance = normal.size() >= 6 ? 3 : 2;
  for (const std::string& candidate : candidates)
    if (const std::size_t d = edit_distance(normal, normal_key(candidate)); d < best_distance) {
      best = &candidate;
      best_distance = d;
    }
  return best != nullptr ? fmt::format(" (did you mean \"{}\"?)", *best) : "";
}

}  // namespace gpurun
