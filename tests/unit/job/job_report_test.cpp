// Unit tests for --report's summary: the text and JSON, and the GPU efficiency they rest on.
#include "gpurun/job/job_report.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::make_gpu;
using ::testing::HasSubstr;
using ::testing::Not;

UtilizationStats feed(std::initializer_list<std::optional<double>> samples, std::optional<double> memory = {}) {
  UtilizationStats stats;
  for (const auto& s : samples) stats.add(s, memory);
  return stats;
}

// Two GPUs for 1 h 02 min: GPU 0 half busy, GPU 2 never sampled.
JobReport half_busy_job() {
  JobReport report;
  report.wall_s = 3725.4;
  report.exit_status = 0;
  report.cpus = 16;
  report.gpus = {make_gpu(0, 0, 81920, 0), make_gpu(2, 0, 81920, 0)};
  report.stats[0].add(40, 1000);
  report.stats[0].add(60, 2000);
  report.stats[2].add(std::nullopt, std::nullopt);
  return report;
}

TEST(GpuEfficiency, IsTheMeanOverGpusWithSamples) {
  JobReport report;
  report.stats[0] = feed({60});
  report.stats[1] = feed({95});
  report.stats[2] = feed({std::nullopt});
  EXPECT_DOUBLE_EQ(*gpu_efficiency(report), 77.5);
  EXPECT_FALSE(gpu_efficiency(JobReport{}));
}

TEST(FormatJobReport, BelowTheThresholdGivesTheTableAndHints) {
  EXPECT_EQ(format_job_report(half_busy_job()),
            "gpurun: job report\n"
            "  exit status     0\n"
            "  wall time       1h 02m 05s\n"
            "  granted         2 GPUs (0, 2), 16 CPUs\n"
            "  GPU  UTIL MEAN  UTIL P95  UNDER 50%  MEM PEAK            SAMPLES\n"
            "    0      50.0%       60%        50%  2000 / 81920 MiB          2\n"
            "    2        n/a       n/a        n/a  n/a                       0\n"
            "  GPU efficiency  50.0%\n"
            "  Below 80%: the GPUs waited for work much of the time. What usually helps:\n"
            "    - Feed the GPUs faster: raise DataLoader(num_workers=...) towards the 8 CPUs per GPU you have, "
            "and raise --cpus-per-gpu (8-24) if the workers need more\n"
            "    - Use DataLoader(pin_memory=True) so host-to-GPU copies overlap with compute\n"
            "    - Try a larger batch size while memory allows (see the memory peak)\n"
            "    - Use mixed precision (torch.autocast / AMP) so the tensor cores do the work\n");
}

TEST(FormatJobReport, SeveralGpusUnderHalfBusyAreToldToMakeOneBusyFirst) {
  JobReport report = half_busy_job();
  report.stats[0] = feed({30});
  EXPECT_THAT(format_job_report(report),
              HasSubstr("    - Make one GPU busy before asking for several: low efficiency only multiplies with more "
                        "GPUs\n"));
  report.gpus.pop_back();  // one GPU: the advice does not apply
  report.stats.erase(2);
  EXPECT_THAT(format_job_report(report), Not(HasSubstr("Make one GPU busy")));
}

TEST(FormatJobReport, AtOrAboveTheThresholdNoHints) {
  JobReport report;
  report.wall_s = 12.4;
  report.exit_status = 3;
  report.cpus = 8;
  report.threshold_percent = 90;
  report.gpus = {make_gpu(3, 0, std::nullopt, 0)};
  report.stats[3] = feed({90, 100}, 512);
  EXPECT_EQ(format_job_report(report),
            "gpurun: job report\n"
            "  exit status     3\n"
            "  wall time       12s\n"
            "  granted         1 GPU (3), 8 CPUs\n"
            "  GPU  UTIL MEAN  UTIL P95  UNDER 50%  MEM PEAK            SAMPLES\n"
            "    3      95.0%      100%         0%  512 / ? MiB               2\n"
            "  GPU efficiency  95.0%\n");
}

TEST(FormatJobReport, NoSamplesAtAllSaysWhy) {
  JobReport report = half_busy_job();
  report.stats[0] = UtilizationStats{};
  EXPECT_THAT(format_job_report(report),
              HasSubstr("  GPU efficiency  n/a\n"
                        "  (no utilization samples: the job ended before the first one, or nvidia-smi could not "
                        "report it)\n"));
}

TEST(JobReportJson, HasEveryFigureWithNullForWhatIsUnknown) {
  EXPECT_EQ(
      job_report_json(half_busy_job()).dump(),
      R"j({"wall_s":3725.4,"exit_status":0,"cpus":16,"gpu_efficiency":50.0,"threshold":80.0,"gpus":[)j"
      R"j({"index":0,"uuid":"GPU-0","name":"NVIDIA A100-SXM4-80GB","samples":2,"missing_samples":0,)j"
      R"j("util_mean":50.0,"util_p95":60,"util_under_50_share":0.5,"mem_peak_mib":2000.0,"mem_total_mib":81920.0},)j"
      R"j({"index":2,"uuid":"GPU-2","name":"NVIDIA A100-SXM4-80GB","samples":0,"missing_samples":1,)j"
      R"j("util_mean":null,"util_p95":null,"util_under_50_share":null,"mem_peak_mib":null,)j"
      R"j("mem_total_mib":81920.0}]})j");
}

}  // namespace
}  // namespace gpurun
