// Unit tests for notifications (gpurun/service/notifier.hpp): the webhook's JSON, the mail
// message and its header safety, and the notifier delivering to a real local HTTP receiver (with
// retries after a 500) and to a sendmail stand-in, on a thread of its own.
#include "gpurun/service/notifier.hpp"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <csignal>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "gpurun/util/fd.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/stop_request.hpp"
#include "notification_spool.hpp"
#include "support/test_support.hpp"
#include "support/webhook_receiver.hpp"

namespace gpurun {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

Notification notification(std::string user = "alice", std::string text = "run 3 (x) stopped") {
  return {.event = "idle_stopped",
          .time = WallTime{} + 1'764'000'000s,
          .host = "dgx1",
          .text = std::move(text),
          .run = {{"id", 3}, {"name", "x"}},
          .user = std::move(user)};
}

// An idle warning given now.
Notification warning_now(std::string user, std::string text) {
  Notification warning = notification(std::move(user), std::move(text));
  warning.event = "idle_warning";
  warning.time = std::chrono::system_clock::now();
  return warning;
}

// A TCP socket listening on a free port of 127.0.0.1 (a webhook that never answers, unless the
// test accepts and reads), and the webhook URL of it.
Fd listening_socket() {
  Fd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  EXPECT_EQ(::bind(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(::listen(socket.get(), 8), 0);
  return socket;
}
std::string url_of(const Fd& listening) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  EXPECT_EQ(::getsockname(listening.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  return "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/hook";
}

bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 200; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

TEST(Notification, TheWebhookGetsEventTimeHostTextAndTheRun) {
  const auto body = webhook_body(notification());
  EXPECT_EQ(body.dump(),
            R"({"event":"idle_stopped","time":"2025-11-24T16:00:00Z","host":"dgx1","text":"run 3 (x) stopped",)"
            R"("run":{"id":3,"name":"x"}})");
}

TEST(Notification, TheWebhooksTextCannotMentionOrLinkInAChat) {
  const auto body = webhook_body(notification("alice", "run 3 (<!channel> & <https://x|y>) stopped"));
  EXPECT_EQ(body["text"], "run 3 (&lt;!channel&gt; &amp; &lt;https:\u200b//x|y&gt;) stopped");
  // Mattermost's Markdown: no @channel, no link, no image (a zero-width space breaks each).
  const auto markdown = webhook_body(notification("alice", "run 4 (@channel ![x](https://t/p.png)) stopped"));
  EXPECT_EQ(markdown["text"], "run 4 (@\u200bchannel ![x]\u200b(https:\u200b//t/p.\u200bpng)) stopped");
  // A bare URL in a command line is text, not a link.
  EXPECT_EQ(webhook_body(notification("alice", "python x.py --from http://evil/x"))["text"],
            "python x.\u200bpy --from http:\u200b//evil/x");
  // Nor a bare domain in a name (www.evil.example), while a version's dot stays as it was.
  EXPECT_EQ(webhook_body(notification("alice", "run 5 (www.evil.example) of lab/pytorch:24.05 ."))["text"],
            "run 5 (www.\u200bevil.\u200bexample) of lab/pytorch:24.05 .");
  EXPECT_EQ(webhook_body(notification("alice", "run 6 (\u043f\u0440.\u0440\u0444)"))["text"],
            "run 6 (\u043f\u0440.\u200b\u0440\u0444)");
  // Invalid UTF-8 in a command line is replaced, never a failure to send.
  Notification odd = notification();
  odd.run = {{"command", "python x.py \xff"}};
  EXPECT_THAT(json_line(webhook_body(odd)), HasSubstr("x.py \xEF\xBF\xBD"));
}

TEST(Notification, TheMailGoesToTheUserAtTheDomainWithTheTextAsSubject) {
  const auto message = mail_message(notification(), "lab.example.org");
  ASSERT_TRUE(message);
  EXPECT_THAT(*message, HasSubstr("To: alice@lab.example.org\nSubject: [gpurun] run 3 (x) stopped\n"));
  EXPECT_THAT(*message, HasSubstr("Auto-Submitted: auto-generated\n"));
  EXPECT_THAT(*message, HasSubstr("\n\nrun 3 (x) stopped\n"));
  EXPECT_THAT(*mail_message(notification(), ""), HasSubstr("To: alice\n"));
}

// One notification sent again (a sendmail killed at its limit after its relay took the mail) has
// the same Message-ID, which mail systems take for the copy it is; another has its own.
TEST(Notification, AMailsIdIsTheSameForEveryAttemptAndAnothersDiffers) {
  const std::string first = *mail_message(notification(), "lab.example.org");
  EXPECT_THAT(first, ::testing::ContainsRegex(
                         "\nMessage-ID: <gpurund\\.idle_stopped\\.3\\.1764000000000\\.[0-9a-f]{16}@dgx1>\n"));
  EXPECT_EQ(*mail_message(notification(), "lab.example.org"), first);
  Notification other = notification("alice", "run 4 (y) stopped");
  other.host = "dgx 1<>";
  const std::string second = *mail_message(other, "lab.example.org");
  EXPECT_THAT(second, HasSubstr("@dgx_1__>\n"));
  const auto id_of = [](const std::string& m) { return m.substr(m.find("Message-ID:"), 60); };
  EXPECT_NE(id_of(first), id_of(second));
}

TEST(Notification, NoMailForANameThatIsNoLoginAndNoLineBreakIntoTheHeaders) {
  for (const char* user : {"", "bob\nBcc: eve@example.org", "bob,eve", "-oQ/tmp", "a b", "<eve@x>"})
    EXPECT_FALSE(mail_message(notification(user), "lab.example.org")) << user;
  const auto message = mail_message(notification("alice", "stopped\nBcc: eve@example.org"), "");
  ASSERT_TRUE(message);
  EXPECT_THAT(*message, Not(HasSubstr("\nBcc:")));
  EXPECT_THAT(*message, HasSubstr("Subject: [gpurun] stopped Bcc: eve@example.org\n"));
}

TEST(Notifier, PostsToTheWebhookAndTriesAgainAfterAServerError) {
  const test::WebhookReceiver receiver({500, 503});
  NotifyPolicy policy;
  policy.webhook = receiver.url();
  {
    Notifier notifier(policy, {.first = 10ms, .attempts = 5});
    notifier.send(notification());
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() == 3; }));
  }
  for (const std::string& body : receiver.bodies()) EXPECT_EQ(body, webhook_body(notification()).dump());
  EXPECT_THAT(receiver.requests().front(), HasSubstr("POST /hook HTTP/1.1"));
  EXPECT_THAT(receiver.requests().front(), HasSubstr("Content-Type: application/json"));
}

TEST(Notifier, GivesUpAfterItsAttemptsAndOnAClientError) {
  const test::WebhookReceiver receiver({500, 500, 404});
  NotifyPolicy policy;
  policy.webhook = receiver.url();
  {
    Notifier notifier(policy, {.first = 10ms, .attempts = 2});
    notifier.send(notification());  // 500, 500: given up
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() == 2; }));
    std::this_thread::sleep_for(100ms);
    notifier.send(notification());  // 404: not tried again
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() == 3; }));
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(receiver.bodies().size(), 3U);
}

TEST(Notifier, MailsThroughSendmailAndSendsOnlyTheEventsAsked) {
  const test::TempDir dir;
  const std::string sendmail = test::write_script(
      dir / "sendmail", "test \"$1\" = -t || exit 9\ncat >> " + (dir / "mail") + "\necho >> " + (dir / "mail"));
  NotifyPolicy policy;
  policy.mail = true;
  policy.mail_domain = "lab.example.org";
  policy.sendmail = sendmail;
  {
    Notifier notifier(policy);
    Notification ended = notification("bob", "run 4 ended");
    ended.event = "run_ended";
    notifier.send(ended);  // not among the default events, not asked for: nothing
    ended.user = "carol";
    notifier.send(ended, true);  // asked for by the run's --notify
    notifier.send(notification("dave"));
    ASSERT_TRUE(eventually([&] {
      return std::filesystem::exists(dir / "mail") && test::read_file(dir / "mail").find("dave@") != std::string::npos;
    }));
  }
  const std::string mail = test::read_file(dir / "mail");
  EXPECT_THAT(mail, Not(HasSubstr("bob@")));
  EXPECT_THAT(mail, HasSubstr("To: carol@lab.example.org\nSubject: [gpurun] run 4 ended\n"));
  EXPECT_THAT(mail, HasSubstr("To: dave@lab.example.org\nSubject: [gpurun] run 3 (x) stopped\n"));
}

TEST(Notifier, OneUsersAskedForPostsAreCappedPerHourSoTheyCannotFloodTheLabsChannel) {
  const test::WebhookReceiver receiver;
  NotifyPolicy policy;
  policy.webhook = receiver.url();
  const std::size_t cap = Notifier::kMostAskedPostsPerHour;
  {
    Notifier notifier(policy, {.first = 10ms, .attempts = 2});
    Notification ended = notification("eve", "run 5 ended");
    ended.event = "run_ended";
    for (std::size_t i = 0; i < cap + 5; ++i) notifier.send(ended, true);
    ended.user = "frank";  // another user's are not held back by eve's
    notifier.send(ended, true);
    notifier.send(notification("eve"));  // what the site's rules send is never capped
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() >= cap + 2; }));
    std::this_thread::sleep_for(300ms);
  }
  const std::vector<std::string> bodies = receiver.bodies();
  EXPECT_EQ(bodies.size(), cap + 2);
  EXPECT_EQ(std::count_if(bodies.begin(), bodies.end(),
                          [](const std::string& b) { return b.find("run 5 ended") != std::string::npos; }),
            static_cast<std::ptrdiff_t>(cap + 1));
}

TEST(Notifier, ANameNoMailCanGoToIsLoggedNotSent) {
  const test::TempDir dir;
  const std::string sendmail = test::write_script(dir / "sendmail", "cat >> " + (dir / "mail"));
  NotifyPolicy policy;
  policy.mail = true;
  policy.sendmail = sendmail;
  {
    Notifier notifier(policy);
    notifier.send(notification("eve\nBcc: x"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "mail"));
}

// A warning a stop left waiting for its webhook's next try is kept in the state directory and
// sent at the next start: the restarted service takes it as given and stops the run in time.
TEST(Notifier, WhatAStopLeavesUndeliveredIsSentAtTheNextStart) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  Notification warning = notification();
  warning.time = std::chrono::system_clock::now();
  NotifyPolicy policy;
  {
    const test::WebhookReceiver down({503});
    policy.webhook = down.url();
    Notifier notifier(policy, {.first = 60s, .attempts = 5}, kept);
    notifier.send(warning);
    ASSERT_TRUE(eventually([&] { return down.bodies().size() == 1; }));
  }  // stopped while its next try is a minute away
  ASSERT_TRUE(std::filesystem::exists(kept));
  EXPECT_EQ(std::filesystem::status(kept).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const test::WebhookReceiver up;
  policy.webhook = up.url();
  {
    Notifier notifier(policy, {.first = 10ms, .attempts = 5}, kept);
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(up.bodies().empty());  // sent only once the same rules are known to be in force
    notifier.take_up_kept({});
    ASSERT_TRUE(eventually([&] { return up.bodies().size() == 1; }));
    ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(kept); }));  // sent once, not at the next start
  }
  EXPECT_EQ(up.bodies().front(), webhook_body(warning).dump());
  EXPECT_FALSE(std::filesystem::exists(kept));
}

// A warning is in the file from the moment it is queued: the rules count it as given at once,
// and a crash (OOM, power) before its delivery would otherwise stop its run unwarned. Delivered,
// it leaves the file.
TEST(Notifier, AWarningIsKeptFromTheMomentItIsQueuedUntilItIsDelivered) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const test::WebhookReceiver flaky({503});
  NotifyPolicy policy;
  policy.webhook = flaky.url();
  Notifier notifier(policy, {.first = 300ms, .attempts = 5}, kept);
  const Notification warning = warning_now("alice", "run 3 is idle");
  notifier.send(warning);
  const std::vector<SpooledNotification> ahead = read_kept_notifications(kept, std::chrono::system_clock::now());
  ASSERT_EQ(ahead.size(), 1U);  // before any attempt
  EXPECT_EQ(ahead[0].notification.text, "run 3 is idle");
  ASSERT_TRUE(eventually([&] { return flaky.bodies().size() == 2; }));  // the 503, then taken
  ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(kept); }));
}

// Once the file holds a warning, everything delivered beside it leaves it too: a run's end that
// went out stayed in the file, and a crash before the next rewrite sent it again.
TEST(Notifier, WhatIsDeliveredLeavesTheFileWhateverWasWrittenAheadOfIt) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const test::WebhookReceiver slow({503});  // the run's end waits; the warning goes before it
  NotifyPolicy policy;
  policy.webhook = slow.url();
  policy.events.push_back("run_ended");
  Notifier notifier(policy, {.first = 400ms, .attempts = 5}, kept);
  Notification ended = notification("bob", "run 4 ended");
  ended.event = "run_ended";
  ended.time = std::chrono::system_clock::now();
  notifier.send(ended);
  Notification warning = notification("alice", "run 3 is idle");
  warning.event = "idle_warning";
  warning.time = ended.time;
  notifier.send(warning);  // the file holds it, and the run's end unless that is being posted just then
  const auto held = read_kept_notifications(kept, std::chrono::system_clock::now());
  ASSERT_TRUE(std::any_of(held.begin(), held.end(),
                          [](const SpooledNotification& n) { return n.notification.text == "run 3 is idle"; }));
  ASSERT_TRUE(eventually([&] { return slow.bodies().size() == 3; }));  // a 503, then both taken
  ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(kept); }));
}

// Stopped again before it took up what the last stop kept (within its first samples, a package
// upgrade's two restarts): the file holds the last stop's notifications and this run's, not only
// this run's.
TEST(Notifier, AStopBeforeTheKeptAreTakenUpKeepsThemToo) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  Notification first = notification("alice", "kept from the first stop");
  first.time = std::chrono::system_clock::now();
  ASSERT_EQ(keep_notifications(kept, {{.notification = first, .mailed = true, .posted = false}}), std::nullopt);
  const test::WebhookReceiver down({503});
  NotifyPolicy policy;
  policy.webhook = down.url();
  {
    Notifier notifier(policy, {.first = 60s, .attempts = 5}, kept);
    Notification second = notification("bob", "queued in the second run");
    second.time = std::chrono::system_clock::now();
    notifier.send(second);
    ASSERT_TRUE(eventually([&] { return down.bodies().size() == 1; }));
  }
  const std::vector<SpooledNotification> left = read_kept_notifications(kept, std::chrono::system_clock::now());
  ASSERT_EQ(left.size(), 2U);
  EXPECT_EQ(left[0].notification.text, "kept from the first stop");
  EXPECT_EQ(left[1].notification.text, "queued in the second run");
}

// A webhook that takes the POST and never answers: gpurund asked to stop (SIGTERM) while it waits,
// and still finishing a `docker stop` for 6 s, must not be held by it past 5 s after the request
// (systemd waits 30 s in all); the POST is cut, and its notification kept for the next start.
TEST(Notifier, AStopRequestCutsAHungWebhookAfterFiveSecondsAndKeepsItsNotification) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const Fd hung = listening_socket();  // listens, never accepts
  NotifyPolicy policy;
  policy.webhook = url_of(hung);
  Notification warning = notification();
  warning.time = std::chrono::system_clock::now();
  StopRequest stop;
  std::optional<Notifier> notifier;
  // Its one attempt, cut by the stop: not counted, so kept rather than given up.
  notifier.emplace(policy, Notifier::Backoff{.first = 10ms, .attempts = 1}, kept, &stop);
  notifier->send(warning);
  std::this_thread::sleep_for(500ms);  // the POST waits for its answer (10 s at most)
  stop.request(SIGTERM);
  std::this_thread::sleep_for(6s);  // gpurund finishes the stop of a container meanwhile
  const auto destroying = std::chrono::steady_clock::now();
  notifier.reset();
  const auto destructor = std::chrono::steady_clock::now() - destroying;
  EXPECT_LT(destructor, 1s);  // the POST was cut 5 s after the request, not at its 10 s
  const std::vector<SpooledNotification> left = read_kept_notifications(kept, std::chrono::system_clock::now());
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left.front().notification.text, warning.text);
  EXPECT_FALSE(left.front().posted);
}

// A webhook that takes the POST and never answers (10 s a try): the mails of the notifications
// queued behind it went out 10 s later each (a warning's after its stop). Now every mail goes
// before the next POST: when the second POST comes, carol's mail, queued third, is out.
TEST(Notifier, EveryMailGoesBeforeTheNextWebhookPostSoAHungWebhookHoldsUpNoMail) {
  const test::TempDir dir;
  const std::string sendmail = test::write_script(dir / "sendmail", "cat >> " + (dir / "mail"));
  const Fd hung = listening_socket();  // takes each POST, never answers
  NotifyPolicy policy;
  policy.webhook = url_of(hung);
  policy.mail = true;
  policy.sendmail = sendmail;
  const auto mailed = [&](const char* user) {
    return std::filesystem::exists(dir / "mail") && test::read_file(dir / "mail").find(user) != std::string::npos;
  };
  std::vector<Fd> posts;
  const auto next_post = [&] {  // waits up to 5 s for the next POST's connection
    pollfd ready{.fd = hung.get(), .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, 5000) != 1) return false;
    posts.emplace_back(::accept(hung.get(), nullptr, nullptr));
    return posts.back().valid();
  };
  {
    Notifier notifier(policy, Notifier::Backoff{.first = 10ms, .attempts = 1, .attempt_limit = 1s});
    notifier.send(notification("alice"));
    ASSERT_TRUE(next_post());  // alice's, which waits its 1 s
    notifier.send(notification("bob"));
    notifier.send(notification("carol"));
    ASSERT_TRUE(next_post());  // bob's
    EXPECT_TRUE(mailed("To: bob"));
    EXPECT_TRUE(mailed("To: carol"));  // before bob's POST, not after it
  }
}

// A thousand notifications waiting (the webhook down): the oldest news of a run's end goes, not a
// warning the rules count as given, whose stop would then come unwarned.
TEST(Notifier, AFullQueueDropsARunsEndBeforeAWarning) {
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const test::WebhookReceiver down(std::deque<int>(1001, 503));
  NotifyPolicy policy;
  policy.webhook = down.url();
  policy.events.push_back("run_ended");
  {
    Notifier notifier(policy, {.first = 600s, .attempts = 5}, kept);
    const Notification warning = warning_now("alice", "the warning");
    notifier.send(warning);
    ASSERT_TRUE(eventually([&] { return down.bodies().size() == 1; }));  // tried; waits first in line
    Notification ended = warning;
    ended.event = "run_ended";
    ended.text = "a run ended";
    for (int i = 0; i < 999; ++i) notifier.send(ended);
    // Each tried once: 1000 wait (a thousand posts: a minute at most, under a sanitizer too).
    for (int i = 0; i < 600 && down.bodies().size() < 1000; ++i) std::this_thread::sleep_for(100ms);
    ASSERT_EQ(down.bodies().size(), 1000U);
    std::this_thread::sleep_for(200ms);  // the last one back in line after its answer
    notifier.send(ended);
  }
  const std::vector<SpooledNotification> left = read_kept_notifications(kept, std::chrono::system_clock::now());
  EXPECT_EQ(left.size(), 1000U);  // one dropped
  EXPECT_TRUE(std::any_of(left.begin(), left.end(),
                          [](const SpooledNotification& n) { return n.notification.text == "the warning"; }));
}

// One user's idle processes, each warned, fill the queue: what goes is theirs, not the warning of
// another user, whose stop would then come unwarned. (A queue of 40, not the service's thousand:
// each warning queued rewrites the kept file, and a thousand took 7 minutes under ASan + gcov.)
TEST(Notifier, AFullQueueDropsTheMostWaitingUsersNotAnothersWarning) {
  constexpr std::size_t kLimit = 40;
  const test::TempDir dir;
  const std::string kept = dir / "notifications-undelivered.json";
  const test::WebhookReceiver down(std::deque<int>(2 * kLimit, 503));
  NotifyPolicy policy;
  policy.webhook = down.url();
  {
    Notifier notifier(policy, {.first = 600s, .attempts = 5}, kept, nullptr, kLimit);
    const Notification victim = warning_now("bob", "bob's warning");
    notifier.send(victim);
    ASSERT_TRUE(eventually([&] { return down.bodies().size() == 1; }));  // tried; waits first in line
    const Notification flood = warning_now("alice", "one of alice's");
    for (std::size_t i = 0; i < kLimit + 5; ++i) notifier.send(flood);
  }
  const std::vector<SpooledNotification> left = read_kept_notifications(kept, std::chrono::system_clock::now());
  EXPECT_LE(left.size(), kLimit + 1);  // some of alice's dropped
  EXPECT_TRUE(std::any_of(left.begin(), left.end(),
                          [](const SpooledNotification& n) { return n.notification.text == "bob's warning"; }));
}

// Kept over a three-hour stop: a warning of a run that has ended since is not sent ("stops it in
// 10m", then at once "stopped"), and one of a run still open says it is late.
TEST(Notifier, AKeptWarningOfAnEndedRunIsDroppedAndALateOneSaysSo) {
  const test::TempDir dir;
  const std::string kept = dir / "kept.json";
  Notification ended = notification("bob", "run 3 stops in 10m");
  ended.event = "time_warning";
  ended.time = std::chrono::system_clock::now() - 3h;
  Notification open = notification("carol", "run 4 stops in 10m");
  open.event = "idle_warning";
  open.run = {{"id", 4}, {"name", "y"}};
  open.time = ended.time;
  ASSERT_EQ(keep_notifications(kept, {{.notification = ended, .mailed = false, .posted = false},
                                      {.notification = open, .mailed = true, .posted = false}}),
            std::nullopt);
  const test::WebhookReceiver receiver;
  NotifyPolicy policy;
  policy.webhook = receiver.url();
  RunRecord still;
  still.id = 4;
  {
    Notifier notifier(policy, {.first = 10ms, .attempts = 5}, kept);
    notifier.take_up_kept({still});
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() == 1; }));
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(receiver.bodies().size(), 1U);
  const auto body = nlohmann::json::parse(receiver.bodies().front());
  EXPECT_THAT(body.at("text").get<std::string>(), ::testing::StartsWith("(late: written "));
  EXPECT_THAT(body.at("text").get<std::string>(), HasSubstr("kept while gpurund was stopped) run 4 stops in 10m"));
  EXPECT_FALSE(std::filesystem::exists(kept));
}

// What already went is not sent again (sendmail took the mail), and what is over a day old, or a
// file that is not a list of them, is not sent at all.
TEST(Notifier, WhatWentAlreadyOrIsADayOldIsNotSentAgain) {
  const test::TempDir dir;
  const std::string kept = dir / "kept.json";
  const std::string sendmail = test::write_script(dir / "sendmail", "cat >> " + (dir / "mail"));
  Notification old = notification("bob", "an old one");
  old.time = std::chrono::system_clock::now() - 25h;
  Notification recent = notification("carol", "a recent one");
  recent.time = std::chrono::system_clock::now() - 1h;
  ASSERT_EQ(keep_notifications(kept, {{.notification = old, .mailed = false, .posted = false},
                                      {.notification = recent, .mailed = true, .posted = false}}),
            std::nullopt);
  const test::WebhookReceiver receiver;
  NotifyPolicy policy;
  policy.webhook = receiver.url();
  policy.mail = true;
  policy.sendmail = sendmail;
  {
    Notifier notifier(policy, {.first = 10ms, .attempts = 5}, kept);
    notifier.take_up_kept({});
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() == 1; }));
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(receiver.bodies().size(), 1U);
  EXPECT_THAT(receiver.bodies().front(), HasSubstr("a recent one"));
  EXPECT_FALSE(std::filesystem::exists(dir / "mail"));  // carol's mail had gone; bob's is a day late
  EXPECT_FALSE(std::filesystem::exists(kept));

  for (const char* bad : {R"({"not": "a list"})", R"([{"event": "x", "time_ms": 1e300}])"}) {
    test::write_file(kept, bad);
    EXPECT_TRUE(read_kept_notifications(kept, std::chrono::system_clock::now()).empty()) << bad;
    EXPECT_TRUE(std::filesystem::exists(kept + ".unreadable")) << bad;
    EXPECT_FALSE(std::filesystem::exists(kept)) << bad;
  }
}

// Under other rules (a restart that changed them) every warning starts afresh: what the last stop
// kept is not sent.
TEST(Notifier, WhatAStopKeptIsDroppedWhenTheRulesChanged) {
  const test::TempDir dir;
  const std::string kept = dir / "kept.json";
  ASSERT_EQ(keep_notifications(kept, {{.notification = notification(), .mailed = false, .posted = false}}),
            std::nullopt);
  forget_kept_notifications(kept, "the rules changed");
  EXPECT_FALSE(std::filesystem::exists(kept));
  forget_kept_notifications(kept, "the rules changed");  // none: nothing to say
}

TEST(Delivery, AWebhookNobodyAnswersIsAnErrorToRetry) {
  const Delivery posted = post_webhook("http://127.0.0.1:1/hook", "{}", 2s);
  EXPECT_FALSE(posted.delivered);
  EXPECT_TRUE(posted.retry);
  EXPECT_FALSE(posted.error.empty());
  const Delivery other = post_webhook("file:///etc/passwd", "{}", 2s);  // never anything but http(s)
  EXPECT_FALSE(other.delivered);
}

TEST(Delivery, AFailingSendmailIsAnErrorWithItsStderr) {
  const test::TempDir dir;
  const std::string sendmail = test::write_script(dir / "sendmail", "echo 'no relay' >&2\nexit 75");
  const Delivery sent = send_mail(sendmail, "To: a\n\nx\n", 5s);
  EXPECT_FALSE(sent.delivered);
  EXPECT_THAT(sent.error, HasSubstr("exited with status 75"));
  EXPECT_THAT(sent.error, HasSubstr("no relay"));
  EXPECT_TRUE(sent.retry);  // EX_TEMPFAIL: a relay down, for a sendmail that does not queue
  const std::string broken = test::write_script(dir / "broken", "exit 78");  // EX_CONFIG: its setup's
  EXPECT_FALSE(send_mail(broken, "To: a\n\nx\n", 5s).retry);
}

// msmtp-mta's sendmail hands the mail to the relay there and then: a relay down (exit 75) is run
// again with the backoff, and the webhook of the same news does not wait for it.
TEST(Notifier, AMailItsRelayTookNotIsSentAgainWithoutHoldingUpTheWebhook) {
  const test::TempDir dir;
  // Fails twice with EX_TEMPFAIL, then takes the mail.
  const std::string sendmail =
      test::write_script(dir / "sendmail", "echo x >> " + (dir / "tries") + "\n[ $(wc -l < " + (dir / "tries") +
                                               ") -ge 3 ] || exit 75\ncat >> " + (dir / "mail"));
  const test::WebhookReceiver receiver;
  NotifyPolicy policy;
  policy.mail = true;
  policy.sendmail = sendmail;
  policy.webhook = receiver.url();
  {
    Notifier notifier(policy, {.first = 300ms, .attempts = 5});
    notifier.send(notification("dave"));
    ASSERT_TRUE(eventually([&] { return receiver.bodies().size() == 1; }));
    EXPECT_FALSE(std::filesystem::exists(dir / "mail"));  // posted while the mail waits for its next try
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir / "mail"); }));
  }
  EXPECT_EQ(test::read_file(dir / "tries"), "x\nx\nx\n");
  EXPECT_THAT(test::read_file(dir / "mail"), HasSubstr("To: dave\n"));
  EXPECT_EQ(receiver.bodies().size(), 1U);
}

}  // namespace
}  // namespace gpurun
