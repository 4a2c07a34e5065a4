// Property tests: random GPU tables (a fixed-seed std::mt19937, so a failure reproduces), printed
// the four ways nvidia-smi prints CSV and parsed back; the ranking and the pick checked against
// properties that must hold for every table, not just the hand-picked ones.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/gpu/gpu.hpp"
#include "gpurun/select/selection.hpp"
#include "gpurun/util/error.hpp"
#include "smi/smi_csv.hpp"

namespace gpurun {
namespace {

constexpr std::uint32_t kSeed = 20261121;
constexpr int kCases = 300;

// What nvidia-smi prints for a value it cannot read (tests/data/README.md): never with a unit.
constexpr std::array<std::string_view, 7> kUnavailable{
    "[N/A]", "[Not Supported]", "[GPU is lost]", "[Unknown Error]", "[Insufficient Permissions]", "N/A", "[Not Found]"};
constexpr std::array<std::string_view, 6> kNames{
    "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090",
    "Tesla V100-SXM2-32GB",  "NVIDIA L40S",           "NVIDIA RTX A6000"};
constexpr std::array<double, 5> kTotals{24564, 32768, 40960, 46068, 81920};

// --format=csv (header, units), csv,nounits, csv,noheader and csv,noheader,nounits.
struct Format {
  bool header;
  bool units;
};
constexpr std::array<Format, 4> kFormats{{{true, true}, {true, false}, {false, true}, {false, false}}};

class Random {
 public:
  explicit Random(std::uint32_t seed) : engine_(seed) {}
  int between(int low, int high) { return std::uniform_int_distribution<int>(low, high)(engine_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(engine_); }
  template <typename T, std::size_t N>
  const T& one_of(const std::array<T, N>& items) {
    return items[static_cast<std::size_t>(between(0, static_cast<int>(N) - 1))];
  }
  std::string hex(int digits) {
    static constexpr std::string_view kHex = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < digits; ++i) out += kHex[static_cast<std::size_t>(between(0, 15))];
    return out;
  }
  std::string uuid() { return "GPU-" + hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12); }
  template <typename T>
  void shuffle(std::vector<T>& items) {
    std::shuffle(items.begin(), items.end(), engine_);
  }

 private:
  std::mt19937 engine_;
};

// A GPU as nvidia-smi would describe it: whole MiB and whole percent, any reading possibly missing.
Gpu random_gpu(Random& random, int index) {
  Gpu gpu;
  gpu.index = index;
  gpu.uuid = random.uuid();
  gpu.name = std::string(random.one_of(kNames));
  if (!random.chance(0.1)) gpu.memory_total_mib = random.one_of(kTotals);
  if (!random.chance(0.1)) {
    const int total = gpu.memory_total_mib ? static_cast<int>(*gpu.memory_total_mib) : 81920;
    // Idle GPUs read a few MiB; make those, and exact ties, common.
    gpu.memory_used_mib = random.chance(0.4) ? random.between(0, 8) : random.between(0, total);
  }
  if (!random.chance(0.15))
    gpu.utilization_percent = random.chance(0.4) ? random.between(0, 3) : random.between(0, 100);
  gpu.mig_enabled = random.chance(0.1);
  return gpu;
}

// A table of 1..16 GPUs with distinct indices, not necessarily 0..N-1 (nvidia-smi -i, snapshots).
std::vector<Gpu> random_table(Random& random) {
  std::vector<int> indices(24);
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int>(i);
  random.shuffle(indices);
  indices.resize(static_cast<std::size_t>(random.between(1, 16)));
  std::sort(indices.begin(), indices.end());
  std::vector<Gpu> gpus;
  for (int index : indices) gpus.push_back(random_gpu(random, index));
  return gpus;
}

void add_random_processes(Random& random, std::vector<Gpu>& gpus) {
  for (Gpu& gpu : gpus) {
    const int count = random.chance(0.7) ? 0 : random.between(1, 3);
    for (int i = 0; i < count; ++i) {
      GpuProcess p{gpu.uuid, random.between(1, 4'000'000), std::nullopt, {}};
      if (!random.chance(0.2)) p.used_memory_mib = random.between(0, 80000);
      gpu.processes.push_back(p);
    }
  }
}

std::string number(double value) { return std::to_string(static_cast<long long>(value)); }

std::string cell(Random& random, const std::optional<double>& value, bool units, std::string_view unit) {
  if (!value) return std::string(random.one_of(kUnavailable));
  return units ? number(*value) + " " + std::string(unit) : number(*value);
}

// Rows joined by ", " and ended by "\n" (by "\r\n" now and then, as nvidia-smi.exe writes them).
std::string print_gpu_csv(Random& random, const std::vector<Gpu>& gpus, Format format) {
  const std::string eol = random.chance(0.1) ? "\r\n" : "\n";
  std::string csv;
  if (format.header)
    csv += "index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], mig.mode.current" + eol;
  for (const Gpu& gpu : gpus) {
    const std::string mig = gpu.mig_enabled ? "Enabled" : random.chance(0.5) ? "Disabled" : "[N/A]";
    csv += std::to_string(gpu.index) + ", " + gpu.uuid + ", " + gpu.name + ", " +
           cell(random, gpu.memory_used_mib, format.units, "MiB") + ", " +
           cell(random, gpu.memory_total_mib, format.units, "MiB") + ", " +
           cell(random, gpu.utilization_percent, format.units, "%") + ", " + mig + eol;
  }
  return csv;
}

std::string print_compute_apps_csv(Random& random, const std::vector<GpuProcess>& processes, Format format) {
  std::string csv = format.header ? "gpu_uuid, pid, used_gpu_memory [MiB]\n" : "";
  for (const GpuProcess& p : processes)
    csv +=
        p.gpu_uuid + ", " + std::to_string(p.pid) + ", " + cell(random, p.used_memory_mib, format.units, "MiB") + "\n";
  return csv;
}

std::string describe(Format format) {
  return std::string(format.header ? "header" : "noheader") + (format.units ? ", units" : ", nounits");
}

void expect_same_gpus(const std::vector<Gpu>& parsed, const std::vector<Gpu>& expected) {
  ASSERT_EQ(parsed.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("GPU " + std::to_string(expected[i].index));
    EXPECT_EQ(parsed[i].index, expected[i].index);
    EXPECT_EQ(parsed[i].uuid, expected[i].uuid);
    EXPECT_EQ(parsed[i].name, expected[i].name);
    EXPECT_EQ(parsed[i].memory_used_mib, expected[i].memory_used_mib);
    EXPECT_EQ(parsed[i].memory_total_mib, expected[i].memory_total_mib);
    EXPECT_EQ(parsed[i].utilization_percent, expected[i].utilization_percent);
    EXPECT_EQ(parsed[i].mig_enabled, expected[i].mig_enabled);
  }
}

Thresholds random_thresholds(Random& random) {
  Thresholds t;
  t.max_utilization_percent = random.between(0, 100);
  t.max_memory = random.chance(0.5)
                     ? MemoryLimit{MemoryLimit::Kind::percent, static_cast<double>(random.between(0, 100))}
                     : MemoryLimit{MemoryLimit::Kind::mib, static_cast<double>(random.between(0, 20000))};
  return t;
}

std::vector<int> indices_of(const std::vector<GpuAssessment>& assessed) {
  std::vector<int> indices;
  for (const auto& a : assessed) indices.push_back(a.gpu.index);
  return indices;
}

// `a` is ranked before `b`: a lower score, or the same score and a lower index.
bool ranks_before(const GpuAssessment& a, const GpuAssessment& b) {
  return a.score < b.score || (a.score == b.score && a.gpu.index < b.gpu.index);
}

TEST(Property, GpuTablesSurviveEveryCsvFormatOfNvidiaSmi) {
  Random random(kSeed);
  for (int n = 0; n < kCases; ++n) {
    const std::vector<Gpu> gpus = random_table(random);
    for (const Format format : kFormats) {
      const std::string csv = print_gpu_csv(random, gpus, format);
      SCOPED_TRACE("case " + std::to_string(n) + " (" + describe(format) + "):\n" + csv);
      std::vector<Gpu> parsed;
      ASSERT_NO_THROW(parsed = parse_gpu_csv(csv));
      expect_same_gpus(parsed, gpus);
      if (HasFailure()) return;  // one table printed is enough to debug
    }
  }
}

TEST(Property, HeaderColumnsMayComeInAnyOrder) {
  Random random(kSeed + 1);
  std::vector<std::string_view> columns(kGpuQueryFields.begin(), kGpuQueryFields.end());
  for (int n = 0; n < kCases; ++n) {
    const std::vector<Gpu> gpus = random_table(random);
    random.shuffle(columns);
    std::string csv;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const bool has_unit =
          columns[c] == "memory.used" || columns[c] == "memory.total" || columns[c] == "utilization.gpu";
      csv += (c == 0 ? "" : ", ") + std::string(columns[c]) +
             (has_unit ? (columns[c] == "utilization.gpu" ? " [%]" : " [MiB]") : "");
    }
    csv += "\n";
    for (const Gpu& gpu : gpus) {
      for (std::size_t c = 0; c < columns.size(); ++c) {
        const std::string_view f = columns[c];
        const std::string value = f == "index"             ? std::to_string(gpu.index)
                                  : f == "uuid"            ? gpu.uuid
                                  : f == "name"            ? gpu.name
                                  : f == "memory.used"     ? cell(random, gpu.memory_used_mib, true, "MiB")
                                  : f == "memory.total"    ? cell(random, gpu.memory_total_mib, false, "MiB")
                                  : f == "utilization.gpu" ? cell(random, gpu.utilization_percent, true, "%")
                                                           : std::string(gpu.mig_enabled ? "Enabled" : "Disabled");
        csv += (c == 0 ? "" : ", ") + value;
      }
      csv += "\n";
    }
    SCOPED_TRACE("case " + std::to_string(n) + ":\n" + csv);
    std::vector<Gpu> parsed;
    ASSERT_NO_THROW(parsed = parse_gpu_csv(csv));
    expect_same_gpus(parsed, gpus);
    if (HasFailure()) return;
  }
}

TEST(Property, ComputeAppsSurviveEveryCsvFormatOfNvidiaSmi) {
  Random random(kSeed + 2);
  for (int n = 0; n < kCases; ++n) {
    std::vector<Gpu> gpus = random_table(random);
    add_random_processes(random, gpus);
    std::vector<GpuProcess> processes;
    for (const Gpu& gpu : gpus) processes.insert(processes.end(), gpu.processes.begin(), gpu.processes.end());
    random.shuffle(processes);
    for (const Format format : kFormats) {
      const std::string csv = print_compute_apps_csv(random, processes, format);
      SCOPED_TRACE("case " + std::to_string(n) + " (" + describe(format) + "):\n" + csv);
      std::vector<GpuProcess> parsed;
      ASSERT_NO_THROW(parsed = parse_compute_apps_csv(csv));
      ASSERT_EQ(parsed.size(), processes.size());
      for (std::size_t i = 0; i < processes.size(); ++i) {
        EXPECT_EQ(parsed[i].gpu_uuid, processes[i].gpu_uuid);
        EXPECT_EQ(parsed[i].pid, processes[i].pid);
        EXPECT_EQ(parsed[i].used_memory_mib, processes[i].used_memory_mib);
      }
      // Joined onto the table again, every GPU gets back its own processes.
      std::vector<Gpu> joined = gpus;
      for (Gpu& gpu : joined) gpu.processes.clear();
      attach_processes(joined, parsed);
      for (std::size_t g = 0; g < gpus.size(); ++g) EXPECT_EQ(joined[g].processes.size(), gpus[g].processes.size());
      if (HasFailure()) return;
    }
  }
}

TEST(Property, RankingAndPickDoNotDependOnRowOrder) {
  Random random(kSeed + 3);
  for (int n = 0; n < kCases; ++n) {
    std::vector<Gpu> gpus = random_table(random);
    add_random_processes(random, gpus);
    const Thresholds thresholds = random_thresholds(random);
    const int count = random.between(1, static_cast<int>(gpus.size()));
    const bool allow_busy = random.chance(0.5);
    std::vector<Gpu> shuffled = gpus;
    random.shuffle(shuffled);
    SCOPED_TRACE("case " + std::to_string(n));

    const auto in_order = assess(gpus, thresholds);
    const auto out_of_order = assess(shuffled, thresholds);
    EXPECT_EQ(indices_of(ranked(in_order)), indices_of(ranked(out_of_order)));

    // The same through the CSV path: rows printed in another order pick the same GPUs.
    const auto reparsed = assess(parse_gpu_csv(print_gpu_csv(random, shuffled, random.one_of(kFormats))), thresholds);
    std::optional<std::vector<int>> picked[3];
    const std::vector<GpuAssessment>* tables[3] = {&in_order, &out_of_order, &reparsed};
    for (std::size_t t = 0; t < 3; ++t) {
      try {
        picked[t] = indices_of(pick(*tables[t], count, allow_busy).gpus_or_throw());
      } catch (const Error&) {
      }
    }
    // reparsed has no processes (the CSV carries none): compare it only where none were made.
    EXPECT_EQ(picked[0], picked[1]);
    const bool any_process = std::any_of(gpus.begin(), gpus.end(), [](const Gpu& g) { return !g.processes.empty(); });
    if (!any_process) {
      EXPECT_EQ(picked[0], picked[2]);
    }
    if (HasFailure()) return;
  }
}

TEST(Property, TheChosenAreNeverBusierThanOneLeftOut) {
  Random random(kSeed + 4);
  int picks = 0;
  for (int n = 0; n < kCases; ++n) {
    std::vector<Gpu> gpus = random_table(random);
    add_random_processes(random, gpus);
    const auto assessed = assess(gpus, random_thresholds(random));
    const int count = random.between(1, static_cast<int>(gpus.size()));
    const bool allow_busy = random.chance(0.5);
    const auto free_count = static_cast<std::size_t>(
        std::count_if(assessed.begin(), assessed.end(), [](const GpuAssessment& a) { return a.free; }));
    SCOPED_TRACE("case " + std::to_string(n) + ": pick " + std::to_string(count) + (allow_busy ? " --allow-busy" : ""));

    // MIG-enabled GPUs are never handed out whole, not even with --allow-busy.
    const auto whole_count = static_cast<std::size_t>(
        std::count_if(assessed.begin(), assessed.end(), [](const GpuAssessment& a) { return !a.gpu.mig_enabled; }));
    const PickResult result = pick(assessed, count, allow_busy);
    if (!result.ok()) {
      EXPECT_TRUE(!allow_busy || whole_count < static_cast<std::size_t>(count));
      EXPECT_LT(allow_busy ? whole_count : free_count, static_cast<std::size_t>(count));
      EXPECT_EQ(result.available, allow_busy ? whole_count : free_count);
      EXPECT_TRUE(result.chosen.empty());
      continue;
    }
    const std::vector<GpuAssessment>& chosen = result.chosen;
    ++picks;
    ASSERT_EQ(chosen.size(), static_cast<std::size_t>(count));
    EXPECT_TRUE(std::is_sorted(chosen.begin(), chosen.end(),
                               [](const auto& a, const auto& b) { return a.gpu.index < b.gpu.index; }));
    const std::vector<int> chosen_indices = indices_of(chosen);
    for (const GpuAssessment& c : chosen) {
      if (!allow_busy) {
        EXPECT_TRUE(c.free) << "GPU " << c.gpu.index << " was chosen but is busy";
      }
      for (const GpuAssessment& o : assessed) {
        const bool left_out =
            std::find(chosen_indices.begin(), chosen_indices.end(), o.gpu.index) == chosen_indices.end();
        if (!left_out || (!allow_busy && !o.free) || o.gpu.mig_enabled) continue;  // MIG: never handed out whole
        EXPECT_TRUE(ranks_before(c, o)) << "chose GPU " << c.gpu.index << " (score " << c.score << ") over GPU "
                                        << o.gpu.index << " (score " << o.score << ")";
      }
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(picks, kCases / 4);  // the generator makes enough tables that can be picked from
}

TEST(Property, ScoresStayWithinZeroToHundredAndBusyHasAReason) {
  Random random(kSeed + 5);
  for (int n = 0; n < kCases; ++n) {
    std::vector<Gpu> gpus = random_table(random);
    add_random_processes(random, gpus);
    for (const GpuAssessment& a : assess(gpus, random_thresholds(random))) {
      EXPECT_GE(a.score, 0.0);
      EXPECT_LE(a.score, 100.0);
      EXPECT_EQ(a.free, a.reasons.empty());
      // Memory unknown on every GPU (unified memory) is judged by processes and utilization instead.
      const bool unified =
          std::none_of(gpus.begin(), gpus.end(), [](const Gpu& g) { return g.memory_used_mib || g.memory_total_mib; });
      if (!a.gpu.processes.empty() || a.gpu.mig_enabled || (!a.gpu.memory_used_mib && !unified)) {
        EXPECT_FALSE(a.free);
      }
    }
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace gpurun
