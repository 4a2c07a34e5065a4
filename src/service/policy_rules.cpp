#include "policy_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>

#include "gpurun/history/run_json.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"
#include "notification_spool.hpp"
#include "policy_acts.hpp"

namespace gpurun {
namespace {

// The notification of a run's event: its run object from the tracker, where it is known.
Notification notification_of(std::string_view event, std::string text, const RunRecord* run, const PolicyAction* action,
                             const std::string& host) {
  Notification n{.event = std::string(event),
                 .time = std::chrono::system_clock::now(),
                 .host = host,
                 .text = std::move(text),
                 .run = nullptr,
                 .user = run != nullptr      ? run->user
                         : action != nullptr ? action->user
                                             : ""};
  if (run != nullptr) n.run = run_json(with_programs_only(*run));  // a chat's channel reads it
  return n;
}

}  // namespace

PolicyRules::PolicyRules(const SitePolicy& policy, std::string host, std::chrono::milliseconds interval,
                         const std::string& kept_notifications, const StopRequest* stop)
    : host_(std::move(host)), kept_notifications_(kept_notifications), limiter_(policy.max_runtime) {
  if (policy.idle_policy) idle_.emplace(*policy.idle_policy, 3 * interval + std::chrono::seconds(10));
  // Allowed, as a site may want it, but said: a user's container stopped with no word beforehand
  // is what people then ask the admin about.
  if (const auto& idle = policy.idle_policy; idle && idle->stop_after && !idle->dry_run) {
    if (!idle->warn_after)
      spdlog::warn("idle_policy: stop_after without warn_after: idle containers are stopped without a warning first");
    else if (*idle->stop_after - *idle->warn_after < 3 * interval)
      spdlog::warn(
          "idle_policy: stop_after is {} s after warn_after, under three samples: a warned user has hardly "
          "any time to act",
          (*idle->stop_after - *idle->warn_after).count());
  }
  if (policy.notify) notifier_.emplace(*policy.notify, Notifier::Backoff{}, kept_notifications, stop);
  if (policy.notify && !kept_notifications.empty())
    asked_file_ = (std::filesystem::path(kept_notifications).parent_path() / kAskedFile).string();
  // Said once at the start, not at every mail that then fails.
  if (policy.notify && policy.notify->mail && ::access(policy.notify->sendmail.c_str(), X_OK) != 0)
    spdlog::warn(
        "notify.mail is on, but {} is not a program this service can run ({}): no mail will be sent until it "
        "is (apt-get install a mail transfer agent, such as postfix or nullmailer, which queue, or set "
        "notify.sendmail)",
        policy.notify->sendmail, std::strerror(errno));
  const auto seconds = [](const std::optional<std::chrono::seconds>& s) { return s ? s->count() : -1; };
  fingerprint_ = fmt::format("max_runtime {}", seconds(policy.max_runtime));
  if (const auto& idle = policy.idle_policy) {
    // exempt_containers only where set: a fingerprint that changed with the upgrade that brought
    // the key would have started every streak and warning afresh once.
    const std::string exempt_containers =
        idle->exempt_containers.empty() ? "" : fmt::format(" [{}]", fmt::join(idle->exempt_containers, ","));
    fingerprint_ += fmt::format("; idle_policy {} {} {} {} {} [{}]{}; interval {}", idle->below_percent,
                                seconds(idle->warn_after), seconds(idle->stop_after), static_cast<int>(idle->scope),
                                idle->dry_run, fmt::join(idle->exempt_users, ","), exempt_containers, interval.count());
  }
  if (const auto& notify = policy.notify)  // whom a warning went to, and which ones: a new one warns afresh
    fingerprint_ += fmt::format("; notify {} {} {} {} [{}]", notify->webhook, notify->mail, notify->mail_domain,
                                notify->sendmail, fmt::join(notify->events, ","));
}

void PolicyRules::resume(const std::vector<RunRecord>& running, const GpuSampleWalk& samples, WallTime since,
                         int samples_to_end) {
  std::vector<RunRecord> seen_since;  // only what the service saw under these rules was warned under them
  for (const RunRecord& run : running)
    if (run.last_seen >= since) seen_since.push_back(run);
  limiter_.resume(seen_since);
  if (idle_) idle_->resume(running, samples);
  // What the last stop could not tell, under these same rules (the same webhook, mail, events),
  // once the samples have ended the runs that ended meanwhile (observe_with).
  if (notifier_) kept_after_samples_ = samples_to_end;
}

void PolicyRules::take_up_asked(const std::vector<RunRecord>& running) {
  if (asked_file_.empty()) return;
  for (const std::string& key : read_run_keys(asked_file_))
    if (std::any_of(running.begin(), running.end(), [&key](const RunRecord& run) { return run.key == key; }))
      notify_end_.insert(key);
  keep_asked();  // without the runs that ended unseen before the stop
}

void PolicyRules::keep_asked() const {
  if (asked_file_.empty()) return;
  if (const auto error = keep_run_keys(asked_file_, notify_end_))
    spdlog::error(
        "notify: cannot keep {} ({}): a run asked to be told of its end that ends while gpurund is "
        "stopped will not be",
        asked_file_, *error);
}

void PolicyRules::start_afresh(int samples_to_end) {
  if (kept_notifications_.empty()) return;
  if (!notifier_) {
    forget_kept_notifications(kept_notifications_, "the rules changed, and every warning starts afresh");
    return;
  }
  if (const std::size_t dropped = notifier_->drop_kept_warnings(); dropped > 0)
    spdlog::info("notify: the rules changed: {} kept warning(s) dropped, as every warning starts afresh", dropped);
  kept_after_samples_ = samples_to_end;  // the stops and ends it tells of happened all the same
}

std::chrono::milliseconds PolicyRules::lookback() const {
  // A streak as long as the idle policy's longest wait, and a sample before it.
  if (!idle_) return std::chrono::milliseconds(0);
  const IdlePolicy& policy = idle_->policy();
  const std::chrono::seconds longest = std::max(policy.stop_after.value_or(std::chrono::seconds(0)),
                                                policy.warn_after.value_or(std::chrono::seconds(0)));
  return longest + std::chrono::hours(1);
}

void PolicyRules::observe(const MachineSample& sample, const std::vector<RunRecord>& running, ContainerEngine* engine,
                          const std::function<bool()>& stopping) {
  observe_with(sample, running, engine, stopping, true);
}

void PolicyRules::observe_containers_only(const MachineSample& sample, const std::vector<RunRecord>& running,
                                          ContainerEngine* engine, const std::function<bool()>& stopping) {
  observe_with(sample, running, engine, stopping, false);
}

void PolicyRules::observe_with(const MachineSample& sample, const std::vector<RunRecord>& running,
                               ContainerEngine* engine, const std::function<bool()>& stopping, bool utilization_read) {
  bool asked_more = false;
  for (const HolderSample& holder : sample.holders)
    if (holder.notify_end && notify_end_.insert(holder.key).second) asked_more = true;
  if (asked_more) keep_asked();
  // A container a rule stopped, missing from a sample since, that the engine lists running again
  // (its restart policy, `docker start`) before its run ended: the rules start afresh with it.
  // Kept as stopped, no rule would ever have looked at it again, and its run would have ended
  // "stopped" whenever it ended.
  const auto listed = [&sample](const std::string& key) {
    return std::any_of(sample.holders.begin(), sample.holders.end(),
                       [&key](const HolderSample& h) { return h.key == key && h.listed_by_engine; });
  };
  for (const auto& [key, why] : ended_by_)
    if (!listed(key)) stopped_and_gone_.insert(key);
  for (const HolderSample& holder : sample.holders)
    if (holder.listed_by_engine && stopped_and_gone_.erase(holder.key) != 0 && ended_by_.erase(holder.key) != 0) {
      spdlog::info("container {} runs again after its stop: the site's rules start afresh with it",
                   text::printable(holder.name));
      limiter_.forget(holder.key);
      if (idle_) idle_->forget(holder.key);
      retries_.erase(holder.key);
    }
  if (kept_after_samples_ && utilization_read && --*kept_after_samples_ <= 0) {
    kept_after_samples_.reset();
    notifier_->take_up_kept(running);
  }
  std::vector<PolicyAction> due = limiter_.observe(sample, running);
  if (idle_ && utilization_read) {
    std::vector<PolicyAction> idle = idle_->observe(sample, running);
    due.insert(due.end(), idle.begin(), idle.end());
  }
  // A holder gone starts afresh.
  std::erase_if(retries_, [&](const auto& entry) {
    return std::none_of(sample.holders.begin(), sample.holders.end(),
                        [&entry](const HolderSample& h) { return h.key == entry.first; });
  });
  const auto acting_from = std::chrono::steady_clock::now();
  std::size_t stops_left = 0;
  for (const PolicyAction& action : due) {
    // Once gpurund is stopping, no stop is begun (each may take 20 s, and systemd waits 30); the
    // next start stops what is still due. A warning still goes out: the rules count it given, and
    // the notifier keeps what it cannot deliver before it ends.
    if (action.kind == PolicyAction::Kind::stop && stopping && stopping()) {
      ++stops_left;
      continue;
    }
    const bool idle = action.rule == PolicyAction::Rule::idle;
    if (ended_by_.contains(action.key)) continue;  // stopped by the other rule already
    if (waits_for_retry(action, sample.time())) continue;
    ActResult result;
    try {
      result = carry_out(action, idle && idle_->policy().dry_run, engine);
    } catch (const std::exception& e) {  // spawning the engine's client failed (no memory, no pipes)
      spdlog::error("{}: acting on run {}: {}", idle ? "idle policy" : "time limit", action.run_id, e.what());
      result.failed = true;
    }
    if (result.failed) {
      stop_failed(action, sample.time());
      continue;
    }
    retries_.erase(action.key);
    if (result.stopped) ended_by_[action.key] = idle ? "idle_policy" : "time_limit";
    if (notifier_) {
      const auto run =
          std::find_if(running.begin(), running.end(), [&action](const RunRecord& r) { return r.key == action.key; });
      notifier_->send(notification_of(event_of(action, result.stopped), result.text,
                                      run != running.end() ? &*run : nullptr, &action, host_));
    }
  }
  if (stops_left != 0)
    spdlog::info("gpurund is stopping: {} stop(s) of the site's rules left for its next start", stops_left);
  // The stops ran one after another (docker stop waits up to 10 s for each): the next sample is
  // that much late, which must end no other holder's idle streak.
  if (idle_ && utilization_read)  // an outage's gap ends the streaks; acting within it is no excuse
    idle_->acted_for(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - acting_from));
}

bool PolicyRules::waits_for_retry(const PolicyAction& action, const SampleTime& now) {
  const auto retry = retries_.find(action.key);
  // On the steady clock: a wall clock stepped back an hour put the retry off by that hour.
  if (action.kind != PolicyAction::Kind::stop || retry == retries_.end() ||
      now.since(retry->second.failed) >= retry->second.wait)
    return false;
  if (action.rule == PolicyAction::Rule::idle)
    idle_->stop_failed(action.key);
  else
    limiter_.stop_failed(action.key);
  return true;
}

void PolicyRules::stop_failed(const PolicyAction& action, const SampleTime& now) {
  constexpr std::chrono::seconds kFirstRetry{60};
  constexpr std::chrono::seconds kLongestWait{15 * 60};
  Retry& retry = retries_[action.key];
  ++retry.failures;
  const std::chrono::seconds wait =
      std::min<std::chrono::seconds>(kFirstRetry * (1 << std::min(retry.failures - 1, 4)), kLongestWait);
  retry.failed = now;
  retry.wait = wait;
  if (action.rule == PolicyAction::Rule::idle)
    idle_->stop_failed(action.key);
  else
    limiter_.stop_failed(action.key);
  spdlog::warn("{}: run {}: the stop failed ({} in a row); trying again in {}",
               action.rule == PolicyAction::Rule::idle ? "idle policy" : "time limit", action.run_id, retry.failures,
               format_duration(wait, DurationStyle::brief));
}

void PolicyRules::ended(std::vector<RunRecord>& runs) {
  bool told_asked = false;
  for (RunRecord& run : runs) {
    if (const auto why = ended_by_.find(run.key); why != ended_by_.end()) {
      run.ended_by = why->second;
      ended_by_.erase(why);
      stopped_and_gone_.erase(run.key);
    }
    const bool asked = notify_end_.erase(run.key) > 0;
    if (notifier_) notifier_->send(notification_of("run_ended", ended_text(run), &run, nullptr, host_), asked);
    told_asked = told_asked || asked;
  }
  if (told_asked) keep_asked();
}

std::string PolicyRules::ended_text(const RunRecord& run) const {
  const auto efficiency = run.efficiency();
  // A process by its program alone: the text goes to chats and mail, and a command line may hold a token.
  return fmt::format("run {} ({}, user {}) ended on {}: {:.2f} GPU-hours, efficiency {}{}", run.id,
                     text::printable(with_programs_only(run).name),
                     run.user.empty() ? "unknown" : text::printable(run.user), host_, run.gpu_seconds / 3600,
                     efficiency ? fmt::format("{:.0f} %", *efficiency) : "unknown",
                     run.ended_by == "idle_policy"  ? ", stopped by the idle policy"
                     : run.ended_by == "time_limit" ? ", stopped at its time limit"
                                                    : "");
}

}  // namespace gpurun
