#include "store_schema.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <map>
#include <set>

#include "gpurun/util/error.hpp"

namespace gpurun {
namespace {

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  name TEXT NOT NULL,
  user TEXT NOT NULL,
  container_id TEXT NOT NULL,
  image TEXT NOT NULL,
  command TEXT NOT NULL,
  gpus TEXT NOT NULL,            -- "0,1"
  start_ms INTEGER NOT NULL,     -- Unix time in milliseconds
  last_seen_ms INTEGER NOT NULL,
  end_ms INTEGER,                -- NULL while it runs
  gpu_seconds REAL NOT NULL,
  busy_gpu_seconds REAL NOT NULL,
  idle_seconds REAL NOT NULL,
  max_memory_mib REAL NOT NULL,
  ended_by TEXT NOT NULL,
  unmeasured_gpu_seconds REAL NOT NULL DEFAULT 0  -- added later: ensure_current_shape()
);
CREATE INDEX IF NOT EXISTS runs_by_end ON runs(end_ms);
CREATE INDEX IF NOT EXISTS runs_by_user ON runs(user, start_ms);
-- A window of history or usage (since): the runs that ended in it or still run, one user's or all.
CREATE INDEX IF NOT EXISTS runs_by_user_end ON runs(user, end_ms);
-- history is newest first: read in this order, no sort of a year's runs.
CREATE INDEX IF NOT EXISTS runs_by_start ON runs(start_ms);
-- `gpurun report NAME`: a run by its name or the start of its container's ID.
CREATE INDEX IF NOT EXISTS runs_by_name ON runs(name);
CREATE INDEX IF NOT EXISTS runs_by_container ON runs(container_id);
-- Each GPU at each sample (kept 14 days by default). Utilization in tenths of a percent and memory
-- in whole MiB: integers take 1 to 3 bytes where a REAL takes 8.
CREATE TABLE IF NOT EXISTS samples (
  t_ms INTEGER NOT NULL,
  gpu INTEGER NOT NULL,
  util_permille INTEGER,         -- NULL: unknown
  memory_mib INTEGER,
  holders INTEGER NOT NULL,
  PRIMARY KEY (t_ms, gpu)
) WITHOUT ROWID;
-- Each GPU each minute (kept 400 days by default).
CREATE TABLE IF NOT EXISTS gpu_minutes (
  minute INTEGER NOT NULL,       -- Unix time / 60
  gpu INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  util_samples INTEGER NOT NULL,
  util_sum_permille INTEGER NOT NULL,
  util_max_permille INTEGER NOT NULL,
  idle_samples INTEGER NOT NULL,
  memory_max_mib INTEGER NOT NULL,
  holders_max INTEGER NOT NULL,
  PRIMARY KEY (minute, gpu)
) WITHOUT ROWID;
)";

// Thrown for a file SQLite opens but finds damaged.
constexpr int kDamaged = SQLITE_CORRUPT;

// The columns this gpurund writes, by table.
const std::map<std::string, std::set<std::string>>& written_columns() {
  static const std::map<std::string, std::set<std::string>> columns{
      {"runs",
       {"id", "key", "name", "user", "container_id", "image", "command", "gpus", "start_ms", "last_seen_ms", "end_ms",
        "gpu_seconds", "busy_gpu_seconds", "idle_seconds", "max_memory_mib", "ended_by", "unmeasured_gpu_seconds"}},
      {"samples", {"t_ms", "gpu", "util_permille", "memory_mib", "holders"}},
      {"gpu_minutes",
       {"minute", "gpu", "samples", "util_samples", "util_sum_permille", "util_max_permille", "idle_samples",
        "memory_max_mib", "holders_max"}}};
  return columns;
}

// Throws (as a file that cannot be used) where a table lacks a column this gpurund writes, or has
// one it must fill and does not know (another program's table, or one changed by hand): every
// write would fail, and a store that takes no write loses all a run of the service records.
void check_columns(SQLite::Database& db) {
  for (const auto& [table, columns] : written_columns()) {
    std::set<std::string> missing = columns;
    missing.erase("unmeasured_gpu_seconds");  // added at the first write (ensure_current_shape)
    SQLite::Statement info(db, "SELECT name, \"notnull\", dflt_value IS NULL, pk FROM pragma_table_info(?)");
    info.bind(1, table);
    while (info.executeStep()) {
      const std::string name = info.getColumn(0).getString();
      missing.erase(name);
      if (!columns.contains(name) && info.getColumn(1).getInt() != 0 && info.getColumn(2).getInt() != 0 &&
          info.getColumn(3).getInt() == 0)
        throw SQLite::Exception(fmt::format("its table {} has a column {} that gpurund does not write", table, name),
                                SQLITE_ERROR);
    }
    if (!missing.empty())
      throw SQLite::Exception(fmt::format("its table {} lacks {}", table, fmt::join(missing, ", ")), SQLITE_ERROR);
  }
}

}  // namespace

const char* runs_query(bool windowed, bool one_user) {
  // One text per case: "(?2 = '' OR user = ?2)" kept SQLite from runs_by_user, and a user's runs
  // were found by reading everyone's. Without a window, newest first from an index: no sort. With
  // one, the runs that ended in it or still run, each found through an index and then sorted:
  // "end_ms IS NULL OR end_ms >= ?1" in one WHERE had SQLite read every run ever stored.
  static constexpr const char* kAll = "SELECT * FROM runs WHERE ?2 = '' ORDER BY start_ms DESC, id DESC LIMIT ?3";
  static constexpr const char* kUsers = "SELECT * FROM runs WHERE user = ?2 ORDER BY start_ms DESC, id DESC LIMIT ?3";
  static constexpr const char* kAllSince = R"(
    SELECT * FROM runs WHERE ?2 = '' AND id IN (
      SELECT id FROM runs WHERE end_ms >= ?1 UNION ALL SELECT id FROM runs WHERE end_ms IS NULL)
    ORDER BY start_ms DESC, id DESC LIMIT ?3)";
  static constexpr const char* kUsersSince = R"(
    SELECT * FROM runs WHERE id IN (
      SELECT id FROM runs WHERE user = ?2 AND end_ms >= ?1
      UNION ALL SELECT id FROM runs WHERE user = ?2 AND end_ms IS NULL)
    ORDER BY start_ms DESC, id DESC LIMIT ?3)";
  return windowed ? (one_user ? kUsersSince : kAllSince) : (one_user ? kUsers : kAll);
}

std::unique_ptr<SQLite::Database> open_store_database(const std::string& path) {
  auto db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db->setBusyTimeout(5000);  // another process holding it (sqlite3 in a shell) is waited for
  db->exec("PRAGMA journal_mode=WAL");
  // WAL: a crash of gpurund (kill -9) loses nothing committed; a crash of the machine, at most the
  // commits since the last checkpoint; the file is never left damaged.
  db->exec("PRAGMA synchronous=NORMAL");
  // The log back to 64 MiB once a checkpoint has emptied it: readers on the page kept it from being
  // reset, and it stayed as large as it ever grew.
  db->exec("PRAGMA journal_size_limit=67108864");
  if (db->execAndGet("PRAGMA quick_check").getString() != "ok")
    throw SQLite::Exception("the database is damaged", kDamaged);
  // A newer gpurund's store is refused, not moved aside: starting that gpurund again undoes a
  // downgrade, and this one would write rows its tables may not mean.
  if (const int version = db->execAndGet("PRAGMA user_version").getInt(); version > kStoreVersion)
    throw Error(
        fmt::format("{} was written by a newer gpurund (store version {}; this one writes {}): start that "
                    "gpurund again, or move the file away to record afresh",
                    path, version, kStoreVersion));
  db->exec(kSchema);
  check_columns(*db);
  return db;
}

bool file_is_unusable(const SQLite::Exception& e) {
  const int code = e.getErrorCode();
  return code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_ERROR;
}

}  // namespace gpurun
