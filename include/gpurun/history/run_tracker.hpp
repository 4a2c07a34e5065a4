#pragma once
// The run model of the gpurun service (issue 22; docs/design.md, "After the launch"): what it
// makes of the samples it takes. A run is one holder of one or more GPUs, a container (any engine,
// any user) or, where no container holds it, a process. It starts when first seen holding a GPU
// and ends when it has been missing from two samples in a row (a container: see
// engine_outage_grace). Between two samples each run is credited with the time that passed:
// GPU-seconds, busy GPU-seconds (utilization / 100 of them), idle seconds (every one of its GPUs
// at or below the idle threshold) and its peak memory. A holder of MIG instances is credited
// their share of the GPU, not the whole of it.
//
// Pure logic, fed by the sampler and read by the store; no clock of its own, so that tests and
// benchmarks drive it with a synthetic one.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpurun {

using WallTime = std::chrono::system_clock::time_point;

// One holder as one sample saw it.
struct HolderSample {
  // Who it is across samples: "container:ID" ("container:UID:ID" for one of user UID's rootless
  // engine, seen through its processes), or "process:PID:START" (a reused pid is another;
  // START is "" where /proc no longer shows the process: one that has exited while the driver still
  // lists it, which continues the run of its pid).
  std::string key;
  std::string name;          // the container's name, or the process's command
  std::string user;          // a login name; "" where none is known
  std::string container_id;  // "" for a bare process
  std::string image;
  std::string command;
  std::vector<int> gpus;  // indices of the GPUs it holds
  // Of those, the ones a process of it computes on (nvidia-smi's compute apps): a GPU several hold
  // is the time of those computing on it (RunTracker::observe).
  std::vector<int> computing_gpus = {};
  // The part of a GPU it holds where that is a MIG instance's (its memory over the GPU's: a
  // 1g.10gb of an 80 GB GPU is 1/8), by index; a GPU absent here is held whole.
  std::map<int, double> mig_share = {};
  std::optional<double> memory_used_mib;                // its own, where the source tells it
  bool started_by_gpurun = false;                       // a container with gpurun's labels
  std::optional<std::chrono::seconds> time_limit = {};  // its --time-limit (gpurun's label)
  bool notify_end = false;                              // its --notify (gpurun's label)
  // A container the engine asked listed: only such a one is ever stopped through that engine
  // (one seen only through its processes may be another engine's, or a scope a user named).
  bool listed_by_engine = false;
  // When the engine started the container (its State.StartedAt); nullopt where it does not say.
  // A time limit counts from it: a run ended and begun again (the engine silent past its grace)
  // is the same container, not a new limit.
  std::optional<WallTime> started_at = std::nullopt;
  // A container's GPU processes: one that leaves /proc while the driver still lists it (a holder
  // "process:PID:") continues the container's run, not a run of its own.
  std::vector<long> pids = {};
};

// One GPU's readings in one sample.
struct GpuReading {
  int index = 0;
  std::optional<double> utilization_percent;  // unknown: credited as neither busy nor idle
  std::optional<double> memory_used_mib;      // the whole GPU's
};

// One look at the machine.
// When a sample was taken: the wall clock, and a clock that never steps (the sampler's steady
// clock; unset in samples made by hand, whose wall time serves instead). The site's rules measure
// time on the latter: a wall clock stepped forward must not make every job look hours older.
struct SampleTime {
  WallTime when;
  std::optional<std::chrono::steady_clock::time_point> monotonic;

  // The time from `earlier` to this: on the steady clock where both have it; never negative.
  std::chrono::milliseconds since(const SampleTime& earlier) const {
    const auto gap = monotonic && earlier.monotonic ? *monotonic - *earlier.monotonic : when - earlier.when;
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(gap), std::chrono::milliseconds(0));
  }
};

struct MachineSample {
  WallTime when;
  std::vector<GpuReading> gpus;
  std::vector<HolderSample> holders;
  std::optional<std::chrono::steady_clock::time_point> monotonic = std::nullopt;  // see SampleTime
  // The container engine was asked and did not answer: a container it alone shows (one with no
  // process on a GPU: an idle one) is missing from `holders`, not gone.
  bool containers_unknown = false;
  // GPUs an earlier read gave that this one left out (the driver failed to list one GPU's
  // processes): their holders are missing from `holders`, not gone.
  std::set<int> gpus_unknown = {};

  SampleTime time() const { return {when, monotonic}; }
};

// A run, as the store keeps it and `gpurun history` shows it.
struct RunRecord {
  std::int64_t id = 0;  // given by the tracker, counting up from the store's last
  std::string key;      // HolderSample::key
  std::string name;
  std::string user;
  std::string container_id;
  std::string image;
  std::string command;
  std::vector<int> gpus;  // every GPU it held, ascending
  WallTime start;
  WallTime last_seen;
  std::optional<WallTime> end;  // nullopt while it runs
  double gpu_seconds = 0;
  double busy_gpu_seconds = 0;
  // Of gpu_seconds, those whose utilization no sample knew (a MIG instance: NVML gives none):
  // neither busy nor idle, so no part of the efficiency.
  double unmeasured_gpu_seconds = 0;
  double idle_seconds = 0;
  double max_memory_mib = 0;
  std::string ended_by;  // "" while running; "gone"
  int missed = 0;        // samples in a row that did not see it

  // 100 × busy / the GPU-seconds whose utilization was known; nullopt where none was.
  std::optional<double> efficiency() const;
};

struct TrackerSettings {
  double idle_threshold_percent = 5.0;  // at or below: idle
  int gone_after_samples = 2;           // missing from this many samples in a row: ended
  // The most time one sample may credit. A longer gap (gpurund stopped, the machine suspended, the
  // clock stepped forward) is not counted: the runs lose the gap's time rather than gain idle or
  // busy time nobody measured.
  std::chrono::milliseconds max_credit{std::chrono::seconds(60)};
  // How long a container run missing from samples whose engine did not answer is held open (not
  // counted missing): a restarting or busy engine must not end and restart every idle container's
  // run, and with it its idle time. After that, or once the engine answers without it, it ends
  // where it was last seen. A run whose GPUs a read left out (MachineSample::gpus_unknown) is held
  // as long.
  std::chrono::milliseconds engine_outage_grace{std::chrono::minutes(10)};
};

// The sample's holders one per key, in the order each key first appears: a process on several
// GPUs is listed once per GPU, and is one holder of all of them (GPUs ascending, memory summed).
std::vector<HolderSample> merged_holders(const std::vector<HolderSample>& holders);

// The run of `running` a holder keyed `key` is, as the tracker names it: the run of that key, or
// for a process /proc no longer shows ("process:PID:", the driver letting it go) the latest run of
// its pid. nullptr where it has none yet.
const RunRecord* run_of_holder(const std::vector<RunRecord>& running, const std::string& key);

class RunTracker {
 public:
  explicit RunTracker(TrackerSettings settings = {}, std::int64_t last_id = 0);

  // Runs the store still had open when the service stopped: a holder seen again continues as
  // the same run (no duplicate, no false end); one not seen ends as usual.
  void resume(std::vector<RunRecord> open_runs);

  // Takes one sample: starts, credits and ends runs. Returns the runs this sample ended.
  std::vector<RunRecord> observe(const MachineSample& sample);

  const std::vector<RunRecord>& running() const { return running_; }

  // Time spent acting on the last sample (the site's rules stopping containers, 10 s or more
  // each): the next sample is that much late, which is no gap nobody measured (max_credit).
  void acted_for(std::chrono::milliseconds spent) { allowance_ += spent; }

  // Since when each held GPU has been at or below the idle threshold, sample after sample (from
  // the first such sample). A GPU nobody holds, a busy one or one of unknown utilization is absent.
  // Measured on the steady clock and given as of the last sample's wall clock: a step of the wall
  // clock (NTP, an admin) moves neither the idle time nor an alert on it.
  const std::map<int, WallTime>& idle_since() const { return idle_since_; }

 private:
  TrackerSettings settings_;
  std::int64_t last_id_;
  std::optional<SampleTime> previous_;  // the last sample's time
  void follow_wall_clock_step(const SampleTime& now);
  std::vector<RunRecord> running_;
  std::map<int, WallTime> idle_since_;
  std::map<int, SampleTime> idle_from_;           // the first idle sample of each, as idle_since_ counts
  std::map<std::string, SampleTime> last_seen_;   // each run's last sample, for the holding graces
  std::map<long, std::string> container_of_pid_;  // the last sample's container processes: pid → key
  std::chrono::milliseconds allowance_{0};        // acted_for, until the next sample
};

}  // namespace gpurun
