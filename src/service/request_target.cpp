#include "request_target.hpp"

#include "gpurun/util/text.hpp"

namespace gpurun {

std::optional<Target> parse_target(const std::string& target) {
  Target parsed;
  const auto mark = target.find('?');
  const auto path = text::percent_decode(target.substr(0, mark), text::UrlPart::path);
  if (!path) return std::nullopt;
  parsed.path = *path;
  if (mark == std::string::npos) return parsed;
  for (const std::string_view pair : text::split(std::string_view(target).substr(mark + 1), '&')) {
    if (pair.empty()) continue;
    const auto equals = pair.find('=');
    const auto key = text::percent_decode(pair.substr(0, equals));
    const auto value = text::percent_decode(equals == std::string_view::npos ? "" : pair.substr(equals + 1));
    if (!key || !value) return std::nullopt;
    parsed.query[*key] = *value;
  }
  return parsed;
}

}  // namespace gpurun
