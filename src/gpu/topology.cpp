#include "gpurun/gpu/topology.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "gpurun/util/text.hpp"
#include "gpurun/util/whole_file.hpp"

namespace gpurun {
namespace {

bool is_hex(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// The first line of a small sysfs file, trimmed; nullopt when it cannot be read.
std::optional<std::string> read_line(const std::filesystem::path& path) {
  // Bounded and regular: a tree under GPURUN_SYSFS_ROOT may hold anything.
  const BoundedRead file = read_bounded(path.string(), std::size_t{64} << 10, FileKinds::regular_only);
  if (!file.text) return std::nullopt;
  return std::string(text::trim(std::string_view(*file.text).substr(0, file.text->find('\n'))));
}

std::optional<int> read_int(const std::filesystem::path& path) {
  const auto line = read_line(path);
  if (!line) return std::nullopt;
  const auto value = text::parse_integer(*line);
  if (!value || *value < -1 || *value > 1'000'000) return std::nullopt;
  return static_cast<int>(*value);
}

std::filesystem::path under(const std::string& root, std::string_view path) {
  return std::filesystem::path(root) / std::filesystem::path(path).relative_path();
}

// The matrix's words, without the underline escapes nvidia-smi puts around its header.
std::vector<std::string> words(std::string_view line) {
  std::string clean;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i])) == 0) ++i;
      continue;
    }
    clean += line[i];
  }
  std::vector<std::string> out;
  std::istringstream stream(clean);
  for (std::string word; stream >> word;) out.push_back(word);
  return out;
}

// "GPU3" -> 3.
std::optional<int> gpu_label(std::string_view word) {
  if (!word.starts_with("GPU") || word.size() == 3) return std::nullopt;
  const auto value = text::parse_integer(word.substr(3));
  if (!value || *value < 0 || *value > 100'000) return std::nullopt;
  return static_cast<int>(*value);
}

}  // namespace

std::string sysfs_root() {
  const char* root = std::getenv("GPURUN_SYSFS_ROOT");
  return root != nullptr && *root != '\0' ? root : "/";
}

bool pci_sysfs_readable(const std::string& root) {
  std::error_code error;
  return std::filesystem::is_directory(under(root, "/sys/bus/pci/devices"), error);
}

std::string sysfs_pci_bus_id(std::string_view bus_id) {
  const auto parts = text::split(text::trim(bus_id), ':');
  if (parts.size() < 2 || parts.size() > 3) return {};
  std::string domain = parts.size() == 3 ? std::string(parts[0]) : "0000";
  const std::string_view bus = parts[parts.size() - 2];
  const auto device_function = text::split(parts.back(), '.');
  if (device_function.size() != 2 || !is_hex(domain) || !is_hex(bus) || bus.size() > 2 || !is_hex(device_function[0]) ||
      device_function[0].size() > 2 || !is_hex(device_function[1]) || device_function[1].size() != 1)
    return {};
  // nvidia-smi prints 8 domain digits, sysfs 4: the upper ones are zero on every host gpurun meets.
  while (domain.size() > 4 && domain.front() == '0') domain.erase(0, 1);
  if (domain.size() < 4) domain.insert(0, 4 - domain.size(), '0');
  return text::to_lower(fmt::format("{}:{:0>2}:{:0>2}.{}", domain, bus, device_function[0], device_function[1]));
}

std::optional<std::set<int>> parse_cpulist(std::string_view list) {
  std::set<int> cpus;
  list = text::trim(list);
  if (list.empty()) return std::nullopt;
  // The kernel counts at most 8192 CPUs: a list naming more (ranges repeated) is no CPU list,
  // and following it would cost seconds.
  constexpr long long kMaxCpus = 8192;
  long long named = 0;
  for (std::string_view part : text::split(list, ',')) {
    const auto ends = text::split(text::trim(part), '-');
    if (ends.empty() || ends.size() > 2) return std::nullopt;
    const auto first = text::parse_integer(ends.front());
    const auto last = text::parse_integer(ends.back());
    if (!first || !last || *first < 0 || *last < *first || *last >= kMaxCpus) return std::nullopt;
    named += *last - *first + 1;
    if (named > kMaxCpus) return std::nullopt;
    for (long long cpu = *first; cpu <= *last; ++cpu) cpus.insert(static_cast<int>(cpu));
  }
  return cpus;
}

std::string format_cpulist(const std::set<int>& cpus) {
  std::string list;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != cpus.end() && *it == last + 1; ++it) last = *it;
    list += fmt::format("{}{}", list.empty() ? "" : ",",
                        first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last));
  }
  return list;
}

void locate_gpus(std::vector<Gpu>& gpus, const std::string& root) {
  for (Gpu& gpu : gpus) {
    const std::string id = sysfs_pci_bus_id(gpu.pci_bus_id);
    if (id.empty()) continue;
    const auto device = under(root, "/sys/bus/pci/devices") / id;
    if (const auto node = read_int(device / "numa_node"); node && *node >= 0) gpu.numa_node = node;
    std::optional<std::string> cpus = read_line(device / "local_cpulist");
    if ((!cpus || !parse_cpulist(*cpus)) && gpu.numa_node)
      cpus = read_line(under(root, fmt::format("/sys/devices/system/node/node{}/cpulist", *gpu.numa_node)));
    const auto parsed = cpus ? parse_cpulist(*cpus) : std::nullopt;
    if (!parsed) continue;
    gpu.local_cpus = format_cpulist(*parsed);
    gpu.socket = read_int(
        under(root, fmt::format("/sys/devices/system/cpu/cpu{}/topology/physical_package_id", *parsed->begin())));
    if (gpu.socket && *gpu.socket < 0) gpu.socket.reset();
  }
}

std::optional<int> nvidia_device_minor(const Gpu& gpu, const std::string& root) {
  const std::string id = sysfs_pci_bus_id(gpu.pci_bus_id);
  if (id.empty()) return std::nullopt;
  const BoundedRead file = read_bounded((under(root, "/proc/driver/nvidia/gpus") / id / "information").string(),
                                        std::size_t{64} << 10, FileKinds::regular_only);
  if (!file.text) return std::nullopt;
  for (const auto& line : text::non_blank_lines(*file.text)) {
    if (!line.text.starts_with("Device Minor:")) continue;
    const auto minor = text::parse_integer(text::trim(line.text.substr(13)));
    if (minor && *minor >= 0 && *minor < 1'000'000) return static_cast<int>(*minor);
  }
  return std::nullopt;
}

std::optional<MigCapMinors> mig_cap_minors(int gpu_minor, int gpu_instance_id, int compute_instance_id,
                                           const std::string& root) {
  const BoundedRead file = read_bounded(under(root, "/proc/driver/nvidia-caps/mig-minors").string(),
                                        std::size_t{256} << 10, FileKinds::regular_only);
  if (!file.text) return std::nullopt;
  const std::string gi = fmt::format("gpu{}/gi{}/access", gpu_minor, gpu_instance_id);
  const std::string ci = fmt::format("gpu{}/gi{}/ci{}/access", gpu_minor, gpu_instance_id, compute_instance_id);
  std::optional<int> gi_minor;
  std::optional<int> ci_minor;
  for (const auto& line : text::non_blank_lines(*file.text)) {
    const std::string_view row = text::trim(line.text);
    const std::size_t space = row.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view name = row.substr(0, space);
    const auto minor = text::parse_integer(text::trim(row.substr(space + 1)));
    if (!minor || *minor < 0 || *minor >= 1'000'000) continue;
    if (name == gi) gi_minor = static_cast<int>(*minor);
    if (name == ci) ci_minor = static_cast<int>(*minor);
  }
  if (!gi_minor || !ci_minor) return std::nullopt;
  return MigCapMinors{.gpu_instance = *gi_minor, .compute_instance = *ci_minor};
}

std::vector<GpuLink> parse_topo_matrix(std::string_view output) {
  std::vector<int> columns;  // the GPU of each leading matrix column
  std::map<std::pair<int, int>, std::string> kinds;
  for (const auto& line : text::non_blank_lines(output)) {
    const std::vector<std::string> w = words(line.text);
    if (w.empty()) continue;
    if (w.front().starts_with("Legend")) break;
    const auto row = gpu_label(w.front());
    if (!row) continue;
    if (columns.empty()) {
      // The header: GPU0 GPU1 ... then NICs and the affinity columns. A row's second word is a link.
      if (w.size() > 1 && (w[1] == "X" || link_rank(w[1]) > 0)) continue;
      for (const std::string& word : w) {
        const auto column = gpu_label(word);
        if (!column) break;
        columns.push_back(*column);
      }
      continue;
    }
    for (std::size_t c = 0; c < columns.size() && c + 1 < w.size(); ++c) {
      const int other = columns[c];
      if (other == *row || w[c + 1] == "X") continue;
      kinds.try_emplace({std::min(*row, other), std::max(*row, other)}, w[c + 1]);
    }
  }
  std::vector<GpuLink> links;
  links.reserve(kinds.size());
  for (const auto& [pair, kind] : kinds) links.push_back({pair.first, pair.second, kind});
  return links;
}

int link_rank(std::string_view kind) {
  if (kind.starts_with("NV") && kind.size() > 2) {
    const auto count = text::parse_integer(kind.substr(2));
    if (count && *count > 0 && *count < 1000) return 100 + static_cast<int>(*count);
  }
  static const std::map<std::string_view, int> pcie{{"PIX", 6},  {"PXB", 5}, {"PHB", 4},
                                                    {"NODE", 3}, {"SYS", 2}, {"SOC", 2}};
  const auto it = pcie.find(kind);
  return it == pcie.end() ? 0 : it->second;
}

ProcessSpec topo_query(const std::string& nvidia_smi) { return {{nvidia_smi, "topo", "-m"}, {}}; }

std::vector<GpuLink> read_gpu_links(const std::string& nvidia_smi, std::chrono::milliseconds timeout) {
  const ProcessSpec spec = topo_query(nvidia_smi);
  const ProcessResult result = run_process(spec, timeout);
  if (!result.succeeded()) {
    spdlog::debug("{} topo -m {}: GPU links unknown, sets are not ordered by them", nvidia_smi,
                  describe_end(result, timeout));
    return {};
  }
  return parse_topo_matrix(result.out);
}

}  // namespace gpurun
