#include "pending_writes.hpp"

#include <SQLiteCpp/Exception.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <exception>

namespace gpurun {
namespace {

// Raw sample rows kept in memory while the store cannot be written: about 3 days of 8 GPUs at 10 s.
constexpr std::size_t kMaxUnsavedSamples = 200'000;
// Ended runs held while the store cannot be written: more than a weekend of a CI runner's job
// every ten seconds, and at most some 80 MB of command lines; past it the oldest half goes, said.
constexpr std::size_t kMaxUnsavedRuns = 20'000;

template <typename T>
void drop_older_half(std::vector<T>& rows) {
  rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(rows.size() / 2));
}

}  // namespace

PendingWrites::PendingWrites(RunStore& store, std::mutex& store_mutex, Retention retention)
    : store_(store), store_mutex_(store_mutex), retention_(retention) {}

void PendingWrites::add_samples(const std::vector<GpuSampleRow>& rows) {
  samples_.insert(samples_.end(), rows.begin(), rows.end());
}

void PendingWrites::add_ended(RunRecord run) { ended_.push_back(std::move(run)); }

std::optional<GpuMinute> PendingWrites::kept_minute(std::int64_t minute, int gpu) {
  const auto same = [&](const GpuMinute& m) { return m.minute == minute && m.gpu == gpu; };
  if (const auto unwritten = std::find_if(minutes_.rbegin(), minutes_.rend(), same); unwritten != minutes_.rend())
    return *unwritten;
  try {
    const std::lock_guard hold(store_mutex_);
    return store_.gpu_minute(minute, gpu);
  } catch (const std::exception&) {
    return std::nullopt;  // the store's trouble is reported by the next write
  }
}

void PendingWrites::flush(const std::vector<RunRecord>& running, MinuteRollup& rollup) {
  std::vector<GpuMinute> minutes = rollup.take_finished();
  minutes_.insert(minutes_.end(), minutes.begin(), minutes.end());
  minutes = minutes_;
  for (const GpuMinute& m : rollup.in_progress()) minutes.push_back(m);
  // Pruned at least twice as fast as written: a flush of many sample times (--write-every far
  // above --interval) would otherwise leave some behind at every flush, for good.
  std::size_t times_written = 0;
  for (std::size_t i = 0; i < samples_.size(); ++i)
    if (i == 0 || samples_[i].when != samples_[i - 1].when) ++times_written;
  const int prune_batch = static_cast<int>(std::clamp<std::size_t>(2 * times_written, 500, kMaxUnsavedSamples));
  try {
    const std::lock_guard hold(store_mutex_);
    store_.save(running, ended_, samples_, minutes);
    ended_.clear();
    samples_.clear();
    minutes_.clear();
    const WallTime now = prune_clock_.now();
    store_.prune(now - retention_.samples, now - retention_.minutes, prune_batch);
    trouble_.fine();
  } catch (const std::exception& e) {  // a full disk, a read-only file system: keep them in memory
    trouble_.failed(e.what());
    // A file damaged under the running service (a disk's bad sector, another program's write)
    // fails every write and every answer for good: the service ends, and its next start (systemd
    // restarts it) moves the file aside and records afresh, as it does for one found so at a start.
    if (const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
        sqlite != nullptr && (sqlite->getErrorCode() == SQLITE_CORRUPT || sqlite->getErrorCode() == SQLITE_NOTADB))
      damaged_ = e.what();
    keep_within_bounds();
  }
  last_flush_ = std::chrono::steady_clock::now();
}

// Runs are few and kept whole, but for a flood of short jobs; raw samples are many: past a bound
// (days at the default interval) the oldest go.
void PendingWrites::keep_within_bounds() {
  if (ended_.size() > kMaxUnsavedRuns) {
    const std::size_t dropped = ended_.size() / 2;
    spdlog::error(
        "the store has not been written for {} ended runs; dropping the oldest {} (runs {} to {}): the store "
        "keeps them open as last written, and a restart ends them there",
        ended_.size(), dropped, ended_.front().id, ended_[dropped - 1].id);
    drop_older_half(ended_);
  }
  if (samples_.size() > kMaxUnsavedSamples) drop_older_half(samples_);
  if (minutes_.size() > kMaxUnsavedSamples) drop_older_half(minutes_);
}

}  // namespace gpurun
