#include "gpurun/engine/cdi_specs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpurun/gpu/topology.hpp"
#include "gpurun/util/fd.hpp"

namespace gpurun {
namespace {

bool spec_name(std::string_view name) {
  return name.ends_with(".json") || name.ends_with(".yaml") || name.ends_with(".yml");
}

// Whether the file names the kind nvidia.com/gpu (in its first MiB: specs are a few KiB).
bool names_nvidia_gpu(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::string text(static_cast<std::size_t>(std::min<off_t>(st.st_size, 1 << 20)), '\0');
  const ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n <= 0) return false;
  text.resize(static_cast<std::size_t>(n));
  return text.find("nvidia.com/gpu") != std::string::npos;
}

}  // namespace

std::vector<std::string> default_cdi_spec_dirs() {
  std::string root = sysfs_root();
  while (!root.empty() && root.back() == '/') root.pop_back();
  return {root + "/etc/cdi", root + "/var/run/cdi"};
}

std::optional<std::string> nvidia_cdi_spec(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    std::error_code error;  // a directory missing or unreadable: no spec there
    std::vector<std::string> paths;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error))
      if (spec_name(entry.path().filename().string())) paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    for (const std::string& path : paths)
      if (names_nvidia_gpu(path)) return path;
  }
  return std::nullopt;
}

CdiSupport launch_cdi_support(ContainerEngine& engine, std::chrono::milliseconds timeout) {
  const std::vector<std::string> dirs = default_cdi_spec_dirs();
  if (engine.name() == "podman" || nvidia_cdi_spec(dirs)) return engine.cdi_support(timeout);
  return {false, fmt::format("no NVIDIA CDI spec in {}", fmt::join(dirs, " or "))};
}

}  // namespace gpurun
