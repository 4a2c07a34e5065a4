#include "gpurun/service/recorder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>
#include <set>

#include "dcgm_job_map.hpp"
#include "gpurun/engine/gpu_process_owner.hpp"
#include "gpurun/history/gpu_minutes.hpp"
#include "gpurun/select/inventory.hpp"
#include "gpurun/service/machine_sample.hpp"
#include "gpurun/service/run_store.hpp"
#include "gpurun/service/web_server.hpp"
#include "gpurun/util/accounts.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/fd.hpp"
#include "gpurun/util/process.hpp"
#include "gpurun/util/text.hpp"
#include "gpurun/util/units.hpp"
#include "owned_path.hpp"
#include "policy_rules.hpp"
#include "prune_clock.hpp"
#include "store_schema.hpp"

namespace gpurun {
namespace {

// Raw sample rows kept in memory while the store cannot be written: about 3 days of 8 GPUs at 10 s.
constexpr std::size_t kMaxUnsavedSamples = 200'000;
// Ended runs held while the store cannot be written: more than a weekend of a CI runner's job
// every ten seconds, and at most some 80 MB of command lines; past it the oldest half goes, said.
constexpr std::size_t kMaxUnsavedRuns = 20'000;

// Logs a failure once while it repeats, and says when it is over.
class Trouble {
 public:
  explicit Trouble(std::string what, std::string again = "at each sample")
      : what_(std::move(what)), again_(std::move(again)) {}
  void failed(const std::string& why) {
    if (why != last_) spdlog::error("{}: {} (trying again {})", what_, why, again_);
    last_ = why;
  }
  void fine() {
    if (!last_.empty()) spdlog::info("{}: working again", what_);
    last_.clear();
  }

 private:
  std::string what_;
  std::string again_;
  std::string last_;
};

// Until `when`, or a stop request, whichever comes first.
void sleep_until(std::chrono::steady_clock::time_point when, const StopRequest& stop) {
  while (!stop.requested()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(when - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd requested{stop.fd(), POLLIN, 0};
    (void)::poll(&requested, 1, static_cast<int>(std::min<long long>(left.count(), 60'000)));
  }
}

}  // namespace

void apply_service_section(const ServiceSection& section, RecorderSettings& settings) {
  const auto ms = [](double seconds) { return std::chrono::milliseconds(std::llround(seconds * 1000)); };
  const auto hours = [](double days) { return std::chrono::hours(std::llround(days * 24)); };
  if (section.state_dir) settings.state_dir = *section.state_dir;
  if (section.interval_s) settings.interval = ms(*section.interval_s);
  if (section.write_every_s) settings.flush_every = ms(*section.write_every_s);
  if (section.keep_samples_days) settings.keep_samples = hours(*section.keep_samples_days);
  if (section.keep_minutes_days) settings.keep_minutes = hours(*section.keep_minutes_days);
  if (section.idle_threshold_percent) settings.tracker.idle_threshold_percent = *section.idle_threshold_percent;
  if (section.listen) settings.listen = *section.listen;
  if (section.web_names) settings.server.web_names = *section.web_names;
  if (section.trusted_peers)
    for (const std::string& peer : *section.trusted_peers)
      if (const auto network = parse_ip_network(peer)) settings.server.trusted_peers.push_back(*network);
  if (section.dcgm_job_mapping_dir) settings.dcgm_job_mapping_dir = *section.dcgm_job_mapping_dir;
}

int run_recorder(const Options& options, const RecorderSettings& settings, const StopRequest& stop) {
  const WaitsEndOnStop waits_end_on_stop(stop);
  const Fd lock = lock_state_dir(settings.state_dir);
  std::string moved_aside;
  const std::string database = settings.state_dir + "/gpurund.db";
  RunStore store(database, &moved_aside);
  // A sample is credited its gap up to a minute, or three intervals and 10 s where the interval
  // is long: at --interval 120 no gap was ever credited, and no run counted a GPU-second.
  TrackerSettings tracking = settings.tracker;
  tracking.max_credit = std::max(tracking.max_credit, 3 * settings.interval + std::chrono::seconds(10));
  RunTracker tracker(tracking, store.last_id());
  tracker.resume(store.open_runs());
  ServedRuns served;
  served.store_path = database;
  served.metrics.hostname = host_name();  // before the servers' threads read it
  served.metrics.stale_after = 3 * settings.interval + std::chrono::seconds(10);
  served.fresh = tracker.running();
  const ServiceServer server(settings.server, served);
  std::optional<WebServer> web;
  if (!settings.listen.empty()) {
    web.emplace(settings.listen, served, settings.server);
    spdlog::info("the lab's page (/) and metrics for Prometheus (/metrics) on {} (port {})", settings.listen,
                 web->port());
  }
  spdlog::info("recording into {} every {} ms, answering on {}; {} run(s) still open from before", settings.state_dir,
               settings.interval.count(), settings.server.socket_path, tracker.running().size());

  GpuSourceSpec source_spec = gpu_source_spec(options);
  source_spec.sensors = true;                    // power and temperature for /metrics
  source_spec.stream_every = settings.interval;  // nvidia-smi's loop mode: no process per sample
  const Machine machine{make_gpu_source(source_spec), make_container_engine(engine_spec(options))};
  PolicyRules rules(options.policy, host_name(), settings.interval,
                    settings.state_dir + "/notifications-undelivered.json", &stop);
  // The rules' state from before a restart, where they are the same rules: a restart that changed
  // them (the way to change them) starts every streak and warning afresh, as their first start did.
  try {
    const WallTime now = std::chrono::system_clock::now();
    if (const std::optional<WallTime> since = store.rules_in_force(rules.fingerprint(), now)) {
      const WallTime from = std::max(*since, now - rules.lookback());
      const bool looks_back = rules.lookback() > std::chrono::milliseconds(0);
      rules.resume(
          tracker.running(),
          [&](const GpuSampleVisit& visit) {
            if (looks_back) store.each_gpu_sample(from, visit);
          },
          *since, settings.tracker.gone_after_samples);
    } else {
      rules.start_afresh(settings.tracker.gone_after_samples);
    }
  } catch (const std::exception& e) {  // a full disk: the rules start afresh
    spdlog::warn("the store: {}; the idle policy and time limits start afresh", e.what());
  }
  rules.take_up_asked(tracker.running());
  // Raw samples outlive the idle policy's look-back: with keep_samples_days 1 and stop_after 3d,
  // a restart saw a day of a three-day streak, and warned again and stopped days late.
  const std::chrono::milliseconds keep_samples =
      std::max<std::chrono::milliseconds>(settings.keep_samples, rules.lookback());
  if (keep_samples > settings.keep_samples)
    spdlog::info("raw samples are kept for {} rather than {} (keep_samples_days): the idle policy looks back that far",
                 format_duration(std::chrono::duration_cast<std::chrono::seconds>(keep_samples), DurationStyle::brief),
                 format_duration(settings.keep_samples, DurationStyle::brief));
  const std::string reservations = lock_dir_for_reading(options);
  const auto timeout = smi_timeout(options);
  Trouble source_trouble("the GPU source");
  Trouble engine_trouble("the container engine");
  Trouble store_trouble("the store", "at each write");
  Trouble sample_trouble("the sample");
  Trouble job_map_trouble("DCGM's job mapping");
  std::optional<DcgmJobMap> job_map;
  if (!settings.dcgm_job_mapping_dir.empty()) {
    job_map.emplace(settings.dcgm_job_mapping_dir);
    spdlog::info("DCGM's job mapping files in {}", settings.dcgm_job_mapping_dir);
  }
  std::vector<RunRecord> unsaved;  // ended runs not yet written
  std::vector<GpuSampleRow> unsaved_samples;
  std::vector<GpuMinute> unsaved_minutes;
  // A minute opened again (a restart within it, a clock stepped back) goes on from its row.
  const auto kept_minute = [&](std::int64_t minute, int gpu) -> std::optional<GpuMinute> {
    const auto same = [&](const GpuMinute& m) { return m.minute == minute && m.gpu == gpu; };
    if (const auto unwritten = std::find_if(unsaved_minutes.rbegin(), unsaved_minutes.rend(), same);
        unwritten != unsaved_minutes.rend())
      return *unwritten;  // the newest of those a failed write kept
    try {
      const std::lock_guard hold(served.mutex);
      return store.gpu_minute(minute, gpu);
    } catch (const std::exception&) {
      return std::nullopt;  // the store's trouble is reported by the next write
    }
  };
  MinuteRollup rollup(settings.tracker.idle_threshold_percent, kept_minute);
  auto last_flush = std::chrono::steady_clock::now();
  const PruneClock prune_clock;
  std::string store_damaged;  // why the store cannot be written again: the service ends
  const auto flush = [&] {
    std::vector<GpuMinute> minutes = rollup.take_finished();
    unsaved_minutes.insert(unsaved_minutes.end(), minutes.begin(), minutes.end());
    minutes = unsaved_minutes;
    for (const GpuMinute& m : rollup.in_progress()) minutes.push_back(m);
    // Pruned at least twice as fast as written: a flush of many sample times (--write-every far
    // above --interval) would otherwise leave some behind at every flush, for good.
    std::size_t times_written = 0;
    for (std::size_t i = 0; i < unsaved_samples.size(); ++i)
      if (i == 0 || unsaved_samples[i].when != unsaved_samples[i - 1].when) ++times_written;
    const int prune_batch = static_cast<int>(std::clamp<std::size_t>(2 * times_written, 500, kMaxUnsavedSamples));
    try {
      const std::lock_guard hold(served.mutex);
      store.save(tracker.running(), unsaved, unsaved_samples, minutes);
      unsaved.clear();
      unsaved_samples.clear();
      unsaved_minutes.clear();
      const WallTime now = prune_clock.now();
      store.prune(now - keep_samples, now - settings.keep_minutes, prune_batch);
      store_trouble.fine();
    } catch (const std::exception& e) {  // a full disk, a read-only file system: keep them in memory
      store_trouble.failed(e.what());
      // A file damaged under the running service (a disk's bad sector, another program's write)
      // fails every write and every answer for good: the service ends, and its next start (systemd
      // restarts it) moves the file aside and records afresh, as it does for one found so at a start.
      if (const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
          sqlite != nullptr && (sqlite->getErrorCode() == SQLITE_CORRUPT || sqlite->getErrorCode() == SQLITE_NOTADB))
        store_damaged = e.what();
      // Runs are few and kept whole, but for a flood of short jobs; raw samples are many: past a
      // bound (days at the default interval) the oldest go, so memory stays flat however long the
      // disk stays full.
      if (unsaved.size() > kMaxUnsavedRuns) {
        const std::size_t dropped = unsaved.size() / 2;
        spdlog::error(
            "the store has not been written for {} ended runs; dropping the oldest {} (runs {} to {}): the store "
            "keeps them open as last written, and a restart ends them there",
            unsaved.size(), dropped, unsaved.front().id, unsaved[dropped - 1].id);
        unsaved.erase(unsaved.begin(), unsaved.begin() + static_cast<std::ptrdiff_t>(dropped));
      }
      if (unsaved_samples.size() > kMaxUnsavedSamples)
        unsaved_samples.erase(unsaved_samples.begin(),
                              unsaved_samples.begin() + static_cast<std::ptrdiff_t>(unsaved_samples.size() / 2));
      if (unsaved_minutes.size() > kMaxUnsavedSamples)
        unsaved_minutes.erase(unsaved_minutes.begin(),
                              unsaved_minutes.begin() + static_cast<std::ptrdiff_t>(unsaved_minutes.size() / 2));
    }
    last_flush = std::chrono::steady_clock::now();
  };

  // The GPUs as last read, without their processes: which ones a container holds when the source
  // fails and only the engine answers.
  std::vector<Gpu> last_gpus;
  std::set<int> gpus_read;  // every GPU a read has given: one left out later is unread, not free
  // The GPU source failed: time limits need only the engine's containers, and hold (a driver
  // upgraded under running jobs fails every read until a reboot, and no --time-limit held).
  const auto enforce_time_limits = [&] {
    if (!machine.engine || options.ignore_containers) return;
    std::vector<Gpu> gpus = last_gpus;
    if (gpus.empty()) {  // none read since the start (a restart during the outage): the open runs' GPUs
      std::set<int> indices;
      for (const RunRecord& run : tracker.running()) indices.insert(run.gpus.begin(), run.gpus.end());
      for (const int index : indices) {
        Gpu gpu;
        gpu.index = index;
        gpus.push_back(std::move(gpu));
      }
    }
    if (gpus.empty()) return;
    try {
      std::vector<GpuContainer> containers = machine.engine->gpu_holders(timeout, Listing::running);
      engine_trouble.fine();
      if (stop.requested()) return;
      Snapshot known;
      known.gpus = std::move(gpus);
      MachineSample sample =
          machine_sample(std::chrono::system_clock::now(), known, std::move(containers), host_proc_root());
      sample.monotonic = std::chrono::steady_clock::now();
      const WaitsOutlastStop stops_finish;
      rules.observe_containers_only(sample, tracker.running(), machine.engine.get(),
                                    [&stop] { return stop.requested(); });
    } catch (const Error& e) {
      if (!stop.requested()) engine_trouble.failed(e.what());
    }
  };
  auto next = std::chrono::steady_clock::now();
  while (!stop.requested()) {
    next += settings.interval;
    bool started = false;
    bool read = false;           // the GPU source answered: a failure after it is not the source's
    bool rules_reached = false;  // the policy acted on this sample (its time limits among it)
    try {
      const Snapshot snapshot = machine.source->read(timeout);
      read = true;
      source_trouble.fine();
      last_gpus = snapshot.gpus;
      for (Gpu& gpu : last_gpus) gpu.processes.clear();
      std::set<int> gpus_unknown = gpus_read;
      for (const Gpu& gpu : snapshot.gpus) {
        gpus_unknown.erase(gpu.index);
        gpus_read.insert(gpu.index);
      }
      std::vector<GpuContainer> containers;
      bool containers_unknown = false;
      if (machine.engine && !options.ignore_containers) {
        try {
          containers = machine.engine->gpu_holders(timeout, Listing::running);
          engine_trouble.fine();
        } catch (const Error& e) {
          containers_unknown = true;
          if (!stop.requested()) engine_trouble.failed(e.what());  // given up for the stop: no trouble
        }
      }
      if (stop.requested()) break;  // what the sample waited for was given up: neither recorded nor acted on
      // The page's board, as `gpurun status` assesses it: other launches' reservations count too.
      Inventory inventory = assess_inventory(options, reservations, snapshot, containers);
      MachineSample sample =
          machine_sample(std::chrono::system_clock::now(), snapshot, std::move(containers), host_proc_root());
      sample.monotonic = std::chrono::steady_clock::now();
      sample.containers_unknown = containers_unknown;
      sample.gpus_unknown = std::move(gpus_unknown);
      const std::vector<GpuSampleRow> rows = gpu_sample_rows(sample);
      rollup.add(rows);
      unsaved_samples.insert(unsaved_samples.end(), rows.begin(), rows.end());
      const std::vector<RunRecord> before = tracker.running();
      std::vector<RunRecord> ended = tracker.observe(sample);
      rules.ended(ended);
      {
        const std::lock_guard hold(served.mutex);
        credit_users(before, tracker.running(), ended, served.metrics.user_seconds);
        for (RunRecord& run : ended) {
          spdlog::info("run {} ended: {} ({}), {:.0f} GPU-s", run.id, text::printable(run.name, 80),
                       text::printable(run.user, 32), run.gpu_seconds);
          unsaved.push_back(std::move(run));
        }
        served.fresh = tracker.running();
        served.fresh.insert(served.fresh.end(), unsaved.begin(), unsaved.end());
        served.metrics.gpus = snapshot.gpus;
        served.metrics.holders = sample.holders;
        served.metrics.running = tracker.running();
        served.metrics.idle_since = tracker.idle_since();
        served.metrics.last_sample_ok = true;
        served.metrics.source_error.clear();
        served.metrics.sampled_at = sample.when;
        served.inventory = std::move(inventory);
      }
      // A run that started is written at once too: a kill -9 then never loses one.
      started = tracker.running().size() + unsaved.size() > before.size();
      if (job_map) {
        try {
          std::vector<int> indices;
          for (const GpuReading& gpu : sample.gpus) indices.push_back(gpu.index);
          job_map->update(indices, sample.holders);
          job_map_trouble.fine();
        } catch (const Error& e) {
          job_map_trouble.failed(e.what());
        }
      }
      // After the ended runs are safe in `unsaved`, outside the lock: a stop takes seconds, and may
      // fail; one under way finishes even when gpurund is asked to stop.
      const WaitsOutlastStop stops_finish;
      rules_reached = true;
      const auto acting_from = std::chrono::steady_clock::now();
      rules.observe(sample, tracker.running(), machine.engine.get(), [&stop] { return stop.requested(); });
      tracker.acted_for(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - acting_from));
      sample_trouble.fine();
    } catch (const Error& e) {
      if (stop.requested()) break;  // given up for the stop: no trouble
      if (read) {
        sample_trouble.failed(e.what());
        if (!rules_reached) enforce_time_limits();  // a failure before them holds no limit up
      } else {
        source_trouble.failed(e.what());
        {
          const std::lock_guard hold(served.mutex);
          ++served.metrics.source_errors;
          served.metrics.last_sample_ok = false;
          served.metrics.source_error = e.what();
        }
        enforce_time_limits();
      }
    }
    // (Asked to stop: the flush after the loop writes it, once.)
    if (!stop.requested() &&
        (started || !unsaved.empty() || std::chrono::steady_clock::now() - last_flush >= settings.flush_every))
      flush();
    if (!store_damaged.empty()) break;
    if (std::chrono::steady_clock::now() > next) next = std::chrono::steady_clock::now();  // never catch up
    sleep_until(next, stop);
  }
  if (store_damaged.empty()) flush();
  if (job_map) {
    try {
      job_map->clear();
    } catch (const Error& e) {
      spdlog::warn("{}", e.what());
    }
  }
  if (!store_damaged.empty()) {
    // Moved aside here: a start's quick_check passes a file whose indexes alone are damaged, and
    // it would fail at its first write again, and again after each restart.
    std::string where;
    try {
      where = "moved aside to " + move_store_aside(database, store_damaged);
    } catch (const Error& e) {
      where = e.what();
    }
    spdlog::critical(
        "the store {} is damaged ({}): {}; stopping, so that the next start records afresh (under systemd, "
        "in 5 s); {} run(s) open and {} ended ones not yet written are lost",
        database, store_damaged, where, tracker.running().size(), unsaved.size());
    return 1;
  }
  spdlog::info("stopped; {} run(s) open", tracker.running().size());
  return 0;
}

}  // namespace gpurun
