#include "gpurun/engine/cdi_specs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

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
    DIR* listing = ::opendir(dir.c_str());
    if (listing == nullptr) continue;
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(listing))
      if (spec_name(entry->d_name)) names.emplace_back(entry->d_name);
    ::closedir(listing);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names)
      if (names_nvidia_gpu(dir + "/" + name)) return dir + "/" + name;
  }
  return std::nullopt;
}

}  // namespace gpurun
