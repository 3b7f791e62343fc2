// The database at its default location on the host (docs/protocol.md §H1.8, §H4.5): before the
// daemon opens a database that LoadConfig defaulted onto the rootfs (Config::db_adopt_from set),
// the one at the old default (inside the container) is adopted once, and a file there that is not
// a sedna-lc database is never opened as ours. docs/deploy.md says what operators see.
#pragma once

#include <string>

#include "app/cluster/config.h"
#include "core/status.h"

namespace sedna::app {

// What is at a database path (with its -wal file).
enum class DbKind {
  kAbsent,
  kEmpty,      // a zero-length file, or SQLite without tables
  kSednaLc,    // SQLite with sedna-lc's lc_state table
  kForeign,    // SQLite with tables but no lc_state: e.g. the Go LC's database.db
  kNotSqlite,  // not a SQLite database
};
struct DbProbe {
  DbKind kind = DbKind::kAbsent;
  std::string tables;  // kForeign: the table names, comma-separated
};
// Reads `path` read-only (SQLite never writes to it or creates it); errors name the path.
Result<DbProbe> ProbeDatabase(const std::string& path);

// With cfg.db_adopt_from empty: nothing, "". Otherwise the new database's directory is made (an
// error naming it and SEDNA_DB_PATH when it cannot be) and, holding both databases' <db>.lock:
//  - cfg.db_path holds something other than nothing or an empty database or sedna-lc's: error
//    (it is never opened as ours);
//  - the old path has no <old>.lock beside it (every sedna-lc daemon makes one): it is never
//    opened (the Go LC's database.db may be there), a note when a file is there;
//  - the old path holds no sedna-lc database: nothing (a note when it holds something else);
//  - both hold one: error naming both paths and what to do, unless the new one is a byte copy of
//    the old (an adoption that stopped before removing the old one), which is then finished;
//  - else the old database is checkpointed and moved to cfg.db_path with its -wal, -intake and
//    -sent files and, when cfg.spool_adopt_from is set, its spool directory to cfg.spool_dir:
//    staged beside the new database (hard links, or copies fsynced across filesystems), renamed
//    into place with the database last, then the old files are removed. A crash at any point
//    leaves either the old database complete (the next start adopts it again) or the new one
//    (and maybe a byte-equal old one, which the next start removes).
// Returns the line to log. `copy`: copy even where a hard link would do (tests).
Result<std::string> AdoptOldDatabase(const Config& cfg, bool copy = false);

}  // namespace sedna::app
