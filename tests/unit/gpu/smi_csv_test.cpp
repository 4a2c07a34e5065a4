// Unit tests for the nvidia-smi CSV parsers: every recorded capture in tests/data/captures, then
// inline cases for each rule of the format (units, headers, unavailable values, malformed input).
#include "smi/smi_csv.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::nullopt_t N = std::nullopt;  // a value the driver reported as unavailable
const std::filesystem::path kCaptures = std::filesystem::path(GPURUN_TEST_DATA_DIR) / "captures";

std::string read_capture(const std::string& name) { return test::read_file(kCaptures / name); }

Gpu gpu(int index, std::string uuid, std::string name, std::optional<double> used, std::optional<double> total,
        std::optional<double> util, bool mig = false) {
  Gpu g;
  g.index = index;
  g.uuid = std::move(uuid);
  g.name = std::move(name);
  g.memory_used_mib = used;
  g.memory_total_mib = total;
  g.utilization_percent = util;
  g.mig_enabled = mig;
  return g;
}

GpuProcess process(std::string uuid, long pid, std::optional<double> used) {
  return GpuProcess{std::move(uuid), pid, used, {}};
}

void expect_same_gpus(const std::vector<Gpu>& actual, const std::vector<Gpu>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i) + " (GPU " + std::to_string(expected[i].index) + ")");
    EXPECT_EQ(actual[i].index, expected[i].index);
    EXPECT_EQ(actual[i].uuid, expected[i].uuid);
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].memory_used_mib, expected[i].memory_used_mib);
    EXPECT_EQ(actual[i].memory_total_mib, expected[i].memory_total_mib);
    EXPECT_EQ(actual[i].utilization_percent, expected[i].utilization_percent);
    EXPECT_EQ(actual[i].mig_enabled, expected[i].mig_enabled);
    EXPECT_THAT(actual[i].processes, IsEmpty());
  }
}

void expect_same_processes(const std::vector<GpuProcess>& actual, const std::vector<GpuProcess>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(actual[i].gpu_uuid, expected[i].gpu_uuid);
    EXPECT_EQ(actual[i].pid, expected[i].pid);
    EXPECT_EQ(actual[i].used_memory_mib, expected[i].used_memory_mib);
  }
}

// Runs `parse` on `input` and returns the gpurun::Error message it throws (failing when none).
template <typename Parse>
std::string error_of(Parse parse, std::string_view input) {
  SCOPED_TRACE(::testing::Message() << "input:\n" << input);
  const auto e = test::caught_error([&] { parse(input); });
  if (e.thrown) {
    EXPECT_EQ(e.exit_code, exit_code::failure);
  }
  return e.message;
}
std::string gpu_csv_error(std::string_view input) { return error_of(parse_gpu_csv, input); }
std::string apps_csv_error(std::string_view input) { return error_of(parse_compute_apps_csv, input); }

// A header-less --query-gpu row for GPU `index` with the given readings.
std::string row(int index, std::string_view used, std::string_view total, std::string_view util,
                std::string_view mig = "Disabled") {
  return std::to_string(index) + ", GPU-" + std::to_string(index) + ", Tesla T4, " + std::string(used) + ", " +
         std::string(total) + ", " + std::string(util) + ", " + std::string(mig) + "\n";
}

// ---------------------------------------------------------------------------------------------
// The recorded captures, each with every value that matters.

const std::map<std::string, std::vector<Gpu>>& gpu_captures() {
  static const std::map<std::string, std::vector<Gpu>> captures{
      {"a100-40gb-mig.header-units.csv",
       {gpu(0, "GPU-7dc0f611-426e-43c6-57fa-1f678249e3d9", "NVIDIA A100-SXM4-40GB", 10874, 40960, 88),
        gpu(1, "GPU-49aad781-dc38-cef7-5eba-ad3a8a971886", "NVIDIA A100-SXM4-40GB", 24187, 40960, N, true),
        gpu(2, "GPU-9d3a8442-6a20-f9e7-7e9a-13dcf5cc855d", "NVIDIA A100-SXM4-40GB", 4, 40960, 0),
        gpu(3, "GPU-abdce8e4-cdf7-ceb3-7156-b45b49c60f9d", "NVIDIA A100-SXM4-40GB", 0, 40960, 0)}},
      {"bare-na.noheader-nounits.csv",
       {gpu(0, "GPU-60214afe-058c-a7ad-7fde-180bad2d6f5d", "Tesla V100-SXM2-32GB", 2, 32768, 0),
        gpu(1, "GPU-16bfa6e7-dc67-2230-e62b-c3a9e1a2e0b9", "Tesla V100-SXM2-32GB", N, 32768, N)}},
      {"blank-lines.noheader-nounits.csv",
       {gpu(0, "GPU-b6ec0396-75a5-90b6-1aef-ec9f05f64ca8", "NVIDIA A100-SXM4-80GB", 4, 81920, 0),
        gpu(1, "GPU-38c8e2f7-b5a5-3771-4f51-0d54654e803a", "NVIDIA A100-SXM4-80GB", 60211, 81920, 95)}},
      {"crlf-rtx4090.header-units.csv",
       {gpu(0, "GPU-86099d11-132d-29e4-d8c8-523031fb100c", "NVIDIA GeForce RTX 4090", 2210, 24564, 7)}},
      {"dgx-a100-80gb-x8.noheader-nounits.csv",
       {gpu(0, "GPU-93fb1c29-3dce-bc60-ba2a-b4cffc39a0f5", "NVIDIA A100-SXM4-80GB", 78120, 81920, 100),
        gpu(1, "GPU-92460686-cb03-de97-dc9f-650239d027dc", "NVIDIA A100-SXM4-80GB", 78120, 81920, 99),
        gpu(2, "GPU-e42b70de-7693-58fc-cb96-756a98beb585", "NVIDIA A100-SXM4-80GB", 4, 81920, 0),
        gpu(3, "GPU-183e1898-729a-7413-4031-7428fade2c2f", "NVIDIA A100-SXM4-80GB", 36245, 81920, 64),
        gpu(4, "GPU-d1e2987a-eb8d-2381-8774-1992628a8efa", "NVIDIA A100-SXM4-80GB", 4, 81920, 0),
        gpu(5, "GPU-43072d8f-29f0-99d2-794e-bde4fa6e80a6", "NVIDIA A100-SXM4-80GB", 12411, 81920, 18),
        gpu(6, "GPU-5ed111c7-33e3-e3dc-484e-1a81a32f79de", "NVIDIA A100-SXM4-80GB", 80031, 81920, 100),
        gpu(7, "GPU-0d93e922-4ad6-4611-ea3f-d6df144e35a9", "NVIDIA A100-SXM4-80GB", 0, 81920, 0)}},
      {"dgx-h100-x8.header-units.csv",
       {gpu(0, "GPU-c82c17eb-89ea-9477-3586-fce533b9397e", "NVIDIA H100 80GB HBM3", 3, 81559, 0),
        gpu(1, "GPU-9aaf5911-04dc-7d22-0406-479f38bd7b86", "NVIDIA H100 80GB HBM3", 3, 81559, 0),
        gpu(2, "GPU-141b826c-b03e-7227-f3d8-31a71b5b91bb", "NVIDIA H100 80GB HBM3", 74361, 81559, 100),
        gpu(3, "GPU-c75a8114-479c-2174-2cf8-563010b8b665", "NVIDIA H100 80GB HBM3", 74361, 81559, 100),
        gpu(4, "GPU-eb797955-bd0a-92bd-e207-3251610c5dce", "NVIDIA H100 80GB HBM3", 74361, 81559, 98),
        gpu(5, "GPU-2148bf60-2a3a-5267-6313-0fd816e8b9f8", "NVIDIA H100 80GB HBM3", 74361, 81559, 100),
        gpu(6, "GPU-6efb3859-ac5a-9fd4-8997-6862c47d3f6c", "NVIDIA H100 80GB HBM3", 521, 81559, 0),
        gpu(7, "GPU-27adafcc-7095-70d5-e418-74d0238d18b0", "NVIDIA H100 80GB HBM3", 3, 81559, 0)}},
      {"error-values.noheader-nounits.csv",
       {gpu(0, "GPU-25b9e721-ffb6-9eb6-a71a-326fe9ce6781", "NVIDIA A100-SXM4-80GB", 4, 81920, 0),
        gpu(1, "GPU-7bab7d66-8461-7b2f-e150-b995602ccd0f", "NVIDIA A100-SXM4-80GB", N, N, N),
        gpu(2, "GPU-fc74743f-d213-99e9-9b03-a3bd687db4c3", "NVIDIA A100-SXM4-80GB", N, 81920, N),
        gpu(3, "GPU-e84ee84e-9713-5493-41e5-3b4ba37c768a", "NVIDIA A100-SXM4-80GB", N, N, N)}},
      {"geforce-4090-3090.noheader-units.csv",
       {gpu(0, "GPU-48c93b54-1002-569a-4510-263333d5a637", "NVIDIA GeForce RTX 4090", 1187, 24564, 3),
        gpu(1, "GPU-9c5c2d84-5b4a-f03c-cd34-398c73ac467b", "NVIDIA GeForce RTX 3090", N, 24576, N)}},
      {"header-only.header-units.csv", {}},
      {"gb10-unified-memory.header-units.csv",
       {gpu(0, "GPU-7b3e91d0-4c2a-4f85-a6d3-e18c05b9f274", "NVIDIA GB10", N, N, 0)}},
      {"lost-gpu-among-rows.noheader-nounits.csv",
       {gpu(0, "GPU-0f3c6a1e-5d2b-4b7e-9a51-3c8e2d7f1a04", "Tesla V100-SXM2-32GB", 4, 32768, 0),
        gpu(2, "GPU-8b17d2c4-2e9f-4a63-b0d5-7f41c9e6a382", "Tesla V100-SXM2-32GB", 30211, 32768, 97),
        gpu(3, "GPU-c4a9e07b-61d3-4f2a-8e1c-95b0d7a3f6e2", "Tesla V100-SXM2-32GB", 0, 32768, 0)}},
      {"inforom-warning.noheader-nounits.csv",
       {gpu(0, "GPU-5e8a2f71-c34b-4d09-a6e2-1b7f90c3d485", "Quadro P4000", 701, 8105, 0)}},
      {"driver-610-bare-na-empty.noheader-nounits.csv",
       {gpu(0, "GPU-a3d6f0b2-7c41-4e85-9b2a-60e1f4c7d938", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 0, 97887, 0),
        gpu(1, "GPU-6e0b9c47-2f18-4a3d-b7e5-d92c1a08f5b6", "NVIDIA RTX PRO 6000 Blackwell Server Edition", N, 97887,
            N)}},
      {"v100-driver-418-no-mig.header-units.csv",
       {gpu(0, "GPU-1d7e4b90-a2c5-4f38-8e61-c09b3d5f27a4", "Tesla V100-PCIE-16GB", 0, 16160, 0),
        gpu(1, "GPU-f29c0d81-6b3e-47a5-9d20-5e8a1b4c73f6", "Tesla V100-PCIE-16GB", 15313, 16160, 100)}},
      {"l40s-x4.header-nounits.csv",
       {gpu(0, "GPU-2857f750-99b1-5288-bc67-bffeff94fc59", "NVIDIA L40S", 40793, 46068, 97),
        gpu(1, "GPU-d974e19b-be17-b8b5-2a0e-e94b1ff6ba9f", "NVIDIA L40S", 1, 46068, 0),
        gpu(2, "GPU-978c0691-75b2-acd9-1460-92eca0160944", "NVIDIA L40S", 18230, 46068, 41),
        gpu(3, "GPU-3131bc4f-cb2e-43f3-daaf-7e594857de79", "NVIDIA L40S", 1, 46068, 0)}},
  };
  return captures;
}

const std::vector<GpuProcess> kFiveProcesses{process("GPU-d840f893-7c94-aa59-1567-6489f4dd37dd", 48213, 77824),
                                             process("GPU-d840f893-7c94-aa59-1567-6489f4dd37dd", 51022, 596),
                                             process("GPU-6714c899-a1a8-0818-470b-7a5f11fa781a", 3858903, 6265),
                                             process("GPU-6714c899-a1a8-0818-470b-7a5f11fa781a", 3880364, 5530),
                                             process("GPU-124cb5b1-991a-82de-e5f6-9f0a08a9a557", 52771, 0)};

const std::map<std::string, std::vector<GpuProcess>>& compute_app_captures() {
  static const std::map<std::string, std::vector<GpuProcess>> captures{
      {"compute-apps.header-units.csv", kFiveProcesses},
      {"compute-apps.noheader-nounits.csv", kFiveProcesses},
      {"compute-apps-empty.header.csv", {}},
      {"compute-apps-empty.noheader.csv", {}},
      {"compute-apps-na-memory.noheader-nounits.csv",
       {process("GPU-d840f893-7c94-aa59-1567-6489f4dd37dd", 30118, 10362),
        process("GPU-d840f893-7c94-aa59-1567-6489f4dd37dd", 41502, N),
        process("GPU-6714c899-a1a8-0818-470b-7a5f11fa781a", 4, N)}},
  };
  return captures;
}

// Captures the parser must reject, with what the message must say.
const std::map<std::string, std::vector<std::string>>& rejected_captures() {
  static const std::map<std::string, std::vector<std::string>> captures{
      {"wrong-column-count.noheader-nounits.csv", {"line 2", "expected 7 columns", "found 6"}},
  };
  return captures;
}

TEST(Captures, EveryFileInTheDirectoryHasExpectations) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(kCaptures))
    on_disk.insert(entry.path().filename().string());
  std::set<std::string> covered;
  for (const auto& [name, _] : gpu_captures()) covered.insert(name);
  for (const auto& [name, _] : compute_app_captures()) covered.insert(name);
  for (const auto& [name, _] : rejected_captures()) covered.insert(name);
  EXPECT_EQ(on_disk, covered) << "a capture was added or removed: give it expectations in this file";
}

class GpuCapture : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuCapture, ParsesToTheExactValues) {
  expect_same_gpus(parse_gpu_csv(read_capture(GetParam())), gpu_captures().at(GetParam()));
}

std::vector<std::string> names_of(const auto& map) {
  std::vector<std::string> names;
  for (const auto& [name, _] : map) names.push_back(name);
  return names;
}

// gtest parameter names: letters, digits and '_' only.
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, GpuCapture, ::testing::ValuesIn(names_of(gpu_captures())), test_name);

class ComputeAppsCapture : public ::testing::TestWithParam<std::string> {};

TEST_P(ComputeAppsCapture, ParsesToTheExactValues) {
  expect_same_processes(parse_compute_apps_csv(read_capture(GetParam())), compute_app_captures().at(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Files, ComputeAppsCapture, ::testing::ValuesIn(names_of(compute_app_captures())), test_name);

TEST(Captures, WrongColumnCountIsRejectedNamingTheFirstBadLine) {
  for (const auto& [name, fragments] : rejected_captures()) {
    SCOPED_TRACE(name);
    const std::string message = gpu_csv_error(read_capture(name));
    for (const auto& fragment : fragments) EXPECT_THAT(message, HasSubstr(fragment));
  }
}

TEST(Captures, CrlfCaptureStillHasItsCarriageReturns) {
  // If git normalised the line endings, the CRLF case above would test nothing.
  EXPECT_THAT(read_capture("crlf-rtx4090.header-units.csv"), HasSubstr("mig.mode.current\r\n"));
}

TEST(Captures, MissingReadingsAreNulloptNeverZero) {
  const auto gpus = parse_gpu_csv(read_capture("error-values.noheader-nounits.csv"));
  ASSERT_EQ(gpus.size(), 4u);
  for (const Gpu& g : {gpus[1], gpus[3]}) {
    EXPECT_FALSE(g.memory_used_mib.has_value()) << "GPU " << g.index;
    EXPECT_FALSE(g.memory_total_mib.has_value()) << "GPU " << g.index;
    EXPECT_FALSE(g.utilization_percent.has_value()) << "GPU " << g.index;
  }
  // A real zero stays a zero.
  EXPECT_EQ(parse_gpu_csv(read_capture("a100-40gb-mig.header-units.csv"))[3].memory_used_mib, 0.0);
}

// ---------------------------------------------------------------------------------------------
// parse_gpu_csv, inline cases.

TEST(ParseGpuCsv, EmptyOrBlankInputHasNoGpus) {
  EXPECT_THAT(parse_gpu_csv(""), IsEmpty());
  EXPECT_THAT(parse_gpu_csv("\n\r\n  \n"), IsEmpty());
}

TEST(ParseGpuCsv, HeaderOnlyHasNoGpus) {
  EXPECT_THAT(parse_gpu_csv("index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], "
                            "mig.mode.current\n"),
              IsEmpty());
}

TEST(ParseGpuCsv, UnitsInValuesAreAccepted) {
  expect_same_gpus(parse_gpu_csv(row(0, "1234 MiB", "2048 MiB", "45 %")),
                   {gpu(0, "GPU-0", "Tesla T4", 1234, 2048, 45)});
  expect_same_gpus(parse_gpu_csv(row(0, "1234MiB", "2048MiB", "45%")), {gpu(0, "GPU-0", "Tesla T4", 1234, 2048, 45)});
}

TEST(ParseGpuCsv, UnitsInTheHeaderWithBareValuesAreAccepted) {
  expect_same_gpus(parse_gpu_csv("index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]\n"
                                 "2, GPU-2, Tesla T4, 1234, 15360, 45\n"),
                   {gpu(2, "GPU-2", "Tesla T4", 1234, 15360, 45)});
}

TEST(ParseGpuCsv, GibAndKibAreConvertedToMib) {
  expect_same_gpus(parse_gpu_csv(row(0, "2 GiB", "80 GiB", "0 %")), {gpu(0, "GPU-0", "Tesla T4", 2048, 81920, 0)});
  expect_same_gpus(parse_gpu_csv(row(0, "1024 KiB", "1.5 GiB", "0")), {gpu(0, "GPU-0", "Tesla T4", 1, 1536, 0)});
  // A unit in the header applies to bare values; a unit on the value wins over the header's.
  expect_same_gpus(parse_gpu_csv("index, memory.used [GiB], memory.total [GiB]\n"
                                 "0, 1.5, 512 MiB\n"),
                   {gpu(0, "", "", 1536, 512, N)});
}

TEST(ParseGpuCsv, ColumnsInAnyOrderAndUnknownColumnsIgnored) {
  expect_same_gpus(parse_gpu_csv("temperature.gpu, mig.mode.current, memory.total [MiB], name, power.draw [W], "
                                 "utilization.gpu [%], uuid, memory.used [MiB], index\n"
                                 "34, Enabled, 40960 MiB, NVIDIA A100, 61.20 W, 7 %, GPU-a, 100 MiB, 5\n"
                                 "35, Disabled, 40960 MiB, NVIDIA A100, [N/A], 0 %, GPU-b, 0 MiB, 2\n"),
                   {gpu(5, "GPU-a", "NVIDIA A100", 100, 40960, 7, true), gpu(2, "GPU-b", "NVIDIA A100", 0, 40960, 0)});
}

TEST(ParseGpuCsv, PowerAndTemperatureAreReadWhereAsked) {
  const std::vector<Gpu> gpus = parse_gpu_csv(
      "index, memory.used [MiB], memory.total [MiB], power.draw [W], temperature.gpu\n"
      "0, 10, 100, 97.74 W, 39\n"
      "1, 10, 100, [N/A], [N/A]\n");
  ASSERT_EQ(gpus.size(), 2U);
  EXPECT_EQ(gpus[0].power_draw_w, 97.74);
  EXPECT_EQ(gpus[0].temperature_c, 39);
  EXPECT_EQ(gpus[1].power_draw_w, std::nullopt);  // missing, never zero
  EXPECT_EQ(gpus[1].temperature_c, std::nullopt);
  // Without the columns (gpurun's own launch query), nothing is read.
  EXPECT_EQ(parse_gpu_csv(row(0, "1", "2", "3"))[0].power_draw_w, std::nullopt);
  const std::vector<std::string_view> sensors{"index", "memory.used", "memory.total", "power.draw", "temperature.gpu"};
  const GpuTable table = parse_gpu_table("3, 10, 100, 250.50, 61\n", sensors);
  ASSERT_EQ(table.gpus.size(), 1U);
  EXPECT_EQ(table.gpus[0].power_draw_w, 250.5);
  EXPECT_EQ(table.gpus[0].temperature_c, 61);
}

TEST(ParseGpuCsv, AReadingInAnotherUnitOrNotANumberNamesTheLineAndField) {
  EXPECT_THAT(gpu_csv_error("index, memory.used, memory.total, power.draw\n0, 1, 2, 5 MHz\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("power.draw"), HasSubstr("MHz")));
  EXPECT_THAT(gpu_csv_error("index, memory.used, memory.total, temperature.gpu\n0, 1, 2, hot\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("temperature.gpu")));
  EXPECT_THAT(gpu_csv_error("index, memory.used, memory.total, power.draw\n0, 1, 2, inf\n"), HasSubstr("power.draw"));
}

TEST(ParseGpuCsv, OptionalColumnsMayBeAbsentFromTheHeader) {
  expect_same_gpus(parse_gpu_csv("index, memory.used [MiB], memory.total [MiB]\n0, 10, 100\n"),
                   {gpu(0, "", "", 10, 100, N)});
}

TEST(ParseGpuCsv, HeaderNamesAreCaseInsensitiveAndGpuNameIsAnAlias) {
  expect_same_gpus(parse_gpu_csv("Index, GPU_Name, Memory.Used [MiB], MEMORY.TOTAL [MiB]\n1, Tesla T4, 5, 15360\n"),
                   {gpu(1, "", "Tesla T4", 5, 15360, N)});
}

class UnavailableValue : public ::testing::TestWithParam<std::string> {};

TEST_P(UnavailableValue, IsMissingNotZeroInEveryField) {
  const std::string& token = GetParam();
  const auto gpus =
      parse_gpu_csv("0, " + token + ", " + token + ", " + token + ", " + token + ", " + token + ", " + token + "\n");
  expect_same_gpus(gpus, {gpu(0, "", "", N, N, N, false)});
}

INSTANTIATE_TEST_SUITE_P(Tokens, UnavailableValue,
                         ::testing::Values("[N/A]", "N/A", "n/a", "[Not Supported]", "[Unknown Error]",
                                           "[Insufficient Permissions]", "[GPU is lost]", "[Not Found]",
                                           "[Some future driver text]", "[]"),
                         [](const auto& param_info) { return "Token" + std::to_string(param_info.index); });

TEST(ParseGpuCsv, BracketedTokensAreMissingNotZeroWithAHeaderToo) {
  expect_same_gpus(parse_gpu_csv("index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], "
                                 "mig.mode.current\n"
                                 "0, GPU-0, Tesla T4, [Not Supported], 15360 MiB, [Unknown Error], [N/A]\n"),
                   {gpu(0, "GPU-0", "Tesla T4", N, 15360, N, false)});
}

TEST(ParseGpuCsv, MigIsEnabledOnlyForEnabled) {
  const auto gpus = parse_gpu_csv(row(0, "1", "2", "0", "Enabled") + row(1, "1", "2", "0", "Disabled") +
                                  row(2, "1", "2", "0", "[N/A]") + row(3, "1", "2", "0", "enabled"));
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_TRUE(gpus[0].mig_enabled);
  EXPECT_FALSE(gpus[1].mig_enabled);
  EXPECT_FALSE(gpus[2].mig_enabled);
  EXPECT_TRUE(gpus[3].mig_enabled);
}

TEST(ParseGpuCsv, CrlfLineEndingsAreStripped) {
  expect_same_gpus(parse_gpu_csv("index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], "
                                 "mig.mode.current\r\n"
                                 "0, GPU-0, Tesla T4, 3 MiB, 15360 MiB, 1 %, Disabled\r\n"
                                 "1, GPU-1, Tesla T4, 4 MiB, 15360 MiB, 2 %, Enabled\r\n"),
                   {gpu(0, "GPU-0", "Tesla T4", 3, 15360, 1), gpu(1, "GPU-1", "Tesla T4", 4, 15360, 2, true)});
}

TEST(ParseGpuCsv, BlankLinesAnywhereAreSkipped) {
  expect_same_gpus(parse_gpu_csv("\n\n" + row(0, "1", "10", "0") + "\n   \n" + row(1, "2", "10", "5") + "\n"),
                   {gpu(0, "GPU-0", "Tesla T4", 1, 10, 0), gpu(1, "GPU-1", "Tesla T4", 2, 10, 5)});
}

TEST(ParseGpuCsv, WrongColumnCountNamesTheLineNumber) {
  // Line numbers count blank lines too, so that they match what an editor shows.
  const std::string message = gpu_csv_error(row(0, "1", "2", "0") + "\n1, GPU-1, Tesla T4, 1, 2, 0\n");
  EXPECT_THAT(message, AllOf(HasSubstr("line 3"), HasSubstr("expected 7 columns"), HasSubstr("found 6")));
  EXPECT_THAT(gpu_csv_error("0, GPU-0, Tesla T4, 1, 2, 0, Disabled, extra\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("found 8")));
  EXPECT_THAT(gpu_csv_error("index, memory.used [MiB], memory.total [MiB]\n0, 1\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("expected 3 columns"), HasSubstr("found 2")));
}

TEST(ParseGpuCsv, NonNumericMemoryNamesTheLineAndField) {
  EXPECT_THAT(gpu_csv_error(row(0, "1", "2", "0") + row(1, "lots", "2", "0")),
              AllOf(HasSubstr("line 2"), HasSubstr("memory.used"), HasSubstr("lots")));
  EXPECT_THAT(gpu_csv_error(row(0, "1", "12x", "0")), AllOf(HasSubstr("line 1"), HasSubstr("memory.total")));
  EXPECT_THAT(gpu_csv_error(row(0, "-5", "10", "0")), AllOf(HasSubstr("line 1"), HasSubstr("memory.used")));
  EXPECT_THAT(gpu_csv_error(row(0, "nan", "10", "0")), AllOf(HasSubstr("line 1"), HasSubstr("memory.used")));
  // No GPU has a petabyte: such a reading overflowed what the service stores.
  EXPECT_THAT(gpu_csv_error(row(0, "1e300", "10", "0")), HasSubstr("memory.used is too large"));
  EXPECT_EQ(parse_gpu_csv(row(0, "1", "1073741824", "0"))[0].memory_total_mib, 1073741824.0);
}

TEST(ParseGpuCsv, UnknownMemoryUnitIsAnError) {
  EXPECT_THAT(gpu_csv_error(row(0, "5 MHz", "10", "0")),
              AllOf(HasSubstr("line 1"), HasSubstr("memory.used"), HasSubstr("MHz")));
}

TEST(ParseGpuCsv, NonNumericUtilizationNamesTheLineAndField) {
  EXPECT_THAT(gpu_csv_error(row(0, "1", "2", "busy")), AllOf(HasSubstr("line 1"), HasSubstr("utilization.gpu")));
  EXPECT_THAT(gpu_csv_error(row(0, "1", "2", "45 MiB")), AllOf(HasSubstr("line 1"), HasSubstr("utilization.gpu")));
  for (const char* beyond : {"100.5", "250", "1e308"})
    EXPECT_THAT(gpu_csv_error(row(0, "1", "2", beyond)), HasSubstr("not a percentage (0 to 100)")) << beyond;
  EXPECT_EQ(parse_gpu_csv(row(0, "1", "2", "100"))[0].utilization_percent, 100.0);
}

TEST(ParseGpuCsv, BadIndexIsAnError) {
  EXPECT_THAT(gpu_csv_error(row(0, "1", "2", "0") + "x, GPU-1, T4, 1, 2, 0, Disabled\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("index")));
  EXPECT_THAT(gpu_csv_error("-1, GPU-1, T4, 1, 2, 0, Disabled\n"), AllOf(HasSubstr("line 1"), HasSubstr("index")));
  EXPECT_THAT(gpu_csv_error("[N/A], GPU-1, T4, 1, 2, 0, Disabled\n"), AllOf(HasSubstr("line 1"), HasSubstr("index")));
}

TEST(ParseGpuCsv, DuplicateIndexIsAnError) {
  EXPECT_THAT(gpu_csv_error(row(0, "1", "2", "0") + row(1, "1", "2", "0") + row(0, "1", "2", "0")),
              AllOf(HasSubstr("line 3"), HasSubstr("GPU index 0")));
}

TEST(ParseGpuCsv, MissingRequiredHeaderColumnIsAnError) {
  EXPECT_THAT(gpu_csv_error("uuid, memory.used [MiB], memory.total [MiB]\nGPU-0, 1, 2\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("\"index\"")));
  EXPECT_THAT(gpu_csv_error("index, memory.total [MiB]\n0, 2\n"), HasSubstr("\"memory.used\""));
  EXPECT_THAT(gpu_csv_error("index, memory.used [MiB], utilization.gpu [%]\n0, 2, 0\n"), HasSubstr("\"memory.total\""));
  // Even with no rows: a header that cannot be read is not "no GPUs".
  EXPECT_THAT(gpu_csv_error("index, uuid, name\n"), HasSubstr("\"memory.used\""));
}

TEST(ParseGpuCsv, DuplicateHeaderColumnIsAnError) {
  EXPECT_THAT(gpu_csv_error("index, memory.used [MiB], memory.total [MiB], memory.used [MiB]\n0, 1, 2, 3\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("memory.used")));
}

TEST(ParseGpuCsv, ErrorMessagesStayOnOneLine) {
  const std::string message = gpu_csv_error(row(0, "1", "2", "0") + "1, \x1b[31mred\x07, T4, 1, 2\n");
  EXPECT_THAT(message, HasSubstr("line 2"));
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_EQ(message.find('\x07'), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// parse_compute_apps_csv, inline cases.

TEST(ParseComputeAppsCsv, RealDriverHeaderSpellingIsUnderstood) {
  expect_same_processes(parse_compute_apps_csv("gpu_uuid, pid, used_gpu_memory [MiB]\n"
                                               "GPU-a, 123, 77824 MiB\n"
                                               "GPU-b, 456, 0 MiB\n"),
                        {process("GPU-a", 123, 77824), process("GPU-b", 456, 0)});
}

TEST(ParseComputeAppsCsv, HeaderColumnsInAnyOrderWithExtraColumns) {
  expect_same_processes(parse_compute_apps_csv("pid, process_name, used_gpu_memory [MiB], gpu_uuid\n"
                                               "77, python, 1 GiB, GPU-a\n"),
                        {process("GPU-a", 77, 1024)});
}

TEST(ParseComputeAppsCsv, UnavailableUsedMemoryIsNulloptNotZero) {
  const auto processes = parse_compute_apps_csv("GPU-a, 1, [N/A]\nGPU-a, 2, 0\nGPU-b, 3, [Not Supported]\n");
  expect_same_processes(processes, {process("GPU-a", 1, N), process("GPU-a", 2, 0), process("GPU-b", 3, N)});
  ASSERT_EQ(processes.size(), 3u);
  EXPECT_FALSE(processes[0].used_memory_mib.has_value());
  EXPECT_TRUE(processes[1].used_memory_mib.has_value());
}

TEST(ParseComputeAppsCsv, NoRunningProcessesLineIsIgnored) {
  EXPECT_THAT(parse_compute_apps_csv("No running processes found\n"), IsEmpty());
  EXPECT_THAT(parse_compute_apps_csv("gpu_uuid, pid, used_gpu_memory [MiB]\nNo running processes found\n"), IsEmpty());
  expect_same_processes(parse_compute_apps_csv("GPU-a, 9, 5\r\nNo running processes found\r\n"),
                        {process("GPU-a", 9, 5)});
}

TEST(ParseComputeAppsCsv, HeaderOnlyOrEmptyHasNoProcesses) {
  EXPECT_THAT(parse_compute_apps_csv(""), IsEmpty());
  EXPECT_THAT(parse_compute_apps_csv("gpu_uuid, pid, used_gpu_memory [MiB]\r\n"), IsEmpty());
}

TEST(ParseComputeAppsCsv, MalformedRowsNameTheLine) {
  EXPECT_THAT(apps_csv_error("GPU-a, 1, 5\nGPU-a, 2\n"), AllOf(HasSubstr("line 2"), HasSubstr("found 2")));
  EXPECT_THAT(apps_csv_error("GPU-a, 1, 5\n\nGPU-a, pid?, 5\n"), AllOf(HasSubstr("line 3"), HasSubstr("pid")));
  EXPECT_THAT(apps_csv_error("GPU-a, 1, lots\n"), AllOf(HasSubstr("line 1"), HasSubstr("used_memory")));
}

TEST(ParseComputeAppsCsv, MissingRequiredHeaderColumnIsAnError) {
  EXPECT_THAT(apps_csv_error("gpu_uuid, used_gpu_memory [MiB]\nGPU-a, 5\n"), HasSubstr("\"pid\""));
  EXPECT_THAT(apps_csv_error("pid, used_gpu_memory [MiB]\n1, 5\n"), HasSubstr("\"uuid\""));
}

// ---------------------------------------------------------------------------------------------
// attach_processes

TEST(AttachProcesses, EachProcessGoesToTheGpuWithItsUuidInOrder) {
  std::vector<Gpu> gpus{gpu(0, "GPU-d840f893-7c94-aa59-1567-6489f4dd37dd", "A", 1, 2, 0),
                        gpu(1, "GPU-6714c899-a1a8-0818-470b-7a5f11fa781a", "A", 1, 2, 0),
                        gpu(2, "GPU-124cb5b1-991a-82de-e5f6-9f0a08a9a557", "A", 1, 2, 0),
                        gpu(3, "GPU-00000000-0000-0000-0000-000000000000", "A", 1, 2, 0)};
  attach_processes(gpus, parse_compute_apps_csv(read_capture("compute-apps.header-units.csv")));
  expect_same_processes(gpus[0].processes, {kFiveProcesses[0], kFiveProcesses[1]});
  expect_same_processes(gpus[1].processes, {kFiveProcesses[2], kFiveProcesses[3]});
  expect_same_processes(gpus[2].processes, {kFiveProcesses[4]});
  EXPECT_THAT(gpus[3].processes, IsEmpty());
}

TEST(AttachProcesses, ProcessesOnUnknownGpusAreIgnored) {
  std::vector<Gpu> gpus{gpu(0, "GPU-a", "A", 1, 2, 0)};
  attach_processes(gpus, {process("GPU-elsewhere", 1, 5)});
  EXPECT_THAT(gpus[0].processes, IsEmpty());
}

TEST(AttachProcesses, AMissingUuidMatchesNothing) {
  // A GPU whose uuid was [N/A] must not collect processes whose uuid was [N/A] as well.
  std::vector<Gpu> gpus{gpu(0, "", "A", 1, 2, 0), gpu(1, "GPU-b", "A", 1, 2, 0)};
  attach_processes(gpus, parse_compute_apps_csv("[N/A], 17, 5\nGPU-b, 18, 6\n"));
  EXPECT_THAT(gpus[0].processes, IsEmpty());
  expect_same_processes(gpus[1].processes, {process("GPU-b", 18, 6)});
}

// ---------------------------------------------------------------------------------------------
// What a --query-gpu answer holds besides rows (issue 16).

TEST(GpuTable, ALostGpuLineBetweenRowsIsThatGpuLostTheRestKept) {
  const GpuTable table = parse_gpu_table(read_capture("lost-gpu-among-rows.noheader-nounits.csv"));
  ASSERT_EQ(table.lost.size(), 1u);
  EXPECT_EQ(table.lost[0].pci_bus_id, "0000:34:00.0");
  EXPECT_EQ(table.lost[0].error, "Unknown Error");
  EXPECT_THAT(table.gpus, ::testing::SizeIs(3));
  EXPECT_TRUE(table.warnings.empty());
}

TEST(GpuTable, LostLinesAsDriversSpellThem) {
  // With a space before the bus id (NVIDIA/open-gpu-kernel-modules#387), and Windows' "detect".
  const auto spaced = parse_lost_gpu_line("Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error");
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->pci_bus_id, "0000:0B:00.0");
  const auto windows = parse_lost_gpu_line("Unable to detect the device handle for GPU0000:B1:00.0: Unknown Error\r");
  ASSERT_TRUE(windows);
  EXPECT_EQ(windows->pci_bus_id, "0000:B1:00.0");
  EXPECT_EQ(windows->error, "Unknown Error");
  EXPECT_FALSE(parse_lost_gpu_line("0, GPU-a, A100, 4, 81920, 0, Disabled"));
}

TEST(GpuTable, AnInfoRomWarningBeforeTheRowsIsAWarningNotARow) {
  const GpuTable table = parse_gpu_table(read_capture("inforom-warning.noheader-nounits.csv"));
  EXPECT_THAT(table.warnings, ::testing::ElementsAre("WARNING: infoROM is corrupted at gpu 0000:B3:00.0"));
  ASSERT_EQ(table.gpus.size(), 1u);
  EXPECT_EQ(table.gpus[0].name, "Quadro P4000");
}

TEST(GpuTable, Driver610BareNaAndEmptyCellsAreMissing) {
  const GpuTable table = parse_gpu_table(read_capture("driver-610-bare-na-empty.noheader-nounits.csv"));
  ASSERT_EQ(table.gpus.size(), 2u);
  EXPECT_EQ(table.gpus[1].memory_used_mib, N);
  EXPECT_EQ(table.gpus[1].utilization_percent, N);
  EXPECT_EQ(table.gpus[1].memory_total_mib, 97887.0);
}

TEST(GpuTable, HeaderlessRowsFollowTheFieldsAskedFor) {
  // A driver before R450 asked without mig.mode.current answers six columns.
  constexpr std::array<std::string_view, 6> fields{"index",       "uuid",         "name",
                                                   "memory.used", "memory.total", "utilization.gpu"};
  const GpuTable table = parse_gpu_table("0, GPU-a, Tesla P100-PCIE-16GB, 10, 16280, 3\n", fields);
  ASSERT_EQ(table.gpus.size(), 1u);
  EXPECT_EQ(table.gpus[0].memory_total_mib, 16280.0);
  EXPECT_EQ(table.gpus[0].utilization_percent, 3.0);
  EXPECT_FALSE(table.gpus[0].mig_enabled);
  EXPECT_THROW(parse_gpu_table("0, GPU-a, Tesla P100-PCIE-16GB, 10, 16280, 3\n"), Error);  // seven expected
}

}  // namespace
}  // namespace gpurun
