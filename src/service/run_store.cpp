#include "gpurun/service/run_store.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

#include "gpurun/history/time_text.hpp"
#include "gpurun/util/error.hpp"
#include "gpurun/util/text.hpp"
#include "store_schema.hpp"

namespace gpurun {
namespace {

std::int64_t permille(double percent) { return std::llround(percent * 10); }

WallTime from_ms(std::int64_t ms) { return WallTime{} + std::chrono::milliseconds(ms); }

std::vector<int> gpu_list(const std::string& text) {
  std::vector<int> gpus;
  for (const std::string_view word : text::split(text, ','))
    if (const auto value = text::parse_integer(word)) gpus.push_back(static_cast<int>(*value));
  return gpus;
}

// A row of `SELECT * FROM runs`, by column index (a name lookup per column per row costs more
// than the rest of reading a year's runs).
RunRecord run_from(const SQLite::Statement& row) {
  RunRecord run;
  run.id = row.getColumn(0).getInt64();
  run.key = row.getColumn(1).getString();
  run.name = row.getColumn(2).getString();
  run.user = row.getColumn(3).getString();
  run.container_id = row.getColumn(4).getString();
  run.image = row.getColumn(5).getString();
  run.command = row.getColumn(6).getString();
  run.gpus = gpu_list(row.getColumn(7).getString());
  run.start = from_ms(row.getColumn(8).getInt64());
  run.last_seen = from_ms(row.getColumn(9).getInt64());
  if (!row.getColumn(10).isNull()) run.end = from_ms(row.getColumn(10).getInt64());
  run.gpu_seconds = row.getColumn(11).getDouble();
  run.busy_gpu_seconds = row.getColumn(12).getDouble();
  run.idle_seconds = row.getColumn(13).getDouble();
  run.max_memory_mib = row.getColumn(14).getDouble();
  run.ended_by = row.getColumn(15).getString();
  // A store no newer gpurund has written yet lacks the column: none unmeasured, as before it.
  if (row.getColumnCount() > 16) run.unmeasured_gpu_seconds = row.getColumn(16).getDouble();
  return run;
}

// A row of `SELECT * FROM gpu_minutes` (permilles back to percent).
GpuMinute minute_from(const SQLite::Statement& row) {
  return {.minute = row.getColumn(0).getInt64(),
          .gpu = row.getColumn(1).getInt(),
          .samples = row.getColumn(2).getInt(),
          .utilization_samples = row.getColumn(3).getInt(),
          .utilization_sum = row.getColumn(4).getDouble() / 10,
          .utilization_max = row.getColumn(5).getDouble() / 10,
          .idle_samples = row.getColumn(6).getInt(),
          .memory_max_mib = static_cast<double>(row.getColumn(7).getInt64()),
          .holders_max = row.getColumn(8).getInt()};
}

}  // namespace

std::string move_store_aside(const std::string& path, const std::string& why) {
  std::string aside = fmt::format("{}.unusable-{}", path, unix_ms(std::chrono::system_clock::now()));
  std::error_code error;
  std::filesystem::rename(path, aside, error);
  if (error) throw Error(fmt::format("{} cannot be used ({}) nor moved aside: {}", path, why, error.message()));
  for (const char* suffix : {"-wal", "-shm"})
    if (std::filesystem::exists(path + suffix, error)) std::filesystem::rename(path + suffix, aside + suffix, error);
  return aside;
}

RunStore::RunStore(const std::string& path, std::string* moved_aside) {
  try {
    db_ = open_store_database(path);
    return;
  } catch (const SQLite::Exception& e) {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) throw Error(fmt::format("cannot create {}: {}", path, e.what()));
    if (!file_is_unusable(e))
      throw Error(
          fmt::format("cannot open {}: {}. The file is left as it is: once the disk has room or "
                      "what holds it lets go, gpurund starts on it again",
                      path, e.what()));
    // Not a database, or a damaged one: kept for a look (with its log, where SQLite left one), and
    // recording starts afresh.
    const std::string aside = move_store_aside(path, e.what());
    spdlog::error("{} could not be used ({}): moved aside to {}; starting a fresh one", path, e.what(), aside);
    if (moved_aside != nullptr) *moved_aside = aside;
  }
  try {
    db_ = open_store_database(path);
  } catch (const SQLite::Exception& e) {
    throw Error(fmt::format("cannot create {}: {}", path, e.what()));
  }
}

std::unique_ptr<RunStore> RunStore::reader(const std::string& path) {
  std::unique_ptr<RunStore> store(new RunStore());
  try {
    store->db_ = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY);
    store->db_->setBusyTimeout(5000);
  } catch (const SQLite::Exception& e) {
    throw Error(fmt::format("cannot read {}: {}", path, e.what()));
  }
  return store;
}

RunStore::~RunStore() = default;

void RunStore::save(const std::vector<RunRecord>& running, const std::vector<RunRecord>& ended,
                    const std::vector<GpuSampleRow>& samples, const std::vector<GpuMinute>& minutes) {
  ensure_current_shape();
  SQLite::Transaction transaction(*db_);
  SQLite::Statement upsert(*db_, R"(
    INSERT INTO runs (id, key, name, user, container_id, image, command, gpus, start_ms, last_seen_ms, end_ms,
                      gpu_seconds, busy_gpu_seconds, idle_seconds, max_memory_mib, ended_by, unmeasured_gpu_seconds)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT(id) DO UPDATE SET
      name = excluded.name, user = excluded.user, image = excluded.image, command = excluded.command,
      gpus = excluded.gpus, last_seen_ms = excluded.last_seen_ms,
      end_ms = excluded.end_ms, gpu_seconds = excluded.gpu_seconds, busy_gpu_seconds = excluded.busy_gpu_seconds,
      idle_seconds = excluded.idle_seconds, max_memory_mib = excluded.max_memory_mib, ended_by = excluded.ended_by,
      unmeasured_gpu_seconds = excluded.unmeasured_gpu_seconds)");
  const auto write = [&](const RunRecord& run) {
    upsert.bind(1, run.id);
    upsert.bind(2, run.key);
    upsert.bind(3, run.name);
    upsert.bind(4, run.user);
    upsert.bind(5, run.container_id);
    upsert.bind(6, run.image);
    upsert.bind(7, run.command);
    upsert.bind(8, fmt::format("{}", fmt::join(run.gpus, ",")));
    upsert.bind(9, unix_ms(run.start));
    upsert.bind(10, unix_ms(run.last_seen));
    if (run.end)
      upsert.bind(11, unix_ms(*run.end));
    else
      upsert.bind(11);  // NULL
    upsert.bind(12, run.gpu_seconds);
    upsert.bind(13, run.busy_gpu_seconds);
    upsert.bind(14, run.idle_seconds);
    upsert.bind(15, run.max_memory_mib);
    upsert.bind(16, run.ended_by);
    upsert.bind(17, run.unmeasured_gpu_seconds);
    upsert.exec();
    upsert.reset();
  };
  for (const RunRecord& run : running) write(run);
  for (const RunRecord& run : ended) write(run);

  SQLite::Statement sample(*db_, "INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?)");
  for (const GpuSampleRow& row : samples) {
    sample.bind(1, unix_ms(row.when));
    sample.bind(2, row.gpu);
    if (row.utilization_percent)
      sample.bind(3, permille(*row.utilization_percent));
    else
      sample.bind(3);
    if (row.memory_used_mib)
      sample.bind(4, static_cast<std::int64_t>(std::llround(*row.memory_used_mib)));
    else
      sample.bind(4);
    sample.bind(5, row.holders);
    sample.exec();
    sample.reset();
  }
  SQLite::Statement minute(*db_, "INSERT OR REPLACE INTO gpu_minutes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const GpuMinute& m : minutes) {
    minute.bind(1, m.minute);
    minute.bind(2, m.gpu);
    minute.bind(3, m.samples);
    minute.bind(4, m.utilization_samples);
    minute.bind(5, permille(m.utilization_sum));
    minute.bind(6, permille(m.utilization_max));
    minute.bind(7, m.idle_samples);
    minute.bind(8, static_cast<std::int64_t>(std::llround(m.memory_max_mib)));
    minute.bind(9, m.holders_max);
    minute.exec();
    minute.reset();
  }
  transaction.commit();
}

std::size_t RunStore::prune(WallTime samples_before, WallTime minutes_before, int batch) {
  SQLite::Transaction transaction(*db_);
  // The oldest `batch` distinct times (or minutes) before the cut: their rows, all GPUs.
  SQLite::Statement samples(*db_, R"(
    DELETE FROM samples WHERE t_ms IN (SELECT DISTINCT t_ms FROM samples WHERE t_ms < ? ORDER BY t_ms LIMIT ?))");
  samples.bind(1, unix_ms(samples_before));
  samples.bind(2, batch);
  std::size_t deleted = static_cast<std::size_t>(samples.exec());
  SQLite::Statement minutes(*db_, R"(
    DELETE FROM gpu_minutes WHERE minute IN
      (SELECT DISTINCT minute FROM gpu_minutes WHERE minute < ? ORDER BY minute LIMIT ?))");
  minutes.bind(1, static_cast<std::int64_t>(
                      std::chrono::duration_cast<std::chrono::minutes>(minutes_before.time_since_epoch()).count()));
  minutes.bind(2, batch);
  deleted += static_cast<std::size_t>(minutes.exec());
  transaction.commit();
  return deleted;
}

std::vector<GpuSampleRow> RunStore::gpu_samples(WallTime since) const {
  std::vector<GpuSampleRow> rows;
  each_gpu_sample(since, [&rows](const GpuSampleRow& row) { rows.push_back(row); });
  return rows;
}

void RunStore::each_gpu_sample(WallTime since, const GpuSampleVisit& visit) const {
  SQLite::Statement select(*db_, "SELECT * FROM samples WHERE t_ms >= ? ORDER BY t_ms, gpu");
  select.bind(1, unix_ms(since));
  while (select.executeStep()) {
    GpuSampleRow row;
    row.when = from_ms(select.getColumn(0).getInt64());
    row.gpu = select.getColumn(1).getInt();
    if (!select.getColumn(2).isNull()) row.utilization_percent = select.getColumn(2).getDouble() / 10;
    if (!select.getColumn(3).isNull()) row.memory_used_mib = static_cast<double>(select.getColumn(3).getInt64());
    row.holders = select.getColumn(4).getInt();
    visit(row);
  }
}

std::vector<GpuMinute> RunStore::gpu_minutes(WallTime since) const {
  SQLite::Statement select(*db_, "SELECT * FROM gpu_minutes WHERE minute >= ? ORDER BY minute, gpu");
  select.bind(
      1, static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::minutes>(since.time_since_epoch()).count()));
  std::vector<GpuMinute> rows;
  while (select.executeStep()) rows.push_back(minute_from(select));
  return rows;
}

std::optional<GpuMinute> RunStore::gpu_minute(std::int64_t minute, int gpu) const {
  SQLite::Statement select(*db_, "SELECT * FROM gpu_minutes WHERE minute = ? AND gpu = ?");
  select.bind(1, minute);
  select.bind(2, gpu);
  if (!select.executeStep()) return std::nullopt;
  return minute_from(select);
}

void RunStore::ensure_current_shape() {
  // A store an older gpurund made has no such column, nor its version. Both written at the first
  // write, not at the open: a store opened on a full disk must still open (as rules_in_force's table).
  if (has_current_shape_) return;
  if (db_->execAndGet("SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'unmeasured_gpu_seconds'")
          .getInt() == 0)
    db_->exec("ALTER TABLE runs ADD COLUMN unmeasured_gpu_seconds REAL NOT NULL DEFAULT 0");
  if (db_->execAndGet("PRAGMA user_version").getInt() < kStoreVersion)
    db_->exec(fmt::format("PRAGMA user_version = {}", kStoreVersion));
  has_current_shape_ = true;
}

std::optional<WallTime> RunStore::rules_in_force(const std::string& fingerprint, WallTime now) {
  // The site's rules the service last ran under, and since when. Made here, not with the schema:
  // a store opened on a full disk must still open (its samples wait in memory for room).
  db_->exec(R"(CREATE TABLE IF NOT EXISTS rules_in_force (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    since_ms INTEGER NOT NULL
  ))");
  SQLite::Statement kept(*db_, "SELECT fingerprint, since_ms FROM rules_in_force WHERE name = 'site'");
  if (kept.executeStep() && kept.getColumn(0).getString() == fingerprint) return from_ms(kept.getColumn(1).getInt64());
  SQLite::Statement write(*db_, "INSERT OR REPLACE INTO rules_in_force VALUES ('site', ?, ?)");
  write.bind(1, fingerprint);
  write.bind(2, unix_ms(now));
  write.exec();
  return std::nullopt;
}

std::vector<RunRecord> RunStore::open_runs() const {
  SQLite::Statement query(*db_, "SELECT * FROM runs WHERE end_ms IS NULL ORDER BY id");
  std::vector<RunRecord> open;
  while (query.executeStep()) open.push_back(run_from(query));
  return open;
}

std::int64_t RunStore::last_id() const { return db_->execAndGet("SELECT COALESCE(MAX(id), 0) FROM runs").getInt64(); }

std::vector<RunRecord> RunStore::runs(const RunQuery& query) const {
  std::vector<RunRecord> found;
  each_run(query, [&](const RunRecord& run) { found.push_back(run); });
  return found;
}

void RunStore::each_run(const RunQuery& query, const std::function<void(const RunRecord&)>& visit) const {
  const bool mine = !query.user.empty();
  SQLite::Statement select(*db_, runs_query(query.since.has_value(), mine));
  if (query.since) select.bind(1, unix_ms(*query.since));
  select.bind(2, query.user);
  select.bind(3, query.limit ? static_cast<std::int64_t>(*query.limit) : std::int64_t{-1});  // -1: no limit
  while (select.executeStep()) visit(run_from(select));
}

bool names_container_id_prefix(const std::string& name) {
  return name.size() >= 4 && name.size() <= 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::optional<RunRecord> RunStore::find(const std::string& name, const std::string& user) const {
  // By id, name or the start of a container's ID, each through an index: a range of IDs from the
  // prefix to the prefix followed by 'g' (after every hex digit) is the IDs it begins. The run of
  // that id comes first: from run 1000 on, an id is also a prefix of some containers' IDs.
  SQLite::Statement select(*db_, R"(
    SELECT * FROM runs
    WHERE (id = ?1 OR name = ?2 OR (container_id >= ?4 AND container_id < ?5))
      AND (?3 = '' OR user = ?3)
    ORDER BY id = ?1 DESC, start_ms DESC, id DESC LIMIT 1)");
  const auto id = text::parse_integer(name);
  const bool id_prefix = names_container_id_prefix(name);
  select.bind(1, static_cast<std::int64_t>(id.value_or(-1)));
  select.bind(2, name);
  select.bind(3, user);
  select.bind(4, id_prefix ? name : std::string());  // none: the empty range
  select.bind(5, id_prefix ? name + "g" : std::string());
  if (!select.executeStep()) return std::nullopt;
  return run_from(select);
}

}  // namespace gpurun
