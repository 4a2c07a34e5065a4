#include "gpurun/service/recorder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
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
#include "ended_containers.hpp"
#include "gpurun/engine/gpu_process_owner.hpp"
#include "gpurun/history/gpu_minutes.hpp"
#include "gpurun/history/run_json.hpp"
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
#include "pending_writes.hpp"
#include "policy_rules.hpp"
#include "store_schema.hpp"
#include "trouble.hpp"

namespace gpurun {
namespace {

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
  if (section.keep_ended_containers_days)
    settings.keep_ended_containers = std::chrono::seconds(std::llround(*section.keep_ended_containers_days * 86400));
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
  if (options.policy.idle_policy) served.metrics.idle_exempt_containers = options.policy.idle_policy->exempt_containers;
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
  Trouble sample_trouble("the sample");
  Trouble job_map_trouble("DCGM's job mapping");
  std::optional<DcgmJobMap> job_map;
  if (!settings.dcgm_job_mapping_dir.empty()) {
    job_map.emplace(settings.dcgm_job_mapping_dir);
    spdlog::info("DCGM's job mapping files in {}", settings.dcgm_job_mapping_dir);
  }
  PendingWrites pending(store, served.mutex, {.samples = keep_samples, .minutes = settings.keep_minutes});
  MinuteRollup rollup(settings.tracker.idle_threshold_percent,
                      [&pending](std::int64_t minute, int gpu) { return pending.kept_minute(minute, gpu); });
  const auto flush = [&] { pending.flush(tracker.running(), rollup); };
  EndedContainerSweeper sweeper(settings.keep_ended_containers);

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
      // A MIG instance NVML failed to read (for a moment, or while the GPU is reconfigured) holds
      // its holders' runs, as a GPU left out does: not ended and begun again as new ones.
      gpus_unknown.insert(snapshot.partly_read.begin(), snapshot.partly_read.end());
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
      pending.add_samples(rows);
      const std::vector<RunRecord> before = tracker.running();
      std::vector<RunRecord> ended = tracker.observe(sample);
      rules.ended(ended);
      {
        const std::lock_guard hold(served.mutex);
        credit_users(before, tracker.running(), ended, served.metrics.user_seconds);
        for (RunRecord& run : ended) {
          spdlog::info("run {} ended: {} ({}), {:.0f} GPU-s", run.id, text::printable(with_programs_only(run).name, 80),
                       text::printable(run.user, 32), run.gpu_seconds);
          pending.add_ended(std::move(run));
        }
        served.fresh = tracker.running();
        served.fresh.insert(served.fresh.end(), pending.ended().begin(), pending.ended().end());
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
      started = tracker.running().size() + pending.ended().size() > before.size();
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
      // After the ended runs are safe in `pending`, outside the lock: a stop takes seconds, and may
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
    if (!stop.requested() && (started || !pending.ended().empty() ||
                              std::chrono::steady_clock::now() - pending.last_flush() >= settings.flush_every))
      flush();
    if (!pending.damaged().empty()) break;
    if (machine.engine && !options.ignore_containers && !stop.requested())
      sweeper.sweep_if_due(*machine.engine, timeout, [&stop] { return stop.requested(); });
    if (std::chrono::steady_clock::now() > next) next = std::chrono::steady_clock::now();  // never catch up
    sleep_until(next, stop);
  }
  if (pending.damaged().empty()) flush();
  if (job_map) {
    try {
      job_map->clear();
    } catch (const Error& e) {
      spdlog::warn("{}", e.what());
    }
  }
  if (const std::string& store_damaged = pending.damaged(); !store_damaged.empty()) {
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
        database, store_damaged, where, tracker.running().size(), pending.ended().size());
    return 1;
  }
  spdlog::info("stopped; {} run(s) open", tracker.running().size());
  return 0;
}

}  // namespace gpurun
