// Unit tests for the site's rules carried out (src/service/policy_rules.hpp): a stop the engine
// refuses is tried again after a minute, then after twice as long each time (up to 15 minutes),
// not at every sample; a stop that works ends the retries and marks the run's end.
#include "policy_rules.hpp"

#include <gmock/gmock.h>

#include "notification_spool.hpp"
#include "policy_acts.hpp"
#include "support/test_support.hpp"
#include "support/webhook_receiver.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>
#include <vector>

namespace gpurun {
namespace {

using namespace std::chrono_literals;

const WallTime kStart = WallTime{} + 1'000'000s;

// Stops through /bin/false (refused) or /bin/true, and counts the stops asked.
class StoppingEngine final : public ContainerEngine {
 public:
  bool refuses = true;
  mutable int stops = 0;

  std::string name() const override { return "stand-in"; }
  std::vector<GpuContainer> gpu_holders(std::chrono::milliseconds /*timeout*/, Listing /*listing*/) override {
    return {};
  }
  CdiSupport cdi_support(std::chrono::milliseconds /*timeout*/) override { return {false, "stand-in"}; }
  std::vector<std::string> run_argv(const DockerRunRequest& /*request*/) const override { return {"/bin/true"}; }
  std::vector<std::string> stop_argv(const std::string& /*container*/,
                                     std::optional<int> /*timeout_s*/) const override {
    ++stops;
    return {refuses ? "/bin/false" : "/bin/true"};
  }
  std::vector<std::string> logs_argv(const std::string& /*c*/, const LogsRequest& /*request*/) const override {
    return {"/bin/true"};
  }
  std::vector<std::string> attach_argv(const std::string& /*c*/) const override { return {"/bin/true"}; }
  std::vector<std::string> remove_argv(const std::string& /*c*/) const override { return {"/bin/true"}; }
  std::vector<std::string> inspect_argv(const std::string& /*c*/) const override { return {"/bin/true"}; }
  std::vector<std::string> image_inspect_argv(const std::string& /*i*/) const override { return {"/bin/true"}; }
};

// A container gpurun started, with a one-minute time limit, running since kStart.
struct TimedRun {
  HolderSample holder{.key = "container:c1",
                      .name = "alice_gpu0_1",
                      .user = "alice",
                      .container_id = "c1",
                      .image = "",
                      .command = "",
                      .gpus = {0},
                      .memory_used_mib = std::nullopt,
                      .started_by_gpurun = true,
                      .time_limit = 60s,
                      .notify_end = false,
                      .listed_by_engine = true};
  RunRecord run;
  TimedRun() {
    run.id = 3;
    run.key = holder.key;
    run.start = kStart;
  }
  void observe(PolicyRules& rules, std::chrono::seconds at, ContainerEngine& engine) const {
    rules.observe({.when = kStart + at, .gpus = {}, .holders = {holder}}, {run}, &engine);
  }
};

// The seconds after kStart at which a stop was asked, sampling every 10 s for `until`.
std::vector<int> stops_asked(PolicyRules& rules, StoppingEngine& engine, const TimedRun& timed,
                             std::chrono::seconds until) {
  std::vector<int> at;
  for (std::chrono::seconds t = 0s; t <= until; t += 10s) {
    const int before = engine.stops;
    timed.observe(rules, t, engine);
    if (engine.stops > before) at.push_back(static_cast<int>(t.count()));
  }
  return at;
}

// The fingerprint is what a restart compares to take the rules' state up: an upgrade that changes
// it for rules that did not change starts every idle streak and warning afresh. As written before
// exempt_containers existed, and with it only where it is set.
TEST(PolicyRules, TheFingerprintOfUnchangedRulesIsWhatOlderServicesStored) {
  SitePolicy policy;
  policy.idle_policy = IdlePolicy{.below_percent = 5,
                                  .warn_after = 3600s,
                                  .stop_after = 7200s,
                                  .scope = IdleScope::gpurun,
                                  .exempt_users = {"alice"},
                                  .dry_run = false};
  EXPECT_EQ(PolicyRules(policy, "dgx1").fingerprint(),
            "max_runtime -1; idle_policy 5 3600 7200 0 false [alice]; interval 10000");
  policy.idle_policy->exempt_containers = {"dcgm-exporter"};
  EXPECT_EQ(PolicyRules(policy, "dgx1").fingerprint(),
            "max_runtime -1; idle_policy 5 3600 7200 0 false [alice] [dcgm-exporter]; interval 10000");
}

TEST(PolicyRules, ARefusedStopIsTriedAgainAfterAMinuteThenTwiceAsLongUpToFifteenMinutes) {
  PolicyRules rules(SitePolicy{}, "gpu-host");
  StoppingEngine engine;
  const TimedRun timed;
  // Due at 60 s; tried again at 120, 240, 480, 960, then every 900 s.
  EXPECT_EQ(stops_asked(rules, engine, timed, 2800s), (std::vector<int>{60, 120, 240, 480, 960, 1860, 2760}));
}

// The wait before a retry is measured on the steady clock: the wall clock stepped back an hour
// after the refusal does not put the retry off by that hour.
TEST(PolicyRules, AWallClockSteppedBackDoesNotPutARetryOff) {
  PolicyRules rules(SitePolicy{}, "gpu-host");
  StoppingEngine engine;
  const TimedRun timed;
  const auto steady = std::chrono::steady_clock::time_point{} + std::chrono::hours(1000);
  const auto observe = [&](std::chrono::seconds wall, std::chrono::seconds ran) {
    rules.observe({.when = kStart + wall, .gpus = {}, .holders = {timed.holder}, .monotonic = steady + ran},
                  {timed.run}, &engine);
  };
  observe(0s, 0s);
  observe(30s, 30s);  // warned
  observe(60s, 60s);  // due: refused
  ASSERT_EQ(engine.stops, 1);
  observe(60s - 3600s, 130s);  // 70 s later by the steady clock, the wall clock an hour back
  EXPECT_EQ(engine.stops, 2);
}

TEST(PolicyRules, AStopThatWorksEndsTheRetriesAndMarksTheRunsEnd) {
  PolicyRules rules(SitePolicy{}, "gpu-host");
  StoppingEngine engine;
  const TimedRun timed;
  EXPECT_EQ(stops_asked(rules, engine, timed, 100s), (std::vector<int>{60}));
  engine.refuses = false;
  timed.observe(rules, 120s, engine);
  EXPECT_EQ(engine.stops, 2);
  timed.observe(rules, 130s, engine);  // stopped: not asked again while the sample still shows it
  EXPECT_EQ(engine.stops, 2);
  std::vector<RunRecord> ended{timed.run};
  rules.ended(ended);
  EXPECT_EQ(ended.front().ended_by, "time_limit");
}

// A container stopped by a rule that the engine runs again (--restart always, `docker start`)
// under the same id before its run ended: the rules start afresh with it. It was left alone for
// the rest of its life, and its run marked as stopped.
TEST(PolicyRules, AStoppedContainerThatRunsAgainIsWatchedAgain) {
  PolicyRules rules(SitePolicy{}, "gpu-host");
  StoppingEngine engine;
  engine.refuses = false;
  const TimedRun timed;
  timed.observe(rules, 30s, engine);  // warned
  timed.observe(rules, 60s, engine);  // stopped
  ASSERT_EQ(engine.stops, 1);
  timed.observe(rules, 65s, engine);  // a sample that still shows it changes nothing
  rules.observe({.when = kStart + 70s, .gpus = {}, .holders = {}}, {timed.run}, &engine);  // gone
  timed.observe(rules, 80s, engine);  // running again: past its limit, so warned first
  EXPECT_EQ(engine.stops, 1);
  timed.observe(rules, 110s, engine);  // its notice run out
  EXPECT_EQ(engine.stops, 2);
  std::vector<RunRecord> ended{timed.run};
  rules.ended(ended);
  EXPECT_EQ(ended.front().ended_by, "time_limit");
}

TEST(PolicyRules, AHolderGoneAndBackStartsItsRetriesAfresh) {
  PolicyRules rules(SitePolicy{}, "gpu-host");
  StoppingEngine engine;
  const TimedRun timed;
  EXPECT_EQ(stops_asked(rules, engine, timed, 130s), (std::vector<int>{60, 120}));  // next try at 240
  rules.observe({.when = kStart + 140s, .gpus = {}, .holders = {}}, {}, &engine);   // gone from a sample
  timed.observe(rules, 150s, engine);  // back, and past its limit: warned again first
  EXPECT_EQ(engine.stops, 2);
  timed.observe(rules, 180s, engine);  // its notice (30 s) run out: tried at once, no retry's wait
  EXPECT_EQ(engine.stops, 3);
}

TEST(PolicyRules, NothingIsBegunOnceTheServiceIsStopping) {
  // A hung `docker stop` each, one after another: the service outlived systemd's 30 s.
  PolicyRules rules(SitePolicy{}, "gpu-host");
  StoppingEngine engine;
  engine.refuses = false;
  const TimedRun timed;
  timed.observe(rules, 30s, engine);  // warned
  rules.observe({.when = kStart + 60s, .gpus = {}, .holders = {timed.holder}}, {timed.run}, &engine,
                [] { return true; });
  EXPECT_EQ(engine.stops, 0);
  PolicyRules going_on(SitePolicy{}, "gpu-host");
  timed.observe(going_on, 30s, engine);
  going_on.observe({.when = kStart + 60s, .gpus = {}, .holders = {timed.holder}}, {timed.run}, &engine,
                   [] { return false; });
  EXPECT_EQ(engine.stops, 1);
}

// A warning due as gpurund stops still goes out: the rules count it given, and after the restart
// the stop comes on time. It was dropped with the stops, and the job stopped without a word.
TEST(PolicyRules, AWarningDueAsTheServiceStopsStillGoesOut) {
  const test::WebhookReceiver receiver;
  SitePolicy policy;
  policy.notify = NotifyPolicy{};
  policy.notify->webhook = receiver.url();
  StoppingEngine engine;
  const TimedRun timed;
  {
    PolicyRules rules(policy, "dgx1");
    rules.observe({.when = kStart + 30s, .gpus = {}, .holders = {timed.holder}}, {timed.run}, &engine,
                  [] { return true; });
    for (int i = 0; i < 100 && receiver.bodies().empty(); ++i) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(engine.stops, 0);
  ASSERT_EQ(receiver.bodies().size(), 1U);
  EXPECT_THAT(receiver.bodies().front(), ::testing::HasSubstr("time limit"));
}

// What the last stop could not deliver is sent when the same rules resume, and dropped where a
// restart brought other rules (their warnings start afresh).
TEST(PolicyRules, TheLastStopsUndeliveredNotificationsGoOutOnlyUnderTheSameRules) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const test::WebhookReceiver receiver;
  SitePolicy policy;
  policy.notify = NotifyPolicy{};
  policy.notify->webhook = receiver.url();
  const Notification warning{.event = "idle_warning",
                             .time = std::chrono::system_clock::now(),
                             .host = "dgx1",
                             .text = "run 3 idle",
                             .run = {{"id", 3}},
                             .user = "alice"};
  ASSERT_EQ(keep_notifications(kept, {{.notification = warning, .mailed = true, .posted = false}}), std::nullopt);
  {
    PolicyRules other_rules(policy, "dgx1", 10s, kept);
    other_rules.start_afresh();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
  EXPECT_TRUE(receiver.bodies().empty());

  // A stop the last rules made is still news under the new ones: its user is told, the warning
  // beside it is not.
  {
    const test::WebhookReceiver told;
    SitePolicy other = policy;
    other.notify->webhook = told.url();
    Notification stopped = warning;
    stopped.event = "idle_stopped";
    stopped.text = "run 3 stopped";
    ASSERT_EQ(keep_notifications(kept, {{.notification = warning, .mailed = true, .posted = false},
                                        {.notification = stopped, .mailed = true, .posted = false}}),
              std::nullopt);
    {
      PolicyRules other_rules(other, "dgx1", 10s, kept);
      other_rules.start_afresh(1);
      const MachineSample sample{.when = kStart + 10s, .gpus = {}, .holders = {}};
      other_rules.observe(sample, {}, nullptr);
      for (int i = 0; i < 100 && told.bodies().empty(); ++i) std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(told.bodies().size(), 1U);
    EXPECT_THAT(told.bodies().front(), ::testing::HasSubstr("run 3 stopped"));
    EXPECT_FALSE(std::filesystem::exists(kept));
  }

  ASSERT_EQ(keep_notifications(kept, {{.notification = warning, .mailed = true, .posted = false}}), std::nullopt);
  {
    PolicyRules same_rules(policy, "dgx1", 10s, kept);
    RunRecord open;  // run 3 is still open: its warning still means something
    open.id = 3;
    open.key = "container:c3";
    open.start = open.last_seen = kStart;
    same_rules.resume({open}, {}, kStart, 2);
    const MachineSample sample{.when = kStart + 10s, .gpus = {}, .holders = {}};
    same_rules.observe(sample, {open}, nullptr);
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(receiver.bodies().empty());  // not before the samples that end what ended meanwhile
    same_rules.observe(sample, {open}, nullptr);
    for (int i = 0; i < 100 && receiver.bodies().empty(); ++i) std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(receiver.bodies().size(), 1U);
  EXPECT_THAT(receiver.bodies().front(), ::testing::HasSubstr("run 3 idle"));

  // Run 3 ended while the service was down: the samples after the restart end it, and its
  // warning is not sent.
  ASSERT_EQ(keep_notifications(kept, {{.notification = warning, .mailed = true, .posted = false}}), std::nullopt);
  {
    PolicyRules same_rules(policy, "dgx1", 10s, kept);
    RunRecord open;
    open.id = 3;
    open.key = "container:c3";
    open.start = open.last_seen = kStart;
    same_rules.resume({open}, {}, kStart, 2);
    const MachineSample sample{.when = kStart + 10s, .gpus = {}, .holders = {}};
    same_rules.observe(sample, {open}, nullptr);  // missed once: still open
    same_rules.observe(sample, {}, nullptr);      // missed twice: ended
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(receiver.bodies().size(), 1U);
  EXPECT_FALSE(std::filesystem::exists(kept));
}

// A run whose launch asked to be told of its end (--notify, a label) that ends while gpurund is
// stopped: the container, and its label, are gone by the next start, which told nobody.
TEST(PolicyRules, ARunsNotifyOutlivesARestartAndItsEndIsToldWhenItEndedMeanwhile) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const test::WebhookReceiver receiver;
  SitePolicy policy;
  policy.notify = NotifyPolicy{};  // run_ended is not among its events: only a run's own --notify asks
  policy.notify->webhook = receiver.url();
  TimedRun asked;
  asked.holder.time_limit.reset();
  asked.holder.notify_end = true;
  StoppingEngine engine;
  {
    PolicyRules before(policy, "dgx1", 10s, kept);
    asked.observe(before, 0s, engine);
  }
  EXPECT_EQ(read_run_keys(dir / kAskedFile), std::set<std::string>{"container:c1"});
  {
    PolicyRules after(policy, "dgx1", 10s, kept);
    after.take_up_asked({asked.run});
    std::vector<RunRecord> ended{asked.run};
    ended.front().end = kStart + 20s;
    after.ended(ended);  // the samples after the start found it gone
    for (int i = 0; i < 100 && receiver.bodies().empty(); ++i) std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(receiver.bodies().size(), 1U);
  EXPECT_THAT(receiver.bodies().front(), ::testing::HasSubstr("run_ended"));
  EXPECT_TRUE(read_run_keys(dir / kAskedFile).empty());  // told: forgotten
}

// A bare process's run is named by its command line, which may hold a token: the chat hears its
// program alone.
TEST(PolicyRules, ARunEndedTellsABareProcessByItsProgramAlone) {
  const test::TempDir dir;
  const test::WebhookReceiver receiver;
  SitePolicy policy;
  policy.notify = NotifyPolicy{};
  policy.notify->webhook = receiver.url();
  policy.notify->events = {"run_ended"};
  RunRecord bare;
  bare.id = 7;
  bare.key = "process:4242";
  bare.user = "alice";
  bare.command = "/usr/bin/python3 train.py --hf-token=hf_SECRET";
  bare.name = bare.command;
  bare.start = kStart;
  bare.end = kStart + 20s;
  {
    PolicyRules rules(policy, "dgx1", 10s, dir / "kept.json");
    std::vector<RunRecord> ended{bare};
    rules.ended(ended);
    for (int i = 0; i < 100 && receiver.bodies().empty(); ++i) std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(receiver.bodies().size(), 1U);
  EXPECT_THAT(receiver.bodies().front(), ::testing::HasSubstr("run 7 (python3, user alice)"));
  EXPECT_THAT(receiver.bodies().front(), ::testing::Not(::testing::HasSubstr("SECRET")));
}

TEST(PolicyActs, AStopThatDidNotHappenIsAWarningNotAStop) {
  // A dry run told the webhook and the user "idle_stopped" while nothing was stopped.
  PolicyAction stop;
  stop.rule = PolicyAction::Rule::idle;
  stop.kind = PolicyAction::Kind::stop;
  EXPECT_EQ(event_of(stop, true), "idle_stopped");
  EXPECT_EQ(event_of(stop, false), "idle_warning");
  stop.rule = PolicyAction::Rule::time_limit;
  EXPECT_EQ(event_of(stop, true), "time_limit_stopped");
}

TEST(PolicyActs, AWarningPromisesAStopOnlyWhereOneWillCome) {
  // Out of the policy's scope, or under a dry run, it was told it "will be stopped".
  PolicyAction warn;
  warn.rule = PolicyAction::Rule::idle;
  warn.kind = PolicyAction::Kind::warn;
  warn.run_id = 3;
  warn.name = "nb";
  warn.elapsed = std::chrono::seconds(3600);
  warn.limit = std::chrono::seconds(7200);
  EXPECT_THAT(carry_out(warn, false, nullptr).text, ::testing::HasSubstr("it will be stopped when idle for 2h"));
  EXPECT_THAT(carry_out(warn, true, nullptr).text,
              ::testing::HasSubstr("it is left running (the idle policy is a dry run)"));
  warn.limit = std::chrono::seconds(0);  // the enforcer's word for "never stopped"
  EXPECT_THAT(carry_out(warn, false, nullptr).text, ::testing::HasSubstr("; it is left running"));
}

}  // namespace
}  // namespace gpurun
