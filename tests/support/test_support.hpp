#pragma once
// What many tests need and would otherwise each write again: a temporary directory, files and
// stand-in programs in it, an environment variable set for one test, the Error a call throws,
// and GPUs made by hand. Namespace gpurun::test.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpurun/gpu/gpu.hpp"
#include "gpurun/util/error.hpp"

namespace gpurun::test {

// A fresh directory (under the test framework's temporary directory), removed with all it holds
// when the owner goes.
class TempDir {
 public:
  explicit TempDir(std::string_view label = "gpurun-test");
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // A path inside the directory, as a string (it need not exist).
  std::string operator/(std::string_view relative) const { return (path_ / relative).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `text` to `path` (creating its parent directories) and returns the path.
std::string write_file(const std::filesystem::path& path, std::string_view text);

// The whole content of `path`, bytes as they are; fails the test when it cannot be read.
std::string read_file(const std::filesystem::path& path);

// A stand-in program: "#!/bin/sh" and `body` written to `path`, mode 0755. Returns the path.
std::string write_script(const std::filesystem::path& path, std::string_view body);

// Sets (or, with nullopt, unsets) an environment variable until the guard goes, then restores
// what was there before.
class EnvGuard {
 public:
  EnvGuard(std::string name, const std::optional<std::string>& value);
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  ~EnvGuard();

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// What a gpurun::Error said: its message and exit code. `thrown` is false when none came.
struct CaughtError {
  bool thrown = false;
  std::string message;
  int exit_code = 0;
};

// Calls `f` and returns the gpurun::Error it throws; fails the test when it throws none.
template <typename F>
CaughtError caught_error(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const Error& e) {
    return {true, e.what(), e.exit_code()};
  }
  ADD_FAILURE() << "no gpurun::Error was thrown";
  return {};
}

// A GPU as nvidia-smi would show it: uuid "GPU-<index>", named "NVIDIA A100-SXM4-80GB".
Gpu make_gpu(int index, std::optional<double> used_mib, std::optional<double> total_mib,
             std::optional<double> utilization_percent);

// Runs `check` in a forked child, whose peak resident set is its own, and answers whether it
// returned true (an exception is printed, and is false). `grown_kib` then tells the check how much
// the child's peak resident set grew while `work` ran.
bool passes_in_child(const std::function<bool()>& check);
long peak_growth_kib(const std::function<void()>& work);

}  // namespace gpurun::test
