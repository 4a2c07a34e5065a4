#pragma once
// What the recorder has seen and the store does not hold yet: ended runs, raw samples, finished
// minutes. Written at each flush with the open runs; kept in memory while the store cannot be
// written (a full disk), within bounds, so that memory stays flat however long that lasts.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/history/gpu_minutes.hpp"
#include "gpurun/service/run_store.hpp"
#include "prune_clock.hpp"
#include "trouble.hpp"

namespace gpurun {

class PendingWrites {
 public:
  struct Retention {
    std::chrono::milliseconds samples;  // raw samples
    std::chrono::milliseconds minutes;  // per-minute rows
  };

  // `store_mutex` is held while the store is written or read (the servers' ServedRuns::mutex).
  PendingWrites(RunStore& store, std::mutex& store_mutex, Retention retention);

  void add_samples(const std::vector<GpuSampleRow>& rows);
  void add_ended(RunRecord run);  // under the store mutex, which the caller holds
  const std::vector<RunRecord>& ended() const { return ended_; }

  // A minute opened again (a restart within it, a clock stepped back) goes on from its row: the
  // newest one a failed write kept, else the store's.
  std::optional<GpuMinute> kept_minute(std::int64_t minute, int gpu);

  // Writes what waits, the rollup's finished minutes and the one in progress, and the open runs;
  // then prunes what is past its retention. A failure keeps it all (within bounds) for the next.
  void flush(const std::vector<RunRecord>& running, MinuteRollup& rollup);

  // Why the store cannot be written again (damaged under the running service); empty while it can.
  const std::string& damaged() const { return damaged_; }
  std::chrono::steady_clock::time_point last_flush() const { return last_flush_; }

 private:
  RunStore& store_;
  std::mutex& store_mutex_;
  Retention retention_;
  const PruneClock prune_clock_;
  Trouble trouble_{"the store", "at each write"};
  std::vector<RunRecord> ended_;
  std::vector<GpuSampleRow> samples_;
  std::vector<GpuMinute> minutes_;
  std::string damaged_;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();

  void keep_within_bounds();
};

}  // namespace gpurun
