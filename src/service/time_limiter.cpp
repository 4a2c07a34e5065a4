#include "gpurun/service/time_limiter.hpp"

#include <algorithm>
#include <set>

namespace gpurun {

std::chrono::seconds TimeLimiter::warn_at(std::chrono::seconds limit) {
  constexpr std::chrono::seconds kNotice{10 * 60};
  return limit >= 2 * kNotice ? limit - kNotice : limit / 2;
}

void TimeLimiter::stop_failed(const std::string& key) { done_[key] = Done::warned; }

void TimeLimiter::forget(const std::string& key) {
  done_.erase(key);
  ages_.erase(key);
  seen_before_.erase(key);
}

void TimeLimiter::resume(const std::vector<RunRecord>& running) {
  for (const RunRecord& run : running) seen_before_[run.key] = run.last_seen;
}

std::vector<PolicyAction> TimeLimiter::observe(const MachineSample& sample, const std::vector<RunRecord>& running) {
  std::vector<PolicyAction> due;
  std::set<std::string> present;
  for (const HolderSample& holder : merged_holders(sample.holders)) {
    present.insert(holder.key);
    if (holder.container_id.empty() || !holder.started_by_gpurun || !holder.listed_by_engine)
      continue;  // only what gpurun launched, as the engine lists it
    std::optional<std::chrono::seconds> limit = holder.time_limit;
    if (max_runtime_) limit = std::min(limit.value_or(*max_runtime_), *max_runtime_);
    if (!limit) continue;
    const auto run =
        std::find_if(running.begin(), running.end(), [&holder](const RunRecord& r) { return r.key == holder.key; });
    // First seen (a launch, or gpurund restarted), its age by the wall clock from its start: the
    // earlier of its run's and the engine's (a run ended and begun again across an engine outage
    // keeps its container's age; a `docker start` after its stop at the limit, which sets the
    // engine's anew, does not get a new limit). From then on what the steady clock measured: a
    // wall clock stepped forward 9 hours stopped every job at the next sample, one stepped back
    // gave each the step's time again.
    const SampleTime now = sample.time();
    auto [age, fresh] = ages_.try_emplace(holder.key, Age{.elapsed = {}, .last = now});
    if (fresh) {
      WallTime start = run != running.end() ? run->start : sample.when;
      if (holder.started_at && *holder.started_at < start) start = *holder.started_at;
      age->second.elapsed = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(sample.when - start),
                                     std::chrono::milliseconds(0));
      if (const auto before = seen_before_.find(holder.key);
          before != seen_before_.end() && before->second - start >= warn_at(*limit)) {
        done_.try_emplace(holder.key, Done::warned);  // warned before the restart
        // Last seen with under half its notice left: its warning may have been a late one, which
        // promised the whole notice from when it went out (at the latest, that last sighting).
        const auto seen = std::chrono::floor<std::chrono::seconds>(before->second - start);
        const std::chrono::seconds notice = *limit - warn_at(*limit);
        if (seen > *limit - notice / 2) age->second.stop_not_before = seen + notice;
      }
    } else {
      age->second.elapsed += now.since(age->second.last);
      age->second.last = now;
    }
    const auto elapsed = std::chrono::floor<std::chrono::seconds>(age->second.elapsed);
    const auto done = done_.find(holder.key);
    const int step = done == done_.end() ? 0 : static_cast<int>(done->second);
    PolicyAction action = warning_about(PolicyAction::Rule::time_limit, holder, running, elapsed, *limit);
    // Never a stop without its notice: one first seen past its limit, or warned with less than half
    // its notice left (the limit set or lowered since it started, gpurund down across its warning),
    // is warned now and stopped the whole notice later.
    const std::chrono::seconds notice = *limit - warn_at(*limit);
    Age& measured = age->second;  // (a structured binding: clang 14 captures none)
    const auto warn_now = [&] {
      done_[holder.key] = Done::warned;
      if (*limit - elapsed < notice / 2) {
        measured.stop_not_before = elapsed + notice;
        action.stops_in = notice;
      }
      due.push_back(std::move(action));
    };
    if (elapsed >= *limit && step < static_cast<int>(Done::stopped)) {
      if (step < static_cast<int>(Done::warned)) {
        warn_now();
      } else if (elapsed >= measured.stop_not_before) {
        action.kind = PolicyAction::Kind::stop;
        done_[holder.key] = Done::stopped;
        due.push_back(std::move(action));
      }
    } else if (elapsed >= warn_at(*limit) && step < static_cast<int>(Done::warned)) {
      warn_now();
    }
  }
  const std::set<std::string> kept = kept_holders(std::move(present), running);
  std::erase_if(done_, [&kept](const auto& entry) { return !kept.contains(entry.first); });
  std::erase_if(ages_, [&kept](const auto& entry) { return !kept.contains(entry.first); });
  return due;
}

}  // namespace gpurun
