#include "support/test_support.hpp"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <fstream>
#include <sstream>

namespace gpurun::test {

namespace fs = std::filesystem;

namespace {
// Tests see no host topology unless they build one: sysfs is read under a root that does not
// exist, so this machine's own /sys never changes what gpurun asks or picks (gpurun/gpu/topology.hpp).
// A test that wants one sets GPURUN_SYSFS_ROOT itself (EnvGuard).
const bool kNoHostSysfs = ::setenv("GPURUN_SYSFS_ROOT", "/nonexistent/gpurun-tests-sysfs", 0) == 0;
}  // namespace

TempDir::TempDir(std::string_view label) {
  std::string pattern = (fs::path(::testing::TempDir()) / (std::string(label) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  // A test may have left a directory without write permission: give it back before removing.
  for (auto it = fs::recursive_directory_iterator(path_, ignored); it != fs::recursive_directory_iterator(); ++it)
    if (it->is_directory(ignored) && !it->is_symlink(ignored))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
  fs::remove_all(path_, ignored);
}

std::string write_file(const fs::path& path, std::string_view text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  EXPECT_TRUE(file.good()) << "cannot write " << path;
  return path.string();
}

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::ostringstream content;
  content << file.rdbuf();
  return content.str();
}

std::string write_script(const fs::path& path, std::string_view body) {
  write_file(path, "#!/bin/sh\n" + std::string(body) + (body.ends_with('\n') ? "" : "\n"));
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  return path.string();
}

EnvGuard::EnvGuard(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
  if (const char* old = ::getenv(name_.c_str())) old_ = old;
  if (value) {
    ::setenv(name_.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

EnvGuard::~EnvGuard() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

Gpu make_gpu(int index, std::optional<double> used_mib, std::optional<double> total_mib,
             std::optional<double> utilization_percent) {
  Gpu g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.name = "NVIDIA A100-SXM4-80GB";
  g.memory_used_mib = used_mib;
  g.memory_total_mib = total_mib;
  g.utilization_percent = utilization_percent;
  return g;
}

bool passes_in_child(const std::function<bool()>& check) {
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) try {
      ::_exit(check() ? 0 : 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ::_exit(2);
    }
  int status = 0;
  return ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

long peak_growth_kib(const std::function<void()>& work) {
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  work();
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  return after.ru_maxrss - before.ru_maxrss;
}

}  // namespace gpurun::test
