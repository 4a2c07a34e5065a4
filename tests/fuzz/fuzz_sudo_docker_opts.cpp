// libFuzzer target: the --docker-opt words of a caller under sudo, as the sudo rules read them
// (gpurun/config/sudo_rules.hpp). The caller is untrusted by definition: every spelling docker accepts
// (--opt=v, --opt v, clustered short options, --mount keys in any order) must meet the same rule.
//
// The input is the words, one per line. gpurun::Error is the documented answer to words it will
// not pass on (exit 125). The properties: what passes contains no option the rules refuse, and
// read again the way docker reads it, gpurun's own spelling of it passes again, option for option.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "gpurun/config/sudo_rules.hpp"
#include "gpurun/util/docker_args.hpp"
#include "gpurun/util/error.hpp"

namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> words;
  while (!text.empty() && words.size() < 64) {
    const std::size_t end = text.find('\n');
    words.emplace_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
  }
  return words;
}

const std::set<std::string_view>& refused_names() {
  static const std::set<std::string_view> names = [] {
    std::set<std::string_view> refused;
    for (const gpurun::DockerOptionRule& rule : gpurun::sudo_docker_rules())
      if (!rule.allowed) refused.insert(rule.name);
    return refused;
  }();
  return names;
}

// The words gpurun passes on for `words`, or nothing when it refuses them.
std::vector<std::string> passed_on(const std::vector<std::string>& words) {
  std::vector<std::string> canonical;
  try {
    for (const gpurun::DockerArg& arg : gpurun::caller_docker_args(words)) {
      if (!gpurun::sudo_refusal(arg, {}).empty()) return {};
      GPURUN_FUZZ_CHECK(refused_names().count(arg.name) == 0);
      canonical.push_back(gpurun::canonical(arg));
    }
  } catch (const gpurun::Error& e) {
    GPURUN_FUZZ_CHECK(e.exit_code() == 125);
    return {};
  }
  return canonical;
}

}  // namespace

GPURUN_FUZZ_TARGET(sudo_docker_opts) {
  const std::vector<std::string> canonical = passed_on(lines_of(gpurun::fuzz::as_text(data, size)));
  if (canonical.empty()) return 0;
  // What docker will read is what was checked: gpurun's spelling passes again, the same options.
  const std::vector<gpurun::DockerArg> reread = gpurun::docker_args(canonical);
  GPURUN_FUZZ_CHECK(reread.size() == canonical.size());
  for (const gpurun::DockerArg& arg : reread) {
    GPURUN_FUZZ_CHECK(gpurun::sudo_refusal(arg, {}).empty());
    GPURUN_FUZZ_CHECK(refused_names().count(arg.name) == 0);
  }
  GPURUN_FUZZ_CHECK(passed_on(canonical) == canonical);
  return 0;
}
