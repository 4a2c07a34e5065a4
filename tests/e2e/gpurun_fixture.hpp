#pragma once
// Runs the built gpurun binary against the stand-in nvidia-smi and docker in tests/fakes/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpurun/util/process.hpp"

namespace gpurun::testing {

using Env = std::vector<std::pair<std::string, std::string>>;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string scenario(const std::string& name) {
  return std::string(GPURUN_TEST_DATA_DIR) + "/scenarios/" + name;
}
inline std::string fake(const std::string& name) { return std::string(GPURUN_FAKES_DIR) + "/" + name; }

inline std::string current_directory() { return std::filesystem::current_path().string(); }

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Arguments written NUL-terminated, as the stand-in docker records them.
inline std::vector<std::string> split_nul(const std::string& raw) {
  std::vector<std::string> argv;
  std::size_t start = 0;
  for (std::size_t end; (end = raw.find('\0', start)) != std::string::npos; start = end + 1)
    argv.push_back(raw.substr(start, end - start));
  return argv;
}

// The GPUs of a --gpus value: "\"device=2,5\"" -> {2, 5}.
inline std::vector<int> gpu_devices(const std::string& gpus_value) {
  std::vector<int> ids;
  if (gpus_value.size() < 9) return ids;
  std::istringstream list(gpus_value.substr(8, gpus_value.size() - 9));
  for (std::string id; std::getline(list, id, ',');) ids.push_back(std::stoi(id));
  return ids;
}

class GpurunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The tests decide every GPURUN_* variable themselves.
    std::vector<std::string> inherited;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string_view(*e).starts_with("GPURUN_"))
        inherited.emplace_back(std::string_view(*e).substr(0, std::string_view(*e).find('=')));
    for (const auto& name : inherited) ::unsetenv(name.c_str());
    // Nor the tester's terminal: tables fit 80 columns unless a test sets COLUMNS.
    ::unsetenv("COLUMNS");
    ::unsetenv("NO_COLOR");
    // No engine socket: the stand-in docker client answers (tests of the Engine API start a real
    // dockerd of their own, tests/e2e/real_docker_engine.sh).
    ::setenv("DOCKER_HOST", "unix:///nonexistent/gpurun-e2e-docker.sock", 1);
    char pattern[] = "/tmp/gpurun-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // No host topology unless a test builds one (tests/support/fake_sysfs.hpp): never this machine's /sys.
    ::setenv("GPURUN_SYSFS_ROOT", (dir_ + "/no-sysfs").c_str(), 1);
    // Nor the admin's /etc/gpurun/config.json: a test that wants a system file writes this one.
    ::setenv("GPURUN_SYSTEM_CONFIG", system_config().c_str(), 1);
    // Nor the machine's gpurun service (status and ps would show its idle times).
    ::setenv("GPURUN_SERVICE_SOCKET", (dir_ + "/no-gpurund.sock").c_str(), 1);
    // Nor the machine's system log: a test that reads the lines listens there (audit_log_test.cpp).
    ::setenv("GPURUN_SYSLOG_SOCKET", (dir_ + "/no-syslog.sock").c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The system file every gpurun of the test reads in place of /etc/gpurun/config.json (none
  // unless the test writes it).
  std::string system_config() const { return dir_ + "/etc-gpurun-config.json"; }

  // Stand-ins for nvidia-smi (answering from `scenario_name`) and docker (recording its argv).
  Env fakes(const std::string& scenario_name, int docker_exit = 0) const {
    // The source is pinned: on a host with a driver, `auto` would ask the real NVML instead.
    return {{"GPURUN_GPU_SOURCE", "nvidia-smi"},
            {"GPURUN_NVIDIA_SMI", fake("nvidia-smi")},
            {"FAKE_SMI_SCENARIO", scenario(scenario_name)},
            {"GPURUN_DOCKER", fake("docker")},
            {"FAKE_DOCKER_ARGV", argv_file()},
            {"FAKE_DOCKER_EXIT", std::to_string(docker_exit)},
            {"GPURUN_LOCK_DIR", lock_dir()},
            {"XDG_CONFIG_HOME", dir_ + "/xdg"}};  // never the tester's own config
  }

  Outcome gpurun(const std::vector<std::string>& args, const Env& env = {}) const {
    ProcessSpec spec{{GPURUN_BINARY}, env};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    return finish(run_process(spec, std::chrono::seconds(60)));
  }

  // Runs a shell command line (for stdin redirection and for pasting --dry-run output).
  Outcome shell(const std::string& line, const Env& env = {}) const {
    return finish(run_process({{"/bin/sh", "-c", line}, env}, std::chrono::seconds(60)));
  }

  // The arguments the stand-in docker received (argv[0] left out), or empty when it did not run.
  std::vector<std::string> docker_argv() const {
    if (!std::filesystem::exists(argv_file())) return {};
    return split_nul(read_file(argv_file()));
  }
  bool docker_ran() const { return std::filesystem::exists(argv_file()); }

  std::string argv_file() const { return dir_ + "/docker.argv"; }
  std::string lock_dir() const { return dir_ + "/locks"; }
  const std::string& dir() const { return dir_; }

 private:
  static Outcome finish(const ProcessResult& result) {
    EXPECT_EQ(result.end, ProcessResult::End::exited) << result.err;
    return {result.exit_code, result.out, result.err};
  }
  std::string dir_;
};

}  // namespace gpurun::testing
