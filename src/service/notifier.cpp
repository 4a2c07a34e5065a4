#include "gpurun/service/notifier.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

#include "gpurun/history/time_text.hpp"
#include "gpurun/util/json_output.hpp"
#include "gpurun/util/text.hpp"
#include "notification_spool.hpp"

namespace gpurun {
namespace {

constexpr std::chrono::seconds kShutdownLimit{5};  // a stopping service delivers what is due for this long

}  // namespace

// When what `pending` still lacks is next due: its mail's run or its webhook's attempt.
std::chrono::steady_clock::time_point Notifier::next_due(const Pending& pending) {
  auto due = std::chrono::steady_clock::time_point::max();
  if (!pending.mailed) due = pending.mail_due;
  if (!pending.posted) due = std::min(due, pending.due);
  return due;
}

Notifier::Notifier(NotifyPolicy policy, Backoff backoff, std::string kept, const StopRequest* stop,
                   std::size_t most_waiting)
    : policy_(std::move(policy)),
      backoff_(backoff),
      kept_(std::move(kept)),
      most_waiting_(std::max<std::size_t>(most_waiting, 1)),
      stop_(stop) {
  if (!kept_.empty())
    for (SpooledNotification& one : read_kept_notifications(kept_, std::chrono::system_clock::now()))
      untaken_.push_back({.notification = std::move(one.notification),
                          .mailed = one.mailed,
                          .posted = one.posted,
                          .attempts = 0,
                          .due = {}});
  spooled_ = !untaken_.empty();
  worker_ = std::thread([this] { work(); });
}

std::optional<std::chrono::steady_clock::time_point> Notifier::give_up_time() const {
  std::optional<std::chrono::steady_clock::time_point> stopped =
      stop_ != nullptr ? stop_->requested_at() : std::nullopt;
  if (const std::int64_t ns = destroyed_ns_.load(); ns != 0) {
    const std::chrono::steady_clock::time_point destroyed{std::chrono::steady_clock::duration(ns)};
    stopped = stopped ? std::min(*stopped, destroyed) : destroyed;
  }
  if (!stopped) return std::nullopt;
  return *stopped + kShutdownLimit;
}

void Notifier::take_up_kept(const std::vector<RunRecord>& running) {
  if (kept_.empty()) return;
  const WallTime now = std::chrono::system_clock::now();
  {
    const std::lock_guard hold(mutex_);
    for (Pending& one : std::exchange(untaken_, {})) {
      Notification& n = one.notification;
      // A warning of a run that has ended since (stopped while gpurund was down, or gone) warns
      // of nothing: "stops it in 10m", then at once "stopped", or of a run that is no more.
      const auto id = n.run.is_object() && n.run.contains("id") && n.run["id"].is_number_integer()
                          ? std::optional(n.run["id"].get<std::int64_t>())
                          : std::nullopt;
      const bool open =
          id && std::any_of(running.begin(), running.end(), [&](const RunRecord& run) { return run.id == *id; });
      if (n.event.ends_with("_warning") && !open) {
        spdlog::info("notify: a kept {} is not sent: its run has ended since", n.event);
        continue;
      }
      // Under the rules in force now (changed ones after start_afresh): an event they no longer
      // want is not sent (a run's end may be its own --notify's), nor by a way they no longer have.
      if (n.event != "run_ended" && !policy_.wants(n.event)) {
        spdlog::info("notify: a kept {} is not sent: the rules no longer ask for it", n.event);
        continue;
      }
      one.mailed = one.mailed || !policy_.mail;
      one.posted = one.posted || policy_.webhook.empty();
      if (one.mailed && one.posted) continue;
      // What was kept over a stop says so: its "in 10m" counted from when it was written.
      if (now - n.time > std::chrono::minutes(1))
        n.text = fmt::format("(late: written {}, kept while gpurund was stopped) {}", rfc3339(n.time), n.text);
      queue_.push_back({.notification = std::move(n),
                        .mailed = one.mailed,
                        .posted = one.posted,
                        .attempts = 0,
                        .due = std::chrono::steady_clock::now()});
    }
    if (const auto error = spool())  // without what is not sent
      spdlog::error("notify: cannot keep {}: {}", kept_, *error);
  }
  wake_.notify_all();
}

std::size_t Notifier::drop_kept_warnings() {
  const std::lock_guard hold(mutex_);
  const std::size_t dropped =
      std::erase_if(untaken_, [](const Pending& one) { return one.notification.event.ends_with("_warning"); });
  if (dropped > 0)
    if (const auto error = spool()) spdlog::error("notify: cannot keep {}: {}", kept_, *error);
  return dropped;
}

std::optional<std::string> Notifier::spool() {
  if (kept_.empty()) return std::nullopt;
  try {
    std::vector<SpooledNotification> undelivered;
    const auto add = [&undelivered](const Pending& p) {
      undelivered.push_back({.notification = p.notification, .mailed = p.mailed, .posted = p.posted});
    };
    std::for_each(untaken_.begin(), untaken_.end(), add);
    std::for_each(queue_.begin(), queue_.end(), add);
    if (in_flight_) add(*in_flight_);
    if (undelivered.empty()) {
      if (std::remove(kept_.c_str()) != 0 && errno != ENOENT)
        return fmt::format("cannot remove it: {}; the next start sends what it holds again", std::strerror(errno));
      spooled_ = false;
      return std::nullopt;
    }
    auto error = keep_notifications(kept_, undelivered);
    if (!error) spooled_ = true;
    return error;
  } catch (const std::exception& e) {  // no memory: the file stays as it was
    return e.what();
  }
}

void Notifier::done_with() {
  // Out of the file, where the file holds anything (written ahead of another, or kept): it held
  // this one too, and a crash would send it again.
  if (!spooled_) return;
  if (const auto error = spool()) spdlog::error("notify: cannot keep {}: {}", kept_, *error);
}

void Notifier::keep_for_next_start() {
  const std::size_t left = untaken_.size() + queue_.size();
  if (kept_.empty()) {
    if (!queue_.empty()) spdlog::warn("notify: stopping with {} notification(s) undelivered", queue_.size());
    return;
  }
  if (const auto error = spool())
    spdlog::error("notify: stopping with {} notification(s) undelivered; cannot keep them in {}: {}", left, kept_,
                  *error);
  else if (!queue_.empty())
    spdlog::warn("notify: stopping with {} notification(s) undelivered; kept in {} for the next start", left, kept_);
}

Notifier::~Notifier() {
  {
    const std::lock_guard hold(mutex_);
    stopping_ = true;
    destroyed_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  wake_.notify_all();
  worker_.join();
}

bool Notifier::asked_post_fits(const std::string& user, std::chrono::steady_clock::time_point now) {
  std::deque<std::chrono::steady_clock::time_point>& posts = asked_posts_[user];
  while (!posts.empty() && now - posts.front() >= std::chrono::hours(1)) posts.pop_front();
  if (posts.size() >= kMostAskedPostsPerHour) return false;
  posts.push_back(now);
  return true;
}

void Notifier::send(Notification notification, bool asked) {
  const bool wanted = policy_.wants(notification.event);
  if (!wanted && !(asked && (!policy_.webhook.empty() || policy_.mail))) return;
  {
    const std::lock_guard hold(mutex_);
    bool post = !policy_.webhook.empty();
    if (post && !wanted) {
      post = asked_post_fits(notification.user, std::chrono::steady_clock::now());
      if (post)
        asked_over_told_.erase(notification.user);
      else if (asked_over_told_.insert(notification.user).second)  // once, until one fits again
        spdlog::warn(
            "notify: {}'s runs asked (--notify) for more than {} posts to the webhook within an hour; "
            "the rest of this hour's {}",
            text::printable(notification.user, 64), kMostAskedPostsPerHour,
            policy_.mail ? "go by mail alone" : "are not sent (mail is off)");
      if (!post && !policy_.mail) return;
    }
    if (queue_.size() >= most_waiting_) {
      // The oldest news of a run's end goes first, whoever's; then of the most waiting user's (one
      // user's thousand idle processes push out no one else's warning), the oldest of anything but
      // a warning, then the oldest warning: a warning the rules count as given is the last to go.
      auto dropped = std::find_if(queue_.begin(), queue_.end(),
                                  [](const Pending& p) { return p.notification.event == "run_ended"; });
      if (dropped == queue_.end()) {
        std::map<std::string, std::size_t> waiting;
        for (const Pending& p : queue_) ++waiting[p.notification.user];
        const std::string most = std::max_element(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) {
                                   return a.second < b.second;
                                 })->first;
        const auto theirs = [&most](const Pending& p) { return p.notification.user == most; };
        dropped = std::find_if(queue_.begin(), queue_.end(), [&](const Pending& p) {
          return theirs(p) && !p.notification.event.ends_with("_warning");
        });
        if (dropped == queue_.end()) dropped = std::find_if(queue_.begin(), queue_.end(), theirs);
      }
      spdlog::error("notify: {} notifications wait already; dropping the oldest {}", queue_.size(),
                    dropped->notification.event);
      queue_.erase(dropped);
      done_with();
    }
    // A warning or a stop notice is in the file before the rules go on as if it were given.
    const bool ahead = notification.event != "run_ended";
    queue_.push_back({.notification = std::move(notification),
                      .mailed = !policy_.mail,
                      .posted = !post,
                      .attempts = 0,
                      .due = std::chrono::steady_clock::now()});
    if (ahead)
      if (const auto error = spool())
        spdlog::error("notify: cannot keep {} ({}): a crash before its delivery would lose it", kept_, *error);
  }
  wake_.notify_all();
}

void Notifier::deliver(Pending& pending) const {
  // Each attempt within the backoff's limit, and none past the give-up time (a stopping service's).
  const auto past_give_up = [this] {
    const auto give_up = give_up_time();
    return give_up && std::chrono::steady_clock::now() >= *give_up;
  };
  const auto limit = [this] {
    const auto give_up = give_up_time();
    if (!give_up) return backoff_.attempt_limit;
    const auto left = std::chrono::ceil<std::chrono::seconds>(*give_up - std::chrono::steady_clock::now());
    return std::clamp(left, std::chrono::seconds(1), backoff_.attempt_limit);
  };
  const Notification& n = pending.notification;
  const auto now = std::chrono::steady_clock::now();
  if (!pending.mailed && pending.mail_due <= now) {  // the mail alone: its webhook waits for the worker's next turn
    if (const auto message = mail_message(n, policy_.mail_domain)) {
      ++pending.mail_attempts;
      const Delivery sent = send_mail(policy_.sendmail, *message, limit());
      // Past the give-up time a temporary failure is kept for the next start, not given up.
      const bool again = !sent.delivered && sent.retry && (pending.mail_attempts < backoff_.attempts || past_give_up());
      pending.mailed = !again;
      if (!sent.delivered)
        spdlog::error("notify: mail about {} to {} (attempt {}): {}{}", n.event, text::printable(n.user, 64),
                      pending.mail_attempts, sent.error,
                      !again           ? "; giving up"
                      : past_give_up() ? "; kept for the next start"
                                       : "; trying again");
      if (again) pending.mail_due = std::chrono::steady_clock::now() + backoff_.after(pending.mail_attempts);
    } else {
      pending.mailed = true;
      spdlog::warn("notify: no mail about {}: \"{}\" is not a user mail can go to", n.event,
                   text::printable(n.user, 64));  // anyone's label: never a line of the log of its own
    }
    return;
  }
  if (!pending.posted && pending.due <= now && !past_give_up()) {  // past it: kept, for the next start
    ++pending.attempts;
    const Delivery posted = post_webhook(policy_.webhook, json_line(webhook_body(n)), limit(), past_give_up);
    if (!posted.delivered && past_give_up()) {  // cut by the stop: not an attempt, and kept for the next start
      --pending.attempts;
      spdlog::warn("notify: webhook for {}: {}", n.event, posted.error);
      return;
    }
    pending.posted = posted.delivered;
    if (!posted.delivered) {
      const bool again = posted.retry && pending.attempts < backoff_.attempts;
      spdlog::error("notify: webhook for {} (attempt {}): {}{}", n.event, pending.attempts, posted.error,
                    again ? "; trying again" : "; giving up");
      if (!again) pending.posted = true;  // given up
      pending.due = std::chrono::steady_clock::now() + backoff_.after(pending.attempts);
    }
  }
}

void Notifier::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    const auto give_up = give_up_time();  // set once a stop is asked for: what is due until then
    // Every first mail before any webhook: a webhook that does not answer takes 10 s a try, and the
    // mails queued behind it went out that much later each (a warning's after its stop). A mail's
    // retry waits its turn by time, as a webhook's does: a relay that hangs (10 s a run) would
    // otherwise hold up every webhook for as long as the mails keep failing.
    auto next = std::find_if(queue_.begin(), queue_.end(), [now](const Pending& p) {
      return !p.mailed && p.mail_attempts == 0 && p.mail_due <= now;
    });
    if (next == queue_.end())
      next = std::min_element(queue_.begin(), queue_.end(),
                              [](const Pending& a, const Pending& b) { return next_due(a) < next_due(b); });
    if (next == queue_.end()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    // Past the give-up time, or once ending with only retries left: what is queued waits for the
    // next start. gpurund asked to stop may still queue news (of a `docker stop` it finishes), so
    // the worker ends only with the destructor.
    if ((give_up && now >= *give_up) || (stopping_ && next_due(*next) > now)) {
      if (stopping_) {
        keep_for_next_start();
        return;
      }
      wake_.wait(lock);
      continue;
    }
    if (next_due(*next) > now) {
      // A copy: wait_until reads its time again once woken, and send() may have erased the entry.
      const auto due = give_up ? std::min(next_due(*next), *give_up) : next_due(*next);
      wake_.wait_until(lock, due);
      continue;
    }
    Pending pending = std::move(*next);
    queue_.erase(next);
    if (spooled_) in_flight_ = pending;  // still the file's while delivered
    const bool was_mailed = pending.mailed;
    const bool was_posted = pending.posted;
    lock.unlock();  // deliveries take seconds; send() must not wait for them
    try {
      deliver(pending);
    } catch (const std::exception& e) {  // no memory, no pipes: this one is dropped, the thread goes on
      spdlog::error("notify: {} could not be delivered: {}", pending.notification.event, e.what());
      pending.mailed = pending.posted = true;
    }
    lock.lock();
    in_flight_.reset();
    if (!pending.mailed || !pending.posted) {
      // Half delivered (the mail went, the webhook waits): the file says so, or a crash mails again.
      const bool changed = pending.mailed != was_mailed || pending.posted != was_posted;
      queue_.push_back(std::move(pending));
      if (changed && spooled_)
        if (const auto error = spool()) spdlog::error("notify: cannot keep {}: {}", kept_, *error);
    } else {
      done_with();
    }
  }
}

}  // namespace gpurun
