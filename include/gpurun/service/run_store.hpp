#pragma once
// Where the gpurun service keeps its runs and GPU history: one SQLite database in WAL mode in the
// state directory (SQLiteCpp over Debian's libsqlite3). Run records are kept for ever, raw GPU
// samples and one-minute rows as long as the retention settings say (pruned in small batches);
// everything of one flush is written in one transaction (the service flushes every few samples). A file that is not a
// database, or a damaged one, is moved aside with a message and a fresh one started: the service keeps recording either
// way. Only gpurund and the tests link this (the gpurun CLI loads no shared library at start).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpurun/history/gpu_minutes.hpp"
#include "gpurun/history/run_tracker.hpp"

namespace SQLite {
class Database;
}

namespace gpurun {

// Which runs `gpurun history` asks for.
struct RunQuery {
  std::optional<WallTime> since;          // runs still going at or after this time
  std::string user;                       // "": everyone's
  std::optional<std::size_t> limit = {};  // the newest this many only
};

// Whether `name` may be the start of a container's ID (4 to 64 lower-case hex digits), as `gpurun
// report` reads it: for a run stored and for one still going alike.
bool names_container_id_prefix(const std::string& name);

// Moves the store at `path` (and its WAL and shared-memory files) aside to PATH.unusable-TIME, for
// a look, and returns that name; Error where it cannot be moved.
std::string move_store_aside(const std::string& path, const std::string& why);

class RunStore {
 public:
  // Opens (or creates) the database at `path`. `moved_aside` receives the new name of a file that
  // was not a usable database, where one was moved. Throws Error when no database can be opened.
  explicit RunStore(const std::string& path, std::string* moved_aside = nullptr);
  // A connection of its own for queries, read-only, to the database another RunStore writes (WAL:
  // it reads the last commit while the writer goes on). Throws Error when it cannot be opened.
  static std::unique_ptr<RunStore> reader(const std::string& path);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  // Writes the open runs as they stand and the ended ones, in one transaction; with them the raw
  // GPU samples and the minutes (a minute already there is replaced: it is written again as it grows).
  void save(const std::vector<RunRecord>& running, const std::vector<RunRecord>& ended,
            const std::vector<GpuSampleRow>& samples = {}, const std::vector<GpuMinute>& minutes = {});

  // Deletes at most `batch` sample times older than `samples_before` and `batch` minutes older than
  // `minutes_before`; returns how many rows went. Called at each flush, so a backlog drains in steps
  // that never stall the sampling.
  std::size_t prune(WallTime samples_before, WallTime minutes_before, int batch = 500);

  std::vector<GpuSampleRow> gpu_samples(WallTime since) const;              // oldest first
  void each_gpu_sample(WallTime since, const GpuSampleVisit& visit) const;  // the same, one at a time
  std::vector<GpuMinute> gpu_minutes(WallTime since) const;                 // oldest first
  std::optional<GpuMinute> gpu_minute(std::int64_t minute, int gpu) const;  // one row, for a minute reopened

  // Since when the site's rules `fingerprint` stands for have been in force, where the service last
  // ran under them; nullopt where it ran under others (or none kept), which are replaced by these
  // from `now`. Throws (std::exception) where they cannot be written: a full disk.
  std::optional<WallTime> rules_in_force(const std::string& fingerprint, WallTime now);

  std::vector<RunRecord> open_runs() const;                  // those without an end, for RunTracker::resume
  std::int64_t last_id() const;                              // 0 for an empty store
  std::vector<RunRecord> runs(const RunQuery& query) const;  // newest first
  // The same runs handed to `visit` one at a time, none kept: a sum over a year of runs (`gpurun
  // usage`) holds one run in memory, not all of them.
  void each_run(const RunQuery& query, const std::function<void(const RunRecord&)>& visit) const;
  // The newest run `name` names: its id, its name, or its container's id (a prefix of 4 or more:
  // names_container_id_prefix).
  // `user`: only that user's runs ("" for anyone's).
  std::optional<RunRecord> find(const std::string& name, const std::string& user = "") const;

 private:
  RunStore() = default;
  void ensure_current_shape();  // an older store: runs.unmeasured_gpu_seconds added, its version written
  std::unique_ptr<SQLite::Database> db_;
  bool has_current_shape_ = false;
};

}  // namespace gpurun
