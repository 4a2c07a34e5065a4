#pragma once
// Tells people what the service's rules did (issue 23; gpurun/config/notify_policy.hpp): a JSON
// POST to the site's webhook (Slack and Mattermost incoming webhooks show its `text` as is) and a
// mail to the run's user through `sendmail -t`. Deliveries run on a thread of their own, so a
// slow or dead receiver never delays sampling; a failed webhook, or a sendmail that could not reach
// its relay (exit 75, or no end in 10 s), is tried again with backoff.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "gpurun/config/notify_policy.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/util/stop_request.hpp"

namespace gpurun {

struct Notification {
  std::string event;  // one of kNotifyEvents
  WallTime time;
  std::string host;
  std::string text;            // one line, for people
  nlohmann::ordered_json run;  // the run object (gpurun/history/run_json.hpp)
  std::string user;            // whom to mail; "" where no user is known
};

// {"event", "time", "host", "text", "run"}: what the webhook is sent.
nlohmann::ordered_json webhook_body(const Notification& notification);

// The message `sendmail -t` is given: To USER@mail_domain (or the local USER), a Subject of the
// text. nullopt when the user is not a name mail can go to (none, or characters no login has).
std::optional<std::string> mail_message(const Notification& notification, const std::string& mail_domain);

// One attempt to deliver; `retry` when a later one may succeed (no answer, 5xx, 429).
struct Delivery {
  bool delivered = false;
  bool retry = false;
  std::string error;
};
// `given_up`: asked while the POST is under way (about once a second, and at each bit of progress);
// true ends it at once, an error to retry.
Delivery post_webhook(const std::string& url, const std::string& body, std::chrono::seconds timeout,
                      const std::function<bool()>& given_up = {});
Delivery send_mail(const std::string& sendmail, const std::string& message, std::chrono::seconds timeout);

class Notifier {
 public:
  struct Backoff {
    std::chrono::milliseconds first{2000};  // doubled after each failure
    int attempts = 5;
    std::chrono::seconds attempt_limit{10};  // per webhook POST and per sendmail run
    // The wait before the next try after `failed` tries (of a webhook, or of a mail).
    std::chrono::milliseconds after(int failed) const { return first * (1 << std::min(failed - 1, 10)); }
  };
  // `kept`: a file in gpurund's state directory where what is undelivered is kept, to be sent at
  // the next start under the same rules (take_up_kept; "": none kept): at the stop, and as soon as
  // a warning or a stop notice is queued (the rules count it as given from then on: a crash before
  // its delivery sends it at the next start, not never), until it is delivered. What the file
  // holds at the start is read here and held until take_up_kept or drop_kept_warnings.
  // `stop`: gpurund's stop request. Once it is made, deliveries go on for 5 s at most (a webhook
  // POST under way is cut then; a sendmail run gets at most its own 10 s), whatever else gpurund
  // still finishes (a `docker stop` takes up to 20 s, and systemd waits 30 before its SIGKILL).
  // `most_waiting`: the queue's limit (send); smaller only in tests, where a full queue of a
  // thousand, spooled at each warning, took minutes under the sanitizers.
  Notifier(NotifyPolicy policy, Backoff backoff, std::string kept = "", const StopRequest* stop = nullptr,
           std::size_t most_waiting = kMostWaiting);
  explicit Notifier(NotifyPolicy policy) : Notifier(std::move(policy), Backoff{}) {}
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;
  // Delivers what is due until 5 s after the stop request (or now, where none was made) and keeps
  // the rest for the next start (logged).
  ~Notifier();

  const NotifyPolicy& policy() const { return policy_; }

  // Queues `notification` when the policy wants its event (or `asked`: the run's own --notify);
  // never blocks on the network. With kMostWaiting waiting already, the oldest is dropped
  // (logged). What a run's own --notify asks for reaches the lab's webhook kMostAskedPostsPerHour
  // times an hour per user (the rest by mail alone, logged once): the channel is the lab's, not one
  // user's to flood.
  void send(Notification notification, bool asked = false);
  static constexpr std::size_t kMostWaiting = 1000;
  static constexpr std::size_t kMostAskedPostsPerHour = 30;

  // Sends what the last stop kept (the same rules are in force again: PolicyRules::resume), but
  // the warnings of runs no longer `running`, and marked late where written over a minute ago; the
  // file goes once all of it is delivered or given up.
  void take_up_kept(const std::vector<RunRecord>& running);
  // Under other rules (a restart that changed them): the kept warnings are dropped, as every
  // warning starts afresh; the rest (a stop, a run's end) is still sent at take_up_kept. Returns
  // how many were dropped.
  std::size_t drop_kept_warnings();

 private:
  struct Pending {
    Notification notification;
    bool mailed = false;                        // sendmail took it (or it was given up)
    bool posted = false;                        // the webhook took it (or it was given up)
    int attempts = 0;                           // webhook attempts made
    std::chrono::steady_clock::time_point due;  // of the webhook's next attempt
    int mail_attempts = 0;
    std::chrono::steady_clock::time_point mail_due = {};  // of sendmail's next run
  };
  void work();
  static std::chrono::steady_clock::time_point next_due(const Pending& pending);
  // A queued notification done with (delivered or given up): out of the kept file too, where the
  // file holds any (under the lock).
  void done_with();
  // `kept_` made what is undelivered now: what the last stop kept and is not taken up yet, the
  // queue, the one being delivered; removed where that is nothing. Under the lock; a message
  // where it cannot be written.
  std::optional<std::string> spool();
  // Writes what is still undelivered to `kept_` (under the lock, as the worker ends).
  void keep_for_next_start();
  // One attempt at what `pending` still lacks, none past give_up_time() (each within kAttemptLimit).
  void deliver(Pending& pending) const;
  // Whether one more of `user`'s asked-for posts fits in this hour (counted when it does; under the lock).
  bool asked_post_fits(const std::string& user, std::chrono::steady_clock::time_point now);
  // 5 s after the stop request or the destructor, whichever came first; nullopt before either.
  std::optional<std::chrono::steady_clock::time_point> give_up_time() const;

  NotifyPolicy policy_;
  Backoff backoff_;
  std::string kept_;
  std::size_t most_waiting_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> asked_posts_;  // per user, this hour
  std::set<std::string> asked_over_told_;      // users told of that their asked-for posts went over
  std::vector<Pending> untaken_;               // read from `kept_` at the start, not yet taken up
  std::optional<Pending> in_flight_;           // a copy of the one being delivered (while spooled_)
  bool spooled_ = false;                       // `kept_` holds notifications this one wrote
  bool stopping_ = false;                      // the destructor runs: the worker ends once it has kept what is left
  std::atomic<std::int64_t> destroyed_ns_{0};  // when it began, on the steady clock; 0: not yet
  const StopRequest* stop_;
  std::thread worker_;
};

}  // namespace gpurun
