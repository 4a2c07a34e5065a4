#include "gpurun/config/settings.hpp"

#include <algorithm>
#include <iterator>

#include "settings_table.hpp"

namespace gpurun {
namespace {

using json = nlohmann::json;

std::vector<Setting> make_settings() {
  std::vector<Setting> all;
  for (auto part : {settings_table::gpu_settings, settings_table::launch_settings, settings_table::backend_settings,
                    settings_table::verb_settings, settings_table::policy_settings}) {
    std::vector<Setting> some = part();
    all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
  }
  return all;
}

}  // namespace

std::string Setting::env() const { return scope == Scope::option ? "GPURUN_" + text::to_upper(key) : ""; }

json Setting::default_value() const { return json_literal(fallback); }

std::optional<std::string> Setting::problem(const json& value) const {
  // A choice, and the CPUs per GPU, checked where the value is read (a file's line, a variable, a
  // flag), not first at a launch: `config --check` passed {"engine": "dockr"}, which then stopped
  // every gpurun command on the machine, `gpurun config` too, naming no file.
  if (!words.empty() && value.is_string() &&
      std::find(words.begin(), words.end(), value.get<std::string>()) == words.end()) {
    const std::vector<std::string> all(words.begin(), words.end());
    return fmt::format("\"{}\" is not one of {}{}", text::printable(value.get<std::string>(), 40), fmt::join(all, ", "),
                       suggestion(value.get<std::string>(), all));
  }
  if (key == "cpus_per_gpu" && value.is_number_integer() &&
      (value.get<long long>() < kMinCpusPerGpu || value.get<long long>() > kMaxCpusPerGpu))
    return fmt::format("{} is outside {}..{}, the range NVIDIA's DGX guides recommend", value.get<long long>(),
                       kMinCpusPerGpu, kMaxCpusPerGpu);
  if (auto problem = value_problem(type, value, flag)) return problem;
  if (key != "volumes" || !value.is_array()) return std::nullopt;
  // docker's -v is SOURCE:TARGET[:OPTIONS], or an absolute TARGET alone; anything else is most
  // likely gpurun's -v taken for --verbose (`gpurun -v status` would start a job).
  for (const json& item : value) {
    const std::string volume = item.get<std::string>();
    if (volume.find(':') == std::string::npos && !volume.starts_with('/'))
      return fmt::format(
          "--volume \"{}\": expected SOURCE:TARGET[:OPTIONS] as docker's -v, such as /data:/data:ro "
          "(-v is short for --volume; for more diagnostics on stderr, write --verbose)",
          text::printable(volume));
    // A source with a '/' that is neither absolute nor begins with '.' (which docker 23 and podman
    // take from the working directory): docker reads it as a volume's name, and refuses it; so is ~.
    const std::string source = volume.substr(0, volume.find(':'));
    const bool relative_path = source.starts_with('.');  // docker 23 makes any such source absolute
    if (!source.starts_with('/') && !relative_path &&
        (source.find('/') != std::string::npos || source.starts_with('~')))
      return fmt::format(
          "--volume \"{}\": a host path must be absolute (docker reads {} as a volume's name); "
          "write $PWD/{} or $HOME/… in its place",
          text::printable(volume), text::printable(source), text::printable(source));
  }
  return std::nullopt;
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = make_settings();
  return table;
}

const Setting* find_setting(std::string_view key) {
  const auto& table = settings();
  const auto it = std::find_if(table.begin(), table.end(), [&](const Setting& s) { return s.key == key; });
  return it == table.end() ? nullptr : &*it;
}

const Setting* find_flag(std::string_view flag) {
  const auto& table = settings();
  const auto it = std::find_if(table.begin(), table.end(), [&](const Setting& s) {
    return !flag.empty() && (s.flag == flag || s.short_flag == flag);
  });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace gpurun
