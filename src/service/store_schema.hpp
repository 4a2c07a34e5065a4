// The store's tables: their shape, its version, and opening a file as gpurund's store.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <memory>
#include <string>

namespace gpurun {

// The store's shape, kept as PRAGMA user_version from the first write on (0: every store before it
// was kept). Raise it with a change an older gpurund would write wrongly or lose.
constexpr int kStoreVersion = 1;

// Opens (or creates) `path` as the store: WAL, checked, its tables made. Throws SQLite::Exception
// for a file that cannot be used (file_is_unusable) or not for the moment, and Error for a store a
// newer gpurund wrote (left as it is).
std::unique_ptr<SQLite::Database> open_store_database(const std::string& path);

// The query of the runs, newest first, at most ?3 of them (-1: all): those that ended at ?1 (Unix
// ms) or later or still run where `windowed`, user ?2's where `one_user` (?2 '' otherwise).
const char* runs_query(bool windowed, bool one_user);

// Whether a failure to open says the file itself is unusable (not a database, damaged, another
// program's tables), rather than the moment (a full disk, a lock held, an I/O error), after which
// the same file opens again and must still be there, its write-ahead log with it.
bool file_is_unusable(const SQLite::Exception& e);

}  // namespace gpurun
