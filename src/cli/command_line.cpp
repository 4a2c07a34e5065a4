#include "command_line.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun::cli {
namespace {

bool is_negative_number(std::string_view word) {
  return word.size() > 1 && word[0] == '-' && word.find_first_not_of("0123456789", 1) == std::string_view::npos;
}

bool is_option(std::string_view word) { return word.size() > 1 && word[0] == '-' && !is_negative_number(word); }

// The longest word matched against a pattern: no duration or MIG profile is longer.
constexpr std::size_t kLongestPatternWord = 64;

bool is_whole_number(std::string_view word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string_view::npos;
}

// "30s", "5m", "2h", "1d": a duration no one could read as a number of GPUs.
bool is_duration_with_unit(std::string_view word) {
  // libstdc++'s matcher recurses once a character: a word of 100 000 would overflow the stack.
  static const std::regex duration(R"(\d+(\.\d+)?[smhd])");
  return word.size() <= kLongestPatternWord && std::regex_match(word.begin(), word.end(), duration);
}

// How many of the following words an option word consumes (0 or 1).
std::size_t values_consumed(std::string_view word, const std::function<bool(std::string_view)>& takes_value) {
  if (word.starts_with("--")) {
    if (word.find('=') != std::string_view::npos) return 0;
    return takes_value(word) ? 1 : 0;
  }
  // A cluster of short options: "-qq", "-eFOO=1", "-e FOO=1".
  for (std::size_t i = 1; i < word.size(); ++i) {
    if (takes_value(std::string{'-', word[i]})) return i + 1 == word.size() ? 1 : 0;
  }
  return 0;
}

// `-e=FOO=1`, `-p=8888:8888`, `-qe=FOO=1`: the '=' after a short option that takes a value is no
// part of the value, as docker reads it.
std::string without_short_equals(const std::string& word, const std::function<bool(std::string_view)>& takes_value) {
  if (word.starts_with("--")) return word;
  for (std::size_t i = 1; i < word.size(); ++i) {
    if (!takes_value(std::string{'-', word[i]})) continue;
    if (i + 2 < word.size() && word[i + 1] == '=') return word.substr(0, i + 1) + word.substr(i + 2);
    break;  // the rest is its value
  }
  return word;
}

}  // namespace

CommandLine split_command_line(const std::vector<std::string>& args,
                               const std::function<bool(std::string_view)>& takes_value,
                               const std::function<bool(std::string_view)>& is_verb,
                               const std::function<bool(std::string_view)>& is_option_name) {
  // The next word as the value of `option`; one of gpurun's options is refused. docker's options
  // are --docker-opt's values, so there only gpurun's own --dry-run is.
  const auto value_after = [&](const std::string& option, const std::string& next) {
    const std::string_view name = std::string_view(next).substr(0, next.find('='));
    const bool refused = option == "--docker-opt" ? name == "--dry-run"
                                                  : next.starts_with('-') && is_option_name && is_option_name(option) &&
                                                        is_option_name(name);
    if (refused) {
      const std::string joined = option.starts_with("--") ? option + "=" : option;  // --name=x, -ex
      throw Error(
          fmt::format("{0} needs a value, but the option {1} follows it: write {2}VALUE (or {2}{1} if that is "
                      "the value meant)",
                      option, text::printable(next), joined));
    }
    return next;
  };
  CommandLine line;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      line.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (word == "--wait" && i + 1 < args.size()) {
      // --wait takes its value after '=' (bare, it means no limit); a duration after it can be
      // nothing but its value (`--wait 30m 2`, `gpurun 2 --wait 30m python`), while a bare number
      // could be either: N, or after N the job's first word.
      const std::string& next = args[i + 1];
      if (is_duration_with_unit(next)) {
        line.options.push_back("--wait=" + args[++i]);
        continue;
      }
      if (is_whole_number(next) && !line.count)
        throw Error(
            fmt::format("\"--wait {0}\" could mean either: write --wait={0} to wait up to {0} seconds, or "
                        "--wait=forever {0} to wait as long as it takes for {0} GPUs",
                        next));
      if (is_whole_number(next))
        throw Error(
            fmt::format("\"--wait {0}\" could mean either: write --wait={0} to wait up to {0} seconds, or "
                        "--wait -- {0} to run a program named {0}",
                        next));
      if (!next.empty() && next[0] >= '0' && next[0] <= '9')  // 30min, 2h30m: meant as its value
        throw Error(fmt::format(
            "--wait {}: not a duration; write a number with one unit, s, m, h or d "
            "(--wait 90m, --wait=2h){}",
            text::printable(next, 40),
            line.count ? fmt::format(", or --wait -- {} to run a program of that name", text::printable(next, 40))
                       : ""));
    }
    if (word == "--gpus" || word == "-G" || word.starts_with("--gpus=")) {
      // docker's and srun's spelling of how many GPUs: gpurun's N.
      const bool joined = word.starts_with("--gpus=");
      const std::string value = joined ? word.substr(7) : (i + 1 < args.size() ? args[i + 1] : "");
      if (!is_whole_number(value))
        throw Error(fmt::format("gpurun chooses the GPUs itself: write `gpurun N ...` for N of them{}",
                                value.empty() ? "" : fmt::format(" (not --gpus {})", text::printable(value))));
      if (line.count && *line.count != value)
        throw Error(fmt::format("{} {} and N {} disagree: write `gpurun N ...` once", word, value, *line.count));
      line.count = value;
      if (!joined) ++i;
      continue;
    }
    if (word == "--mig" && i + 1 < args.size() && is_mig_profile(args[i + 1])) {
      // --mig takes its value after '=' (bare, it means any profile), yet a profile after it can
      // be nothing but its value: `gpurun --mig 1g.10gb 1 -- python train.py`.
      line.options.push_back("--mig=" + args[++i]);
      continue;
    }
    if (is_option(word)) {
      line.options.push_back(without_short_equals(word, takes_value));
      if (values_consumed(word, takes_value) == 1 && i + 1 < args.size())
        line.options.push_back(value_after(word, args[++i]));
      continue;
    }
    if (line.verb.empty() && !line.count && is_verb(word)) {
      line.verb = word;
      continue;
    }
    if (!line.count) {
      line.count = word;
      continue;
    }
    line.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    break;
  }
  const bool takes_a_name =
      line.verb == "stop" || line.verb == "logs" || line.verb == "attach" || line.verb == "rm" || line.verb == "report";
  if (takes_a_name && !line.command.empty() && line.count)  // `gpurun stop a b`: one name a call
    throw Error(fmt::format("gpurun {} takes one name, but got \"{}\" after \"{}\": run it once for each", line.verb,
                            text::printable(line.command.front()), text::printable(*line.count)));
  if (!line.verb.empty() && !line.command.empty())
    throw Error(fmt::format("gpurun {} takes no command, but got \"{}\"; to run a program, leave out \"{}\"", line.verb,
                            text::printable(line.command.front()), line.verb));
  // `gpurun -- 2 python train.py`: the count put after the "--" would run a program named 2 on one GPU.
  if (line.verb.empty() && !line.count && !line.command.empty() && is_whole_number(line.command.front())) {
    const std::string& n = line.command.front();
    const std::string rest = line.command.size() > 2   ? " " + text::printable(line.command[1], 40) + " ..."
                             : line.command.size() > 1 ? " " + text::printable(line.command[1], 40)
                                                       : "";
    throw Error(
        fmt::format("the command after \"--\" begins with {0}, a number: to run it on {0} GPUs, put the number "
                    "before the \"--\" (gpurun {0} --{1}); to run a program named {0}, give the number of "
                    "GPUs first (gpurun 1 -- {0}{1})",
                    text::printable(n, 40), rest));
  }
  return line;
}

bool is_mig_profile(std::string_view word) {
  static const std::regex profile(R"((\d+c\.)?\d+g\.\d+gb(\+[a-z0-9]+)*)", std::regex::icase);
  return word.size() <= kLongestPatternWord && std::regex_match(word.begin(), word.end(), profile);
}

int parse_gpu_count(const std::string& word) {
  constexpr long long kMostGpus = 4096;
  const auto value = text::parse_integer(word);
  if (value && *value >= 1 && *value <= kMostGpus) return static_cast<int>(*value);
  // A number that is no count of GPUs (0, -1, 2.5): no program is meant.
  static const std::regex number(R"([-+]?\d*\.?\d+)");
  if (word.size() <= kLongestPatternWord && std::regex_match(word, number))
    throw Error(fmt::format("expected the number of GPUs, a whole number from 1 to {}, got {}", kMostGpus, word));
  // A word from another tool: what gpurun calls it.
  static const std::map<std::string, std::string, std::less<>> kMeant{{"help", "gpurun --help"},
                                                                      {"version", "gpurun --version"},
                                                                      {"kill", "gpurun stop NAME"},
                                                                      {"run", "gpurun N COMMAND (no `run`)"},
                                                                      {"exec", "gpurun N COMMAND"}};
  if (const auto meant = kMeant.find(word); meant != kMeant.end())
    throw Error(fmt::format("\"{}\" is no verb of gpurun's: {}", word, meant->second));
  throw Error(fmt::format(
      "expected the number of GPUs (a whole number from 1 to {}), got \"{}\". Usage: gpurun [OPTIONS] [N] [--] "
      "[COMMAND...]; to run a command on 1 GPU write `gpurun 1 {}` or `gpurun -- {}`",
      kMostGpus, text::printable(word), text::printable(word), text::printable(word)));
}

}  // namespace gpurun::cli
