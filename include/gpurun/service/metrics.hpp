#pragma once
// What gpurund's /metrics shows (issue 23; docs/design.md, "Metrics"), in Prometheus' text format:
// each GPU under the NVIDIA DCGM exporter's names and labels (so that existing dashboards work),
// labelled with its holder while held, and gpurun's own series: who holds which GPU, how long it
// has been idle, GPU-seconds and busy GPU-seconds per user. Made from the last sample alone: a
// scrape never waits on the GPU source.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpurun/gpu/gpu.hpp"
#include "gpurun/history/run_tracker.hpp"
#include "gpurun/util/choices.hpp"

namespace gpurun {

struct UserSeconds {
  double gpu = 0;         // GPU-seconds held
  double busy = 0;        // of them, busy (utilization / 100 of each)
  double unmeasured = 0;  // of them, with no utilization known (a MIG instance's): neither busy nor idle
};

// The recorder's view for /metrics, replaced at every sample.
struct MetricsState {
  std::string hostname;
  std::vector<Gpu> gpus;               // the last snapshot's GPUs
  std::vector<HolderSample> holders;   // the last sample's holders, with the GPUs they hold now
  std::vector<RunRecord> running;      // the open runs (a holder's run: the same key)
  std::map<int, WallTime> idle_since;  // RunTracker::idle_since(); /v1/gpus reads it too
  // The idle policy's exempt_containers (dcgm-exporter, given every GPU): never counted holding one idle.
  std::vector<std::string> idle_exempt_containers;
  std::map<std::string, UserSeconds> user_seconds;  // counted since the service started
  std::uint64_t source_errors = 0;                  // samples the GPU source failed
  bool last_sample_ok = false;                      // the last look at the GPUs succeeded
  std::string source_error;                         // why it did not, if it did not
  std::optional<WallTime> sampled_at;               // when the last good sample was taken
  // Readings older than this are not shown as the GPUs' (the source fails: a hung driver): three
  // sampling intervals and 10 s, as a gap in a run's record.
  std::chrono::milliseconds stale_after{std::chrono::seconds(40)};

  // Since when `holder` has held `gpu` idle: the GPU's idle streak, from its run's start where that
  // is later (a job new on a GPU idle for days is not days idle); nullopt where the GPU is not idle.
  std::optional<WallTime> holder_idle_since(const HolderSample& holder, int gpu) const;
  // Since when `gpu` has been held idle by whichever holder has held it idle longest, those
  // idle_exempt_containers names left out; nullopt where no other holds it idle.
  std::optional<WallTime> held_idle_since(int gpu) const;

  // Whether the last good sample's readings still stand for the GPUs at `now`.
  bool fresh(WallTime now) const { return sampled_at && now - *sampled_at <= stale_after; }
};

// Adds to `totals` what one sample credited each user: the runs' time now (`running` and the runs
// the sample ended, `ended`) less what they had before it (`before`).
void credit_users(const std::vector<RunRecord>& before, const std::vector<RunRecord>& running,
                  const std::vector<RunRecord>& ended, std::map<std::string, UserSeconds>& totals);

// The page of metrics as of `now`. Under history_visibility "own" without each user's GPU-seconds:
// whoever reaches /metrics would read everyone's usage and efficiency there.
std::string prometheus_text(const MetricsState& state, WallTime now,
                            HistoryVisibility visibility = HistoryVisibility::all);

// What users named (commands, container names) as a label value Prometheus always accepts, and
// one name's never another's (Prometheus would drop a series as a duplicate): UTF-8 kept, control
// characters, invisible ones, backslashes (so that every backslash begins an escape) and bytes
// that are not UTF-8 (which would fail the whole scrape) as \xNN; at most
// `longest` bytes (128: a whole label), a longer one cut and told apart by its hash.
std::string label_safe(std::string_view value, std::size_t longest = 128);

// The holder's name for DCGM's hpc_job: a container's name, or a process's program without its
// arguments (which may carry anyone's tokens, and which the page's visibility rules would not show).
std::string hpc_job_of(const HolderSample& holder);

// hpc_job_of as a label value: a process whose command line could not be read (it exited, or /proc
// hides it) is "unknown", not "pid N", which would start a series per process.
std::string hpc_job_label(const HolderSample& holder);

// A label value as the text format wants it: backslash, double quote and newline escaped.
std::string prometheus_label_value(const std::string& value);

}  // namespace gpurun
