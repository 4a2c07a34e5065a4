// libFuzzer target: configuration files and GPURUN_* variables, as load_config reads them. A
// .gpurun.json is picked up from whatever repository the user has cloned, so its text is untrusted.
//
// The first byte chooses where the rest goes: the system file (site policy allowed), the user
// file with a profile chosen, a --config file, or the value of one GPURUN_* variable.
// gpurun::Error is the documented answer to a bad configuration and is expected. Any other
// exception escaping (nlohmann's included), a crash, a sanitizer report or a violated property
// below is a finding.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "gpurun/config/config.hpp"
#include "gpurun/config/explain.hpp"
#include "gpurun/config/options.hpp"
#include "gpurun/util/error.hpp"

namespace {

// A private directory for the one file each input is written to; removed at exit.
const std::string& scratch_file() {
  static const std::string path = [] {
    std::string dir =
        (std::getenv("TMPDIR") != nullptr ? std::string(std::getenv("TMPDIR")) : "/tmp") + "/gpurun-fuzz-config-XXXXXX";
    GPURUN_FUZZ_CHECK(::mkdtemp(dir.data()) != nullptr);
    static const std::string file = dir + "/config.json";
    static const std::string directory = dir;
    std::atexit([] {
      ::unlink(file.c_str());
      ::rmdir(directory.c_str());
    });
    return file;
  }();
  return path;
}

void write_file(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  GPURUN_FUZZ_CHECK(fd >= 0);
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    GPURUN_FUZZ_CHECK(n > 0);
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
}

// The GPURUN_* variables the fuzzer may set (every key with a variable, and one unknown).
const std::vector<std::string>& variables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const gpurun::ConfigKey& key : gpurun::config_keys())
      if (!key.env.empty()) v.push_back(key.env);
    v.emplace_back("GPURUN_IMGAE");
    return v;
  }();
  return names;
}

gpurun::ConfigInputs inputs_for(std::uint8_t mode, std::string_view rest) {
  gpurun::ConfigInputs inputs;
  inputs.system_file = "/nonexistent/gpurun/config.json";
  inputs.user_file = std::nullopt;
  inputs.cwd.clear();  // no .gpurun.json search
  switch (mode % 4) {
    case 0:
      write_file(scratch_file(), rest);
      inputs.system_file = scratch_file();
      break;
    case 1:
      write_file(scratch_file(), rest);
      inputs.user_file = scratch_file();
      inputs.profile = "jupyter";
      break;
    case 2:
      write_file(scratch_file(), rest);
      inputs.extra_files.push_back(scratch_file());
      break;
    default: {
      const std::string& name = variables()[(mode / 4) % variables().size()];
      std::string value(rest.substr(0, rest.find('\0')));  // an environment value holds no NUL
      inputs.environment[name] = value;
      break;
    }
  }
  return inputs;
}

}  // namespace

GPURUN_FUZZ_TARGET(config) {
  if (size == 0) return 0;
  const gpurun::ConfigInputs inputs = inputs_for(data[0], gpurun::fuzz::as_text(data + 1, size - 1));
  gpurun::Config config;
  try {
    config = gpurun::load_config(inputs);
  } catch (const gpurun::Error& e) {
    GPURUN_FUZZ_CHECK(e.exit_code() == gpurun::exit_code::failure);
    return 0;  // a bad configuration, reported as such
  }
  // Every key has an effective value; what `gpurun config` prints and what a launch applies.
  for (const gpurun::ConfigKey& key : gpurun::config_keys())
    if (!key.site_policy) (void)config.at(key.name);
  (void)gpurun::config_table(config);
  (void)gpurun::config_json(config).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)gpurun::gpu_not_allowed_reason(config);
  for (int index = 0; index < 8; ++index) (void)gpurun::gpu_allowed(config, index);
  gpurun::Options options;
  try {
    gpurun::apply_to(config, options);
    gpurun::check_policy(config, options);
  } catch (const gpurun::Error& e) {
    GPURUN_FUZZ_CHECK(e.exit_code() == gpurun::exit_code::failure);
  }
  return 0;
}
