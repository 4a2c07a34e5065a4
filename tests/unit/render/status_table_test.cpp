// Unit tests for `gpurun status` for people: short states, who holds a GPU, fitting, colour.
#include "gpurun/render/status_table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "gpurun/util/table.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::make_gpu;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

GpuAssessment assessed(Gpu gpu, bool free) {
  GpuAssessment a;
  a.gpu = std::move(gpu);
  a.free = free;
  if (!free) a.reasons = {"a reason"};
  return a;
}

Holder reservation(std::string user) {
  return {.kind = Holder::Kind::reservation, .user = std::move(user), .name = "gpurun"};
}
Holder container(std::string user, std::string name) {
  return {.kind = Holder::Kind::container, .user = std::move(user), .name = std::move(name)};
}

TEST(ShortState, SaysFreeBusyReservedOrNotOffered) {
  EXPECT_EQ(short_state(assessed(make_gpu(0, 4, 81920, 0), true)), "free");

  GpuAssessment busy = assessed(make_gpu(1, 70000, 81920, 97), false);
  busy.gpu.processes = {{"GPU-1", 1, 100.0, "alice"}, {"GPU-1", 2, 100.0, "alice"}, {"GPU-1", 3, 1.0, "bob"}};
  EXPECT_EQ(short_state(busy), "busy: alice,bob 97%");

  GpuAssessment reserved = assessed(make_gpu(2, 4, 81920, 0), false);
  reserved.holders = {reservation("carol")};
  EXPECT_EQ(short_state(reserved), "reserved: carol");
  reserved.holders = {reservation("")};
  EXPECT_EQ(short_state(reserved), "reserved");

  GpuAssessment in_container = assessed(make_gpu(3, 4, 81920, 0), false);
  in_container.holders = {container("", "legacy"), reservation("dave")};
  EXPECT_EQ(short_state(in_container), "busy: dave 0%");  // a container makes it more than reserved
  in_container.holders = {container("", "legacy")};
  EXPECT_EQ(short_state(in_container), "busy: legacy 0%");

  GpuAssessment strangers = assessed(make_gpu(4, 9000, 81920, std::nullopt), false);
  strangers.gpu.processes = {{"GPU-4", 1, 100.0, {}}};
  EXPECT_EQ(short_state(strangers), "busy: 1 proc");
  EXPECT_EQ(short_state(assessed(make_gpu(5, std::nullopt, std::nullopt, std::nullopt), false)), "busy");

  GpuAssessment withheld = assessed(make_gpu(6, 4, 81920, 0), false);
  withheld.withheld = true;
  EXPECT_EQ(short_state(withheld), "not offered");
  GpuAssessment mig = assessed(make_gpu(7, 4, 81920, 0), false);
  mig.gpu.mig_enabled = true;
  EXPECT_EQ(short_state(mig), "not offered");
}

TEST(GpuUsers, ProcessesThenContainersThenReservationsEachOnce) {
  GpuAssessment a = assessed(make_gpu(0, 1, 2, 3), false);
  a.gpu.processes = {{"GPU-0", 1, 1.0, "bob"}, {"GPU-0", 2, 1.0, ""}};
  a.holders = {reservation("alice"), container("carol", "c"), reservation("bob")};
  EXPECT_THAT(gpu_users(a), ElementsAre("bob", "carol", "alice"));
  EXPECT_THAT(gpu_users(assessed(make_gpu(0, 1, 2, 3), true)), IsEmpty());
}

std::vector<GpuAssessment> two_gpus() {
  GpuAssessment busy = assessed(make_gpu(0, 78342, 81920, 100), false);
  busy.gpu.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  busy.gpu.processes = {{"GPU-0", 1, 100.0, "a-user-with-a-very-long-login-name"}};
  busy.reasons = {"1 compute process (pid 1)"};
  GpuAssessment free = assessed(make_gpu(1, 4, 81920, 0), true);
  free.gpu.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  return {busy, free};
}

TEST(FormatStatusTable, FitsTheWidthGivenNamesFirstThenUsersThenState) {
  const std::string table =
      format_status_table(two_gpus(), {}, {.width = 80, .verbose = false, .colour = false, .idle_s = std::nullopt});
  EXPECT_EQ(table,
            "GPU  NAME                       MEMORY  UTIL  USER      STATE\n"
            "  0  RTX PRO 6000 …  78342 / 81920 MiB  100%  a-user-…  busy: a-user-with-a-ver…\n"
            "  1  RTX PRO 6000 …      4 / 81920 MiB    0%  -         free\n");
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(display_width(line), 80u) << line;
  const std::string wide =
      format_status_table(two_gpus(), {}, {.width = 200, .verbose = false, .colour = false, .idle_s = std::nullopt});
  EXPECT_THAT(wide, HasSubstr("  0  NVIDIA RTX PRO 6000 Blackwell Server Edition  78342 / 81920 MiB  100%  "
                              "a-user-with-a-very-long-login-name  busy: a-user-with-a-very-long-login-name 100%\n"));
}

TEST(FormatStatusTable, WithTheServiceAnIdleColumnSaysHowLongEachHeldGpuHasBeenIdle) {
  std::vector<GpuAssessment> gpus = two_gpus();
  gpus[0].gpu.utilization_percent = 0;
  const std::string table = format_status_table(
      gpus, {},
      {.width = 200, .verbose = false, .colour = false, .idle_s = std::map<int, long long>{{0, 3 * 3600 + 720}}});
  EXPECT_THAT(table, HasSubstr("  UTIL    IDLE  USER"));
  EXPECT_THAT(table, HasSubstr("  0%  3h 12m  a-user"));
  EXPECT_THAT(table, HasSubstr("  0%       -  -  "));  // GPU 1: free, not idle-held
}

TEST(FormatStatusTable, VerboseAddsProcsScoreAndTheReasonsUncut) {
  const std::string table =
      format_status_table(two_gpus(), {}, {.width = 80, .verbose = true, .colour = false, .idle_s = std::nullopt});
  EXPECT_THAT(table, HasSubstr("  UTIL  PROCS  SCORE  USER"));
  EXPECT_THAT(table, HasSubstr("NVIDIA RTX PRO 6000 Blackwell Server Edition"));
  EXPECT_THAT(table, HasSubstr("\n      why: 1 compute process (pid 1)\n"));
}

TEST(FormatStatusTable, ColoursOnlyTheStateAndOnlyWhenAsked) {
  const std::string plain =
      format_status_table(two_gpus(), {}, {.width = 200, .verbose = false, .colour = false, .idle_s = std::nullopt});
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  const std::string coloured =
      format_status_table(two_gpus(), {}, {.width = 200, .verbose = false, .colour = true, .idle_s = std::nullopt});
  EXPECT_THAT(coloured, HasSubstr("  \033[31mbusy: a-user-with-a-very-long-login-name 100%\033[0m\n"));
  EXPECT_THAT(coloured, HasSubstr("  \033[32mfree\033[0m\n"));
}

}  // namespace
}  // namespace gpurun
