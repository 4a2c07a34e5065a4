// Unit tests for plan_cpus: the --cpus a job gets.
#include "gpurun/select/cpu_quota.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>

#include "gpurun/util/error.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct DefaultCase {
  int gpus_requested;
  int gpus_on_host;
  int host_cpus;
  int per_gpu;
  int total;
};

void PrintTo(const DefaultCase& c, std::ostream* os) {
  *os << c.gpus_requested << " of " << c.gpus_on_host << " GPUs, " << c.host_cpus << " CPUs";
}

class PlanCpusDefault : public ::testing::TestWithParam<DefaultCase> {};

TEST_P(PlanCpusDefault, IsTheFairShareClampedTo8To24) {
  const DefaultCase& c = GetParam();
  const CpuPlan plan = plan_cpus(c.gpus_requested, c.gpus_on_host, c.host_cpus, std::nullopt);
  EXPECT_EQ(plan.per_gpu, c.per_gpu);
  EXPECT_EQ(plan.total, c.total);
  EXPECT_EQ(plan.warning, std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Hosts, PlanCpusDefault,
                         ::testing::Values(DefaultCase{1, 8, 128, 16, 16},  // DGX A100: 128 / 8
                                           DefaultCase{2, 8, 128, 16, 32}, DefaultCase{8, 8, 128, 16, 128},
                                           DefaultCase{2, 8, 256, 24, 48},  // 32 per GPU, clamped to 24
                                           DefaultCase{1, 8, 32, 8, 8},     // 4 per GPU, raised to 8
                                           DefaultCase{4, 8, 32, 8, 32},
                                           DefaultCase{1, 4, 80, 20, 20},    // within range: as is
                                           DefaultCase{1, 3, 64, 21, 21},    // 64 / 3 rounds down
                                           DefaultCase{1, 0, 64, 24, 24}));  // no GPUs seen: host / 1

TEST(PlanCpus, ExplicitPerGpuWithin8To24IsUsed) {
  for (int per_gpu : {8, 12, 24}) {
    const CpuPlan plan = plan_cpus(2, 8, 128, per_gpu);
    EXPECT_EQ(plan.per_gpu, per_gpu);
    EXPECT_EQ(plan.total, 2 * per_gpu);
    EXPECT_EQ(plan.warning, std::nullopt);
  }
}

TEST(PlanCpus, ExplicitPerGpuOutside8To24IsRejected) {
  for (int per_gpu : {7, 25, 0, -8}) {
    SCOPED_TRACE("--cpus-per-gpu " + std::to_string(per_gpu));
    const auto e = test::caught_error([&] { plan_cpus(1, 8, 128, per_gpu); });
    EXPECT_EQ(e.exit_code, exit_code::failure);
    EXPECT_THAT(e.message, AllOf(HasSubstr(std::to_string(per_gpu)), HasSubstr("8..24")));
  }
}

TEST(PlanCpus, TotalIsCutToTheHostsCpusWithAWarning) {
  const CpuPlan plan = plan_cpus(2, 2, 2, std::nullopt);
  EXPECT_EQ(plan.per_gpu, 8);
  EXPECT_EQ(plan.total, 2);
  ASSERT_TRUE(plan.warning.has_value());
  EXPECT_THAT(*plan.warning, AllOf(HasSubstr("16"), HasSubstr("2")));
}

TEST(PlanCpus, ExplicitPerGpuIsAlsoCutToTheHost) {
  const CpuPlan plan = plan_cpus(4, 8, 64, 24);
  EXPECT_EQ(plan.per_gpu, 24);
  EXPECT_EQ(plan.total, 64);
  ASSERT_TRUE(plan.warning.has_value());
  EXPECT_THAT(*plan.warning, AllOf(HasSubstr("96"), HasSubstr("64")));
}

TEST(PlanCpus, ExactlyTheHostsCpusNeedsNoWarning) {
  const CpuPlan plan = plan_cpus(8, 8, 64, std::nullopt);
  EXPECT_EQ(plan.total, 64);
  EXPECT_EQ(plan.warning, std::nullopt);
}

TEST(PlanCpus, NonPositiveHostCpusIsAnError) {
  for (int host : {0, -4}) {
    SCOPED_TRACE("host_cpus " + std::to_string(host));
    const auto e = test::caught_error([&] { plan_cpus(1, 8, host, std::nullopt); });
    EXPECT_EQ(e.exit_code, exit_code::failure);
    EXPECT_THAT(e.message, HasSubstr(std::to_string(host)));
  }
}

TEST(HostCpuCount, IsPositive) { EXPECT_GE(host_cpu_count(), 1); }

}  // namespace
}  // namespace gpurun
