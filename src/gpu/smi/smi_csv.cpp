#include "smi/smi_csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"

namespace gpurun {
namespace {

using text::Line;

// nvidia-smi prints "[N/A]", "[Not Supported]", "[GPU is lost]", ... for values it cannot read;
// old drivers print a bare "N/A". All of them mean "missing".
bool is_unavailable(std::string_view value) {
  value = text::trim(value);
  if (value.empty()) return true;
  if (value.front() == '[' && value.back() == ']') return true;
  return text::equals_ignoring_case(value, "n/a");
}

[[noreturn]] void fail(const Line& line, const std::string& what) {
  throw Error(fmt::format("nvidia-smi output, line {}: {} (line: \"{}\")", line.number, what,
                          text::printable(text::trim(line.text))));
}

// A column name from a header cell: "memory.used [MiB]" -> name "memory.used", unit "MiB".
struct HeaderColumn {
  std::string name;
  std::string unit;
};

HeaderColumn parse_header_cell(std::string_view cell) {
  cell = text::trim(cell);
  HeaderColumn column;
  const auto open = cell.find('[');
  if (open != std::string_view::npos && cell.back() == ']') {
    column.unit = std::string(text::trim(cell.substr(open + 1, cell.size() - open - 2)));
    cell = text::trim(cell.substr(0, open));
  }
  column.name = text::to_lower(cell);
  return column;
}

// Field names as nvidia-smi accepts them, mapped to the names gpurun uses.
std::string canonical_field(const std::string& name) {
  static const std::map<std::string, std::string, std::less<>> aliases{
      {"gpu_uuid", "uuid"}, {"gpu_name", "name"}, {"used_gpu_memory", "used_memory"}};
  const auto it = aliases.find(name);
  return it == aliases.end() ? name : it->second;
}

// MiB per unit for memory values; nvidia-smi always prints MiB, recorded snapshots may not.
std::optional<double> mib_per_unit(std::string_view unit) {
  if (unit.empty() || text::equals_ignoring_case(unit, "mib")) return 1.0;
  if (text::equals_ignoring_case(unit, "gib")) return 1024.0;
  if (text::equals_ignoring_case(unit, "kib")) return 1.0 / 1024.0;
  return std::nullopt;
}

constexpr double kMaxMemoryMib = 1024.0 * 1024 * 1024;  // a PiB

std::optional<double> parse_memory(const Line& line, std::string_view field, std::string_view cell,
                                   std::string_view header_unit) {
  if (is_unavailable(cell)) return std::nullopt;
  const auto [number, value_unit] = text::split_unit(cell);
  const auto value = text::parse_double(number);
  if (!value || *value < 0)
    fail(line, fmt::format("{} is \"{}\", not an amount of memory", field, text::printable(text::trim(cell))));
  const auto scale = mib_per_unit(value_unit.empty() ? header_unit : value_unit);
  if (!scale) fail(line, fmt::format("{} has unit \"{}\"; expected MiB", field, text::printable(value_unit)));
  // More than a petabyte is no GPU's: a broken answer, which would overflow what counts it.
  if (!(*value * *scale <= kMaxMemoryMib)) fail(line, fmt::format("{} is too large", field));
  return *value * *scale;
}

std::optional<double> parse_percent(const Line& line, std::string_view field, std::string_view cell) {
  if (is_unavailable(cell)) return std::nullopt;
  const auto [number, unit] = text::split_unit(cell);
  const auto value = text::parse_double(number);
  if (!value || *value < 0 || *value > 100)
    fail(line, fmt::format("{} is \"{}\", not a percentage (0 to 100)", field, text::printable(text::trim(cell))));
  if (!unit.empty() && unit != "%")
    fail(line, fmt::format("{} has unit \"{}\"; expected %", field, text::printable(unit)));
  return *value;
}

// A sensor's reading (power in W, temperature in C): a finite number, its unit the one expected or none.
std::optional<double> parse_reading(const Line& line, std::string_view field, std::string_view cell,
                                    std::string_view expected_unit) {
  if (is_unavailable(cell)) return std::nullopt;
  const auto [number, unit] = text::split_unit(cell);
  const auto value = text::parse_double(number);
  if (!value || !std::isfinite(*value) || *value < -300 || *value > 1e6)
    fail(line, fmt::format("{} is \"{}\", not a reading", field, text::printable(text::trim(cell))));
  if (!unit.empty() && !text::equals_ignoring_case(unit, expected_unit))
    fail(line, fmt::format("{} has unit \"{}\"; expected {}", field, text::printable(unit), expected_unit));
  return *value;
}

long long parse_count(const Line& line, std::string_view field, std::string_view cell) {
  const auto value = text::parse_integer(text::trim(cell));
  if (!value || *value < 0 || *value > 1'000'000'000)
    fail(line, fmt::format("{} is \"{}\", not a non-negative integer", field, text::printable(text::trim(cell))));
  return *value;
}

std::string parse_string(std::string_view cell) {
  return is_unavailable(cell) ? std::string{} : std::string(text::trim(cell));
}

// Maps column positions to field names, from a header or from the documented default order.
class ColumnMap {
 public:
  static ColumnMap defaults(std::span<const std::string_view> fields) {
    ColumnMap map;
    for (std::string_view field : fields) map.columns_.push_back({canonical_field(std::string(field)), ""});
    return map;
  }

  static ColumnMap from_header(const Line& line, const std::vector<std::string_view>& cells) {
    ColumnMap map;
    std::set<std::string> seen;
    for (std::string_view cell : cells) {
      HeaderColumn column = parse_header_cell(cell);
      column.name = canonical_field(column.name);
      if (!column.name.empty() && !seen.insert(column.name).second)
        fail(line, fmt::format("the header names column \"{}\" twice", column.name));
      map.columns_.push_back(std::move(column));
    }
    return map;
  }

  std::size_t size() const { return columns_.size(); }
  std::optional<std::size_t> position(std::string_view name) const {
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (columns_[i].name == name) return i;
    return std::nullopt;
  }
  const std::string& unit(std::size_t position) const { return columns_[position].unit; }

  std::string names() const {
    std::string out;
    for (const auto& c : columns_) out += (out.empty() ? "" : ", ") + c.name;
    return out;
  }

 private:
  std::vector<HeaderColumn> columns_;
};

// A line is a header when one of its cells names a known field.
template <std::size_t N>
bool is_header(const std::vector<std::string_view>& cells, const std::array<std::string_view, N>& fields) {
  std::array<std::string, N> known;
  std::transform(fields.begin(), fields.end(), known.begin(),
                 [](std::string_view field) { return canonical_field(std::string(field)); });
  return std::any_of(cells.begin(), cells.end(), [&](std::string_view cell) {
    const std::string name = canonical_field(parse_header_cell(cell).name);
    return std::find(known.begin(), known.end(), name) != known.end();
  });
}

// The columns of `lines`: named by the header line when there is one (its rows start at
// `first_row` 1), else `defaults` in order.
struct Columns {
  ColumnMap map;  // cppcheck-suppress unusedStructMember ; read through structured bindings
  std::size_t first_row = 0;
};
template <std::size_t N>
Columns columns_of(const std::vector<Line>& lines, std::span<const std::string_view> defaults,
                   const std::array<std::string_view, N>& known) {
  if (const auto cells = text::split(lines[0].text, ','); is_header(cells, known))
    return {ColumnMap::from_header(lines[0], cells), 1};
  return {ColumnMap::defaults(defaults), 0};
}

std::size_t required(const ColumnMap& map, const Line& line, std::string_view name) {
  const auto position = map.position(name);
  if (!position) fail(line, fmt::format("the header has no \"{}\" column", name));
  return *position;
}

void check_column_count(const ColumnMap& map, const Line& line, std::size_t found) {
  if (found != map.size())
    fail(line, fmt::format("expected {} columns ({}) but found {}", map.size(), map.names(), found));
}

// The lines that are rows (or the header): lost-GPU and warning lines go to `table` instead.
std::vector<Line> data_lines(std::string_view input, GpuTable& table) {
  std::vector<Line> lines;
  for (const Line& line : text::non_blank_lines(input)) {
    if (auto lost = parse_lost_gpu_line(line.text)) {
      table.lost.push_back(std::move(*lost));
    } else if (is_warning_line(line.text)) {
      table.warnings.push_back(text::printable(text::trim(line.text), 300));
    } else {
      lines.push_back(line);
    }
  }
  return lines;
}

}  // namespace

std::optional<LostGpu> parse_lost_gpu_line(std::string_view line) {
  line = text::trim(line);
  // Linux says "determine", Windows "detect"; some drivers put a space before the bus id.
  std::string_view rest;
  for (std::string_view prefix :
       {"unable to determine the device handle for gpu", "unable to detect the device handle for gpu"})
    if (text::starts_with_ignoring_case(line, prefix)) rest = text::trim(line.substr(prefix.size()));
  if (rest.empty()) return std::nullopt;
  const auto colon = rest.find(": ");  // the bus id has colons of its own, never followed by a space
  LostGpu lost;
  lost.pci_bus_id = text::printable(text::trim(rest.substr(0, colon)), 64);
  lost.error = colon == std::string_view::npos ? "" : text::printable(text::trim(rest.substr(colon + 2)), 200);
  return lost;
}

bool is_warning_line(std::string_view line) { return text::starts_with_ignoring_case(text::trim(line), "warning:"); }

std::vector<Gpu> parse_gpu_csv(std::string_view input) { return parse_gpu_table(input).gpus; }

GpuTable parse_gpu_table(std::string_view input, std::span<const std::string_view> columns) {
  GpuTable table;
  const std::vector<Line> lines = data_lines(input, table);
  std::vector<Gpu>& gpus = table.gpus;
  if (lines.empty()) return table;

  const auto [map, first_row] = columns_of(lines, columns, kGpuQueryFields);
  const std::size_t index_col = required(map, lines[0], "index");
  const std::size_t used_col = required(map, lines[0], "memory.used");
  const std::size_t total_col = required(map, lines[0], "memory.total");
  const auto uuid_col = map.position("uuid");
  const auto name_col = map.position("name");
  const auto util_col = map.position("utilization.gpu");
  const auto mig_col = map.position("mig.mode.current");
  const auto bus_col = map.position(kPciBusIdField);
  const auto power_col = map.position("power.draw");
  const auto temperature_col = map.position("temperature.gpu");

  std::set<long long> indices;
  for (std::size_t i = first_row; i < lines.size(); ++i) {
    const Line& line = lines[i];
    const std::vector<std::string_view> cells = text::split(line.text, ',');
    check_column_count(map, line, cells.size());

    Gpu gpu;
    const long long index = parse_count(line, "index", cells[index_col]);
    if (index > 1'000'000 || !indices.insert(index).second)
      fail(line, fmt::format("GPU index {} appears twice or is out of range", index));
    gpu.index = static_cast<int>(index);
    if (uuid_col) gpu.uuid = parse_string(cells[*uuid_col]);
    if (name_col) gpu.name = parse_string(cells[*name_col]);
    gpu.memory_used_mib = parse_memory(line, "memory.used", cells[used_col], map.unit(used_col));
    gpu.memory_total_mib = parse_memory(line, "memory.total", cells[total_col], map.unit(total_col));
    if (util_col) gpu.utilization_percent = parse_percent(line, "utilization.gpu", cells[*util_col]);
    if (mig_col) gpu.mig_enabled = text::equals_ignoring_case(text::trim(cells[*mig_col]), "enabled");
    if (bus_col) gpu.pci_bus_id = text::printable(parse_string(cells[*bus_col]), 64);
    if (power_col) gpu.power_draw_w = parse_reading(line, "power.draw", cells[*power_col], "W");
    if (temperature_col) gpu.temperature_c = parse_reading(line, "temperature.gpu", cells[*temperature_col], "C");
    gpus.push_back(std::move(gpu));
  }
  return table;
}

std::vector<GpuProcess> parse_compute_apps_csv(std::string_view input) {
  std::vector<GpuProcess> processes;
  GpuTable ignored;  // a lost GPU or a warning here is also in the --query-gpu answer
  const std::vector<Line> lines = data_lines(input, ignored);
  if (lines.empty()) return processes;

  const auto [map, first_row] = columns_of(lines, kComputeAppFields, kComputeAppFields);
  const std::size_t uuid_col = required(map, lines[0], "uuid");
  const std::size_t pid_col = required(map, lines[0], "pid");
  const auto memory_col = map.position("used_memory");

  for (std::size_t i = first_row; i < lines.size(); ++i) {
    const Line& line = lines[i];
    // Some drivers print this instead of nothing when no process runs.
    if (text::starts_with_ignoring_case(text::trim(line.text), "no running")) continue;
    const std::vector<std::string_view> cells = text::split(line.text, ',');
    check_column_count(map, line, cells.size());

    GpuProcess process;
    process.gpu_uuid = parse_string(cells[uuid_col]);
    if (!is_unavailable(cells[pid_col])) process.pid = parse_count(line, "pid", cells[pid_col]);
    if (memory_col)
      process.used_memory_mib = parse_memory(line, "used_memory", cells[*memory_col], map.unit(*memory_col));
    processes.push_back(std::move(process));
  }
  return processes;
}

void attach_processes(std::vector<Gpu>& gpus, const std::vector<GpuProcess>& processes) {
  std::unordered_map<std::string_view, Gpu*> by_uuid;  // linear, not GPUs x processes
  for (Gpu& gpu : gpus)
    if (!gpu.uuid.empty()) by_uuid.emplace(gpu.uuid, &gpu);
  for (const GpuProcess& process : processes)
    if (const auto it = by_uuid.find(process.gpu_uuid); it != by_uuid.end()) it->second->processes.push_back(process);
}

}  // namespace gpurun
