// Unit tests for /metrics' text (gpurun/service/metrics.hpp): DCGM's names and labels with the
// holder's, gpurun's own series, escaping of what users named, counters that only go up.
#include "gpurun/service/metrics.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "support/test_support.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

const WallTime kNow = WallTime{} + 1'000'000s;

RunRecord run(std::int64_t id, const std::string& key, const std::string& user, double gpu_s, double busy_s) {
  RunRecord r;
  r.id = id;
  r.key = key;
  r.user = user;
  r.gpu_seconds = gpu_s;
  r.busy_gpu_seconds = busy_s;
  return r;
}

// Two GPUs: 0 held by alice's container (a name with a quote, a backslash and a newline), idle for
// 90 s; 1 free.
MetricsState two_gpus() {
  MetricsState state;
  state.hostname = "dgx1";
  Gpu held = test::make_gpu(0, 1000, 80000, 0);
  held.uuid = "GPU-aaa";
  held.name = "NVIDIA H100 80GB HBM3";
  held.pci_bus_id = "00000000:07:00.0";
  Gpu free_gpu = test::make_gpu(1, 4, 80000, 0);
  free_gpu.uuid = "GPU-bbb";
  free_gpu.name = "NVIDIA H100 80GB HBM3";
  state.gpus = {held, free_gpu};
  state.holders = {HolderSample{.key = "container:abc",
                                .name = "train \"big\"\\\nrun",
                                .user = "alice",
                                .container_id = "abc",
                                .image = "pytorch",
                                .command = "python train.py",
                                .gpus = {0},
                                .memory_used_mib = 1000}};
  state.running = {run(7, "container:abc", "alice", 900, 450)};
  state.idle_since = {{0, kNow - 90s}};
  state.user_seconds = {{"alice", {.gpu = 3600, .busy = 1800, .unmeasured = 600}}};
  state.last_sample_ok = true;
  state.sampled_at = kNow - 5s;
  return state;
}

TEST(PrometheusText, DcgmNamesCarryDcgmsLabelsAndTheHoldersWhileHeld) {
  const std::string text = prometheus_text(two_gpus(), kNow);
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-aaa\",pci_bus_id=\"00000000:07:00.0\","
                              "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"dgx1\","
                              "container=\"train \\\"big\\\"\\\\x5c\\\\x0arun\",user=\"alice\","
                              "hpc_job=\"train \\\"big\\\"\\\\x5c\\\\x0arun\"} 1000\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-bbb\",pci_bus_id=\"\",device=\"nvidia1\","
                              "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"dgx1\"} 79996\n"));
}

TEST(PrometheusText, GpurunsSeriesNameTheHolderTheRunAndHowLongItHasBeenIdle) {
  const std::string text = prometheus_text(two_gpus(), kNow);
  // The newline is \x0a: what users named never breaks the text format.
  const std::string labels =
      "{gpu=\"0\",UUID=\"GPU-aaa\",user=\"alice\",container=\"train \\\"big\\\"\\\\x5c\\\\x0arun\",run=\"7\"}";
  EXPECT_THAT(text, HasSubstr("gpurun_gpu_held" + labels + " 1\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_gpu_idle_seconds" + labels + " 90\n"));
  EXPECT_THAT(text, Not(HasSubstr("gpurun_gpu_held{gpu=\"1\"")));  // nobody holds GPU 1
  EXPECT_THAT(text, HasSubstr("# TYPE gpurun_user_gpu_seconds_total counter\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_user_gpu_seconds_total{user=\"alice\"} 3600\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_user_gpu_busy_seconds_total{user=\"alice\"} 1800\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_user_gpu_unmeasured_seconds_total{user=\"alice\"} 600\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_up{Hostname=\"dgx1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_source_errors_total{Hostname=\"dgx1\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("pid")));
}

// A job that joins a GPU idle for a day (one dcgm-exporter holds with --gpus all) has held it idle
// since it came, not for the day; an exempt container has no idle series at all, nor a bare
// process's unreadable command a label of its pid.
TEST(PrometheusText, IdleTimeIsEachHoldersOwnAndNoneForAnExemptContainer) {
  MetricsState state = two_gpus();
  state.idle_since = {{0, kNow - 24h}};
  state.running.front().start = kNow - 120s;  // alice's run came two minutes ago
  state.holders.push_back(HolderSample{.key = "container:dcgm",
                                       .name = "dcgm-exporter",
                                       .user = "",
                                       .container_id = "dcgm",
                                       .image = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3",
                                       .command = "",
                                       .gpus = {0},
                                       .memory_used_mib = std::nullopt});
  state.holders.push_back(HolderSample{.key = "process:4242:",
                                       .name = "pid 4242",
                                       .user = "bob",
                                       .container_id = "",
                                       .image = "",
                                       .command = "",
                                       .gpus = {1},
                                       .memory_used_mib = std::nullopt});
  state.idle_exempt_containers = {"dcgm-*"};
  const std::string text = prometheus_text(state, kNow);
  EXPECT_THAT(text, HasSubstr("gpurun_gpu_idle_seconds{gpu=\"0\",UUID=\"GPU-aaa\",user=\"alice\",container=\"train "
                              "\\\"big\\\"\\\\x5c\\\\x0arun\",run=\"7\"} 120\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_gpu_held{gpu=\"0\",UUID=\"GPU-aaa\",user=\"\",container=\"dcgm-exporter\""));
  EXPECT_THAT(text, Not(HasSubstr("gpurun_gpu_idle_seconds{gpu=\"0\",UUID=\"GPU-aaa\",user=\"\",container=\"dcgm")));
  EXPECT_THAT(text, HasSubstr(",hpc_job=\"unknown\"}"));
  EXPECT_THAT(text, Not(HasSubstr("pid 4242")));
  EXPECT_EQ(state.held_idle_since(0), kNow - 120s);  // the page's and status's GPU idle time
  state.holders.erase(state.holders.begin());        // dcgm-exporter alone
  EXPECT_EQ(state.held_idle_since(0), std::nullopt);
}

// Prometheus drops a series whose labels repeat another's: two users must never share a label.
TEST(LabelSafe, KeepsUtf8AndTellsEveryTwoNamesApart) {
  EXPECT_EQ(label_safe("jos\xc3\xa9"), "jos\xc3\xa9");  // é
  EXPECT_EQ(label_safe("jos\xc3\xa8"), "jos\xc3\xa8");  // è
  EXPECT_EQ(label_safe("a\nb\xff"), "a\\x0ab\\xff");
  // A name that spells an escape is not the name it spells.
  EXPECT_EQ(label_safe("a\\x0ab"), "a\\x5cx0ab");
  EXPECT_NE(label_safe("a\\x0ab"), label_safe("a\nb"));
  EXPECT_EQ(label_safe("C:\\"), "C:\\x5c");
  const std::string long_a = std::string(130, 'x') + "a";
  const std::string long_b = std::string(130, 'x') + "b";
  EXPECT_LE(label_safe(long_a).size(), 128U);
  EXPECT_NE(label_safe(long_a), label_safe(long_b));
  EXPECT_EQ(label_safe(long_a).substr(0, 119), std::string(119, 'x'));
  std::string accents;  // 70 é, 140 bytes: cut between two of them, never inside one
  for (int i = 0; i < 70; ++i) accents += "\xc3\xa9";
  const std::string cut = label_safe(accents);
  EXPECT_LE(cut.size(), 128U);
  EXPECT_EQ(cut.substr(0, cut.find('~')), accents.substr(0, 118));
}

TEST(PrometheusText, EveryLineIsACommentOrOneSampleOfAKnownFamily) {
  std::istringstream lines(prometheus_text(two_gpus(), kNow));
  const std::regex sample(
      R"re(([a-zA-Z_:][a-zA-Z0-9_:]*)\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\} -?[0-9.e+]+)re");
  const std::regex comment(R"(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+)");
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    EXPECT_TRUE(std::regex_match(line, sample) || std::regex_match(line, comment)) << line;
    samples += line.starts_with('#') ? 0 : 1;
  }
  EXPECT_EQ(samples, 2 * 3 + 2 + 3 + 2);  // 2 GPUs × 3 DCGM families, held + idle, 3 per user, up + errors
}

TEST(PrometheusText, UnderOwnVisibilityNoUsersGpuSecondsAreShown) {
  // Anyone who reaches /metrics would read there every user's usage and efficiency.
  const std::string all = prometheus_text(two_gpus(), kNow, HistoryVisibility::all);
  EXPECT_THAT(all, HasSubstr("gpurun_user_gpu_seconds_total{user="));
  const std::string own = prometheus_text(two_gpus(), kNow, HistoryVisibility::own);
  EXPECT_THAT(own, Not(HasSubstr("gpurun_user_gpu_seconds_total")));
  EXPECT_THAT(own, Not(HasSubstr("gpurun_user_gpu_busy_seconds_total")));
  EXPECT_THAT(own, Not(HasSubstr("gpurun_user_gpu_unmeasured_seconds_total")));
  EXPECT_THAT(own, HasSubstr("gpurun_up{"));
}

TEST(PrometheusText, AGpuOfUnknownReadingsHasNoSeriesRatherThanAZero) {
  MetricsState state = two_gpus();
  state.gpus[1].utilization_percent.reset();
  state.gpus[1].memory_used_mib.reset();
  state.last_sample_ok = false;
  state.source_errors = 3;
  const std::string text = prometheus_text(state, kNow);
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"")));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_FB_FREE{gpu=\"1\"")));
  EXPECT_THAT(text, HasSubstr("gpurun_up{Hostname=\"dgx1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_source_errors_total{Hostname=\"dgx1\"} 3\n"));
}

TEST(PrometheusText, PowerAndTemperatureUnderDcgmsNamesWhereTheSourceReadThem) {
  MetricsState state = two_gpus();
  state.gpus[0].power_draw_w = 97.74;
  state.gpus[0].temperature_c = 39;
  const std::string text = prometheus_text(state, kNow);
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-aaa\""));
  EXPECT_THAT(text, HasSubstr(",user=\"alice\",hpc_job=\"train \\\"big\\\"\\\\x5c\\\\x0arun\"} 97.74\n"));
  EXPECT_THAT(text, HasSubstr("hpc_job=\"train \\\"big\\\"\\\\x5c\\\\x0arun\"} 39\n"));
  // GPU 1's source said nothing of them: no series, rather than a zero.
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"")));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"")));
}

TEST(PrometheusText, AProcessIsNamedByItsProgramAloneAndOddBytesNeverReachALabel) {
  MetricsState state = two_gpus();
  state.holders[0] = HolderSample{.key = "process:9:1",
                                  .name = "/usr/bin/python3 train.py --token=SECRET",
                                  .user =
                                      "b\xff\xfe"
                                      "b",
                                  .container_id = "",
                                  .image = "",
                                  .command = "/usr/bin/python3 train.py --token=SECRET",
                                  .gpus = {0},
                                  .memory_used_mib = 1000};
  const std::string text = prometheus_text(state, kNow);
  EXPECT_THAT(text, HasSubstr(",container=\"\",user=\"b\\\\xff\\\\xfeb\",hpc_job=\"python3\"} "));
  EXPECT_THAT(text, Not(HasSubstr("SECRET")));
  for (const char c : text) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << static_cast<int>(c);
}

// A process on two MIG instances of GPU 0 is listed twice by the driver; one that has left /proc
// while the driver lets it go ("process:PID:") is the run of its pid, as the tracker counts it.
TEST(PrometheusText, EachHolderIsOneSeriesUnderTheRunTheTrackerGaveIt) {
  MetricsState state = two_gpus();
  HolderSample twice = state.holders[0];
  twice.memory_used_mib = 500;
  const HolderSample leaving{.key = "process:42:",
                             .name = "python3",
                             .user = "bob",
                             .container_id = "",
                             .image = "",
                             .command = "python3",
                             .gpus = {1},
                             .memory_used_mib = 10};
  state.holders = {state.holders[0], twice, leaving};
  state.running.push_back(run(8, "process:42:12345", "bob", 60, 0));
  const std::string text = prometheus_text(state, kNow);
  std::size_t held_gpu0 = 0;
  for (std::size_t at = text.find("gpurun_gpu_held{gpu=\"0\""); at != std::string::npos;
       at = text.find("gpurun_gpu_held{gpu=\"0\"", at + 1))
    ++held_gpu0;
  EXPECT_EQ(held_gpu0, 1U) << text;
  EXPECT_THAT(text, HasSubstr("gpurun_gpu_held{gpu=\"1\",UUID=\"GPU-bbb\",user=\"bob\",container=\"\",run=\"8\"} 1\n"));
}

// The source failing (a hung driver): the readings it gave last are not the GPUs' once three
// intervals and 10 s have passed: no GPU or holder series (an alert on idle time would fire on
// figures nobody measured), gpurun_up 0 and the errors counted say why.
TEST(PrometheusText, ReadingsTheSourceHasNotRenewedAreNotShownAsTheGpus) {
  MetricsState state = two_gpus();
  state.last_sample_ok = false;
  state.source_errors = 4;
  state.stale_after = 40s;
  state.sampled_at = kNow - 39s;  // one failed sample: still the GPUs' readings
  EXPECT_THAT(prometheus_text(state, kNow), HasSubstr("DCGM_FI_DEV_GPU_UTIL{"));
  state.sampled_at = kNow - 41s;
  const std::string text = prometheus_text(state, kNow);
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_GPU_UTIL{")));
  EXPECT_THAT(text, Not(HasSubstr("gpurun_gpu_held{")));
  EXPECT_THAT(text, Not(HasSubstr("gpurun_gpu_idle_seconds{")));
  EXPECT_THAT(text, HasSubstr("gpurun_up{Hostname=\"dgx1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpurun_source_errors_total{Hostname=\"dgx1\"} 4\n"));
  state.sampled_at.reset();  // none yet since the start
  EXPECT_THAT(prometheus_text(state, kNow), Not(HasSubstr("DCGM_FI_DEV_GPU_UTIL{")));
  // A source that hangs rather than fails: no sample has failed yet, but none came either.
  state.last_sample_ok = true;
  state.sampled_at = kNow - 41s;
  EXPECT_THAT(prometheus_text(state, kNow), HasSubstr("gpurun_up{Hostname=\"dgx1\"} 0\n"));
}

// Several holders of one GPU in DCGM's labels: a long name is cut on its own and leaves the
// others theirs, and what does not fit is counted.
TEST(PrometheusText, ALongHolderNameLeavesTheOthersInDcgmsLabels) {
  MetricsState state = two_gpus();
  HolderSample second = state.holders[0];
  second.key = "container:def";
  second.container_id = "def";
  second.name = std::string(200, 'A');
  second.user = "bob";
  state.holders.push_back(second);
  std::string text = prometheus_text(state, kNow);
  const std::size_t at = text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"");
  ASSERT_NE(at, std::string::npos);
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_THAT(line, HasSubstr("container=\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA~"));
  EXPECT_THAT(line, HasSubstr(",train \\\"big\\\"\\\\x5c\\\\x0arun\""));
  EXPECT_THAT(line, HasSubstr("user=\"alice,bob\""));
  for (int i = 0; i < 3; ++i) {
    second.key += "x";
    second.name += "B";
    state.holders.push_back(second);
  }
  text = prometheus_text(state, kNow);
  EXPECT_THAT(text, HasSubstr(",+3 more\""));
}

TEST(PrometheusText, EachFamilysLinesStayTogether) {
  std::istringstream lines(prometheus_text(two_gpus(), kNow));
  std::vector<std::string> order;
  for (std::string line; std::getline(lines, line);) {
    const std::string name =
        line.starts_with("# ") ? line.substr(7, line.find(' ', 7) - 7) : line.substr(0, line.find_first_of("{ "));
    if (order.empty() || order.back() != name) order.push_back(name);
  }
  std::vector<std::string> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << ::testing::PrintToString(order);
}

TEST(CreditUsers, AddsWhatEachSampleCreditedToTheRunsUsersEndedRunsIncluded) {
  std::map<std::string, UserSeconds> totals{{"alice", {.gpu = 100, .busy = 50}}};
  const std::vector<RunRecord> before{run(1, "a", "alice", 10, 5), run(2, "b", "bob", 20, 0)};
  const std::vector<RunRecord> running{run(1, "a", "alice", 30, 15), run(3, "c", "carol", 10, 10)};
  const std::vector<RunRecord> ended{run(2, "b", "bob", 25, 1)};
  credit_users(before, running, ended, totals);
  EXPECT_DOUBLE_EQ(totals["alice"].gpu, 120);
  EXPECT_DOUBLE_EQ(totals["alice"].busy, 60);
  EXPECT_DOUBLE_EQ(totals["bob"].gpu, 5);
  EXPECT_DOUBLE_EQ(totals["bob"].busy, 1);
  EXPECT_DOUBLE_EQ(totals["carol"].gpu, 10);  // new since the last sample: all of it
}

// A MIG instance's time (no utilization known) counted apart, so that the efficiency Prometheus
// makes leaves it out as history does.
TEST(CreditUsers, TimeWithUnknownUtilizationIsCountedApart) {
  std::map<std::string, UserSeconds> totals;
  RunRecord before = run(1, "a", "dave", 10, 0);
  before.unmeasured_gpu_seconds = 10;
  RunRecord now = run(1, "a", "dave", 40, 0);
  now.unmeasured_gpu_seconds = 40;
  credit_users({before}, {now}, {}, totals);
  EXPECT_DOUBLE_EQ(totals["dave"].gpu, 30);
  EXPECT_DOUBLE_EQ(totals["dave"].unmeasured, 30);
}

TEST(CreditUsers, ARunWhoseUserIsLearntLateIsThatUsersWhole) {
  // As `gpurun usage` counts it: the store's row is the user's from its start.
  std::map<std::string, UserSeconds> totals;
  credit_users({}, {run(1, "a", "", 10, 5)}, {}, totals);
  credit_users({run(1, "a", "", 10, 5)}, {run(1, "a", "erin", 30, 15)}, {}, totals);
  EXPECT_DOUBLE_EQ(totals["erin"].gpu, 30);
  EXPECT_DOUBLE_EQ(totals["erin"].busy, 15);
  EXPECT_DOUBLE_EQ(totals[""].gpu, 10);  // a counter: what it was credited stays
}

TEST(CreditUsers, ACounterNeverGoesDown) {
  std::map<std::string, UserSeconds> totals;
  credit_users({run(1, "a", "alice", 50, 50)}, {run(1, "a", "alice", 40, 40)}, {}, totals);
  EXPECT_DOUBLE_EQ(totals["alice"].gpu, 0);
  EXPECT_DOUBLE_EQ(totals["alice"].busy, 0);
}

TEST(PrometheusLabelValue, EscapesBackslashQuoteAndNewlineOnly) {
  EXPECT_EQ(prometheus_label_value("a\\b\"c\nd<script>"), "a\\\\b\\\"c\\nd<script>");
}

}  // namespace
}  // namespace gpurun
