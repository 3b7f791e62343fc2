#include "adapters/store/store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <system_error>

#include "adapters/clock/system_clock.h"
#include "adapters/store/sent_mark.h"
#include "adapters/store/wal_checkpointer.h"

namespace sedna::store {

namespace {

// GORM's DDL for `Resource` (docs/protocol.md §P9.2), byte for byte as sqlite_master stores it.
constexpr const char* kResourcesDdl =
    "CREATE TABLE `resources` (`id` integer,`created_at` datetime,`updated_at` datetime,"
    "`deleted_at` datetime,`name` text UNIQUE,`type_meta` text,`object_meta` text,`spec` text,"
    "PRIMARY KEY (`id`))";
constexpr const char* kResourcesIndexDdl =
    "CREATE INDEX `idx_resources_deleted_at` ON `resources`(`deleted_at`)";
// A rowid table: a job's record (1-4 KB of JSON) is kept in its leaf page. Until session 36 the
// table was WITHOUT ROWID, whose b-tree keeps at most ~1000 bytes of a row in the leaf: every
// record spilled to an overflow page, and every update of it wrote the leaf, a new overflow page,
// the freelist and page 1 (docs/benchmarks.md, session 36). The columns, the key and every
// statement are the same in both layouts: an earlier sedna-lc reads and writes this one as it did
// its own, so the layout needs no schema version of its own; Open rebuilds an older table once.
constexpr const char* kStateColumns =
    " (scope TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, updated_at TEXT NOT NULL, "
    "PRIMARY KEY (scope, key))";
constexpr const char* kStateCopyAndSwap =
    "; INSERT INTO lc_state_rebuilt (scope, key, value, updated_at) "
    "SELECT scope, key, value, updated_at FROM lc_state; "
    "DROP TABLE lc_state; "
    "ALTER TABLE lc_state_rebuilt RENAME TO lc_state";
constexpr const char* kOutboxDdl =
    "CREATE TABLE IF NOT EXISTS lc_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "frame TEXT NOT NULL, created_at TEXT NOT NULL)";

// Transact() deletes acknowledged outbox entries once this many are pending.
constexpr int64_t kDeleteBatch = 64;
// The in-memory outbox tail (Impl::tail) keeps at most this much.
constexpr size_t kTailMaxEntries = 256;
constexpr int64_t kTailMaxBytes = 1 << 20;

// Columns of `resources` this code reads or writes; an adopted table must have all of them.
constexpr std::array<const char*, 8> kResourceColumns = {
    "id", "created_at", "updated_at", "deleted_at", "name", "type_meta", "object_meta", "spec"};

enum StmtId {
  kBegin,
  kCommit,
  kRollback,
  kResourceUpdate,
  kResourceInsert,
  kResourceDelete,
  kStatePut,
  kStateDelete,
  kResourcesLoad,
  kStateGet,
  kStatesLoad,
  kOutboxPeek,
  kOutboxDeleteThrough,
  kOutboxDeleteCounted,
  kOutboxMaxId,
  kOutboxDeleteAll,
  kStmtCount,
};

constexpr std::array<const char*, kStmtCount> kSql = {
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    // ?1 now, ?2 type_meta, ?3 object_meta, ?4 spec, ?5 name (shared by update and insert).
    "UPDATE resources SET updated_at = ?1, deleted_at = NULL, type_meta = ?2, object_meta = ?3, "
    "spec = ?4 WHERE name = ?5",
    "INSERT INTO resources (created_at, updated_at, name, type_meta, object_meta, spec) "
    "VALUES (?1, ?1, ?5, ?2, ?3, ?4)",
    "DELETE FROM resources WHERE name = ?1",
    "INSERT INTO lc_state (scope, key, value, updated_at) VALUES (?1, ?2, ?3, ?4) "
    "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at",
    "DELETE FROM lc_state WHERE scope = ?1 AND key = ?2",
    "SELECT name, type_meta, object_meta, spec FROM resources WHERE deleted_at IS NULL "
    "ORDER BY id",
    "SELECT value FROM lc_state WHERE scope = ?1 AND key = ?2",
    "SELECT key, value FROM lc_state WHERE scope = ?1 ORDER BY key",
    "SELECT id, frame FROM lc_outbox WHERE id > ?2 ORDER BY id LIMIT ?1",
    "DELETE FROM lc_outbox WHERE id <= ?1 RETURNING length(CAST(frame AS BLOB))",
    "DELETE FROM lc_outbox WHERE id <= ?1",
    "SELECT max(id) FROM lc_outbox",
    // No WHERE clause: SQLite's truncate optimization frees the table's pages at once instead of
    // deleting row by row (~4k instructions a row, a few % of a forwarded report's).
    "DELETE FROM lc_outbox",
};

// The outbox's entry count and bytes, read from the table.
constexpr const char* kOutboxStatsSql =
    "SELECT count(*) || ' ' || coalesce(sum(length(CAST(frame AS BLOB))), 0) FROM lc_outbox";

// Process-wide SQLite settings, before SQLite's first use in the process if this is it: no
// memory statistics (nothing reads them; keeping them takes a global mutex on every allocation
// SQLite makes), and no initial bulk allocation for each connection's page cache (20 pages, ~87 KB
// that would stay resident): every cached page is its own allocation, so Store::ReleaseMemory
// gives them all back. If SQLite was already initialised, the calls fail harmlessly and nothing
// changes.
void ConfigureSqliteOnce() {
  static const bool configured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0);
    return true;
  }();
  (void)configured;
}

// `clock`'s now in UTC, formatted as mattn/go-sqlite3 writes GORM's time.Time values
// ("2006-01-02 15:04:05.999999999-07:00": fraction without trailing zeros, omitted when zero).
std::string GormNow(const core::Clock* clock) {
  const auto now = (clock ? *clock : clock::System()).Now();
  const auto ns_total =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ns_total / 1000000000);
  long ns = static_cast<long>(ns_total % 1000000000);
  if (ns < 0) {
    ns += 1000000000;
    --secs;
  }
  // The date and time of day change once a second; every row written in it shares them.
  thread_local std::time_t cached_secs = -1;
  thread_local std::string cached_text;
  if (secs != cached_secs || cached_text.empty()) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    cached_text.assign(buf, std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm));
    cached_secs = secs;
  }
  std::string out;
  out.reserve(cached_text.size() + 16);
  out = cached_text;
  if (ns != 0) {
    char frac[10];
    frac[0] = '.';
    for (int i = 9; i >= 1; --i, ns /= 10) frac[i] = static_cast<char>('0' + ns % 10);
    int len = 10;
    while (frac[len - 1] == '0') --len;
    out.append(frac, static_cast<size_t>(len));
  }
  out += "+00:00";
  return out;
}

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  int n = sqlite3_column_bytes(s, i);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

// Resets a cached statement when leaving scope, so no statement keeps a read snapshot open and no
// binding points at a dead string.
class StmtReset {
 public:
  explicit StmtReset(sqlite3_stmt* s) : s_(s) {}
  ~StmtReset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  StmtReset(const StmtReset&) = delete;
  StmtReset& operator=(const StmtReset&) = delete;

 private:
  sqlite3_stmt* s_;
};

}  // namespace

struct Store::Impl {
  const std::string& path;
  sqlite3* db = nullptr;
  bool in_tx = false;
  OutboxStats stats;
  int64_t acked_through = 0;       // OutboxAck: entries <= this were written upstream
  uint64_t identity = 0;           // see Store::identity(); set with the sent mark
  std::unique_ptr<SentMark> sent;  // acked_through, surviving a crash (null when read-only)
  OutboxStats acked;               // acknowledged (OutboxAck) since the last delete
  // Every entry not deleted up to acked_through was acknowledged by this process, so `acked` is
  // what deleting them removes (true once Open has deleted what a previous run sent, counting it
  // with RETURNING).
  bool acks_counted = false;
  bool recount = false;  // a delete removed other than `acked` says: read the stats again
  // The outbox tail this process committed, so that OutboxPeek of what was just committed needs
  // no SELECT: every committed entry with an id above tail_floor is in tail, in id order.
  std::deque<OutboxEntry> tail;
  int64_t tail_floor = 0;
  int64_t tail_bytes = 0;
  // By the open transaction, with their ids already given out (Tx::OutboxAppend), inserted at its
  // commit (InsertAppended); they join `tail` once committed.
  std::vector<OutboxEntry> appended;
  std::vector<std::optional<bool>> appended_informational;  // Tx::OutboxAppend's, per entry
  // The id the next Tx::OutboxAppend gives out: above the outbox's AUTOINCREMENT sequence and every
  // row. Explicit ids let a transaction's frames go in with a few multi-row INSERTs; AUTOINCREMENT
  // still keeps the sequence (its high-water mark, OpenSentMark) at the end of each statement.
  int64_t next_outbox_id = 1;
  // The unsent entries StoreOptions::outbox_informational says are informational, in id order:
  // (id, bytes); they leave at their OutboxAck.
  std::deque<std::pair<int64_t, int64_t>> informational;
  int64_t informational_bytes = 0;
  int64_t deleted_through = 0;  // acked entries <= this are deleted (committed)
  std::array<sqlite3_stmt*, kStmtCount> stmts{};
  // outbox_inserts[k]: the INSERT of 2^k outbox rows (InsertAppended), prepared on first use.
  static constexpr int kOutboxInsertSizes = 6;  // 1, 2, 4, ..., 32 rows a statement
  std::array<sqlite3_stmt*, kOutboxInsertSizes> outbox_inserts{};
  std::unique_ptr<WalCheckpointer> checkpointer;  // null when read-only

  explicit Impl(const std::string& p) : path(p) {}
  ~Impl() {
    checkpointer.reset();  // before the close, which checkpoints what is left
    for (sqlite3_stmt* s : stmts) sqlite3_finalize(s);
    for (sqlite3_stmt* s : outbox_inserts) sqlite3_finalize(s);
    if (db) sqlite3_close_v2(db);
  }

  // An error for a failed SQLite call, naming the database; `what` says which operation failed.
  Status Err(const std::string& what, int rc) const {
    const char* msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
      case SQLITE_NOTADB:
        return Status::Error("database " + path + " is not a SQLite database (" + msg + ")");
      case SQLITE_BUSY:
        return Status::Error("database " + path + " is locked by another process");
      default:
        return Status::Error("database " + path + ": " + what + ": " + msg);
    }
  }

  Result<sqlite3_stmt*> Stmt(StmtId id) {
    if (stmts[id]) return stmts[id];
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db, kSql[id], -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) return Err(std::string("prepare \"") + kSql[id] + "\"", rc);
    stmts[id] = s;
    return s;
  }

  // Inserts `appended` (the open transaction's frames) with created_at `now`: in statements of 32,
  // 16, ..., 1 rows, so that a batch of N frames costs at most 6 + N/32 statements, not N. Each
  // statement of a table with AUTOINCREMENT reads and writes its sequence once; per row that was
  // most of an INSERT's time (a C benchmark of SQLite alone: 2.9 against 1.7 µs of CPU a frame).
  Status InsertAppended(const std::string& now) {
    for (size_t i = 0; i < appended.size();) {
      int k = kOutboxInsertSizes - 1;
      while ((size_t{1} << k) > appended.size() - i) --k;
      const size_t n = size_t{1} << k;
      if (!outbox_inserts[k]) {
        // ?1 is created_at, shared; row j binds ?(2j+2) id and ?(2j+3) frame.
        std::string sql = "INSERT INTO lc_outbox (id, frame, created_at) VALUES ";
        for (size_t j = 0; j < n; ++j) {
          sql += (j ? ", (?" : "(?") + std::to_string(2 * j + 2) + ", ?" +
                 std::to_string(2 * j + 3) + ", ?1)";
        }
        int rc = sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                                    &outbox_inserts[k], nullptr);
        if (rc != SQLITE_OK) return Err("prepare the outbox insert", rc);
      }
      sqlite3_stmt* s = outbox_inserts[k];
      StmtReset reset(s);
      BindText(s, 1, now);
      for (size_t j = 0; j < n; ++j) {
        sqlite3_bind_int64(s, static_cast<int>(2 * j + 2), appended[i + j].id);
        BindText(s, static_cast<int>(2 * j + 3), appended[i + j].frame);
      }
      if (int rc = sqlite3_step(s); rc != SQLITE_DONE) return Err("append to outbox", rc);
      i += n;
    }
    return Status::Ok();
  }

  // Deletes the entries with id <= `through` (acked_through) inside the open transaction; adds
  // what it removed to `removed`.
  Status DeleteThrough(int64_t through, OutboxStats& removed) {
    if (acks_counted) {
      // What it removes is known (`acked`): a plain DELETE, no row read back. When every row is
      // acknowledged (the GM keeps up), the whole table.
      auto max_id = Stmt(kOutboxMaxId);
      if (!max_id) return max_id.status();
      bool all = false;
      {
        StmtReset reset(*max_id);
        const int rc = sqlite3_step(*max_id);
        if (rc != SQLITE_ROW) return Err("read outbox ids", rc);
        all = sqlite3_column_int64(*max_id, 0) <= through;  // NULL (empty) reads as 0
      }
      auto s = Stmt(all ? kOutboxDeleteAll : kOutboxDeleteCounted);
      if (!s) return s.status();
      StmtReset reset(*s);
      if (!all) sqlite3_bind_int64(*s, 1, through);
      if (int rc = sqlite3_step(*s); rc != SQLITE_DONE) {
        return Err("delete written outbox entries", rc);
      }
      const int64_t n = sqlite3_changes64(db);
      if (n != acked.count) recount = true;  // not expected; the stats are read again
      removed.count += acked.count;
      removed.bytes += acked.bytes;
      return Status::Ok();
    }
    auto s = Stmt(kOutboxDeleteThrough);
    if (!s) return s.status();
    StmtReset reset(*s);
    sqlite3_bind_int64(*s, 1, through);
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      removed.count += 1;
      removed.bytes += sqlite3_column_int64(*s, 0);
    }
    if (rc != SQLITE_DONE) return Err("delete written outbox entries", rc);
    return Status::Ok();
  }

  // Reads the outbox's count and bytes from the table.
  Status LoadStats() {
    auto text = QueryText(kOutboxStatsSql, "read outbox");
    if (!text) return text.status();
    if (text->has_value()) {
      long long count = 0, bytes = 0;
      std::sscanf((*text)->c_str(), "%lld %lld", &count, &bytes);
      stats = OutboxStats{count, bytes};
    }
    return Status::Ok();
  }

  // Runs a statement that returns no rows.
  Status Run(StmtId id, const std::string& what) {
    auto s = Stmt(id);
    if (!s) return s.status();
    StmtReset reset(*s);
    int rc = sqlite3_step(*s);
    return rc == SQLITE_DONE ? Status::Ok() : Err(what, rc);
  }

  // One-off SQL (schema work at open), no rows expected.
  Status Exec(const char* sql, const std::string& what) {
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? Status::Ok() : Err(what, rc);
  }

  // One-off query returning the first column of the first row as text (nullopt: no row).
  Result<std::optional<std::string>> QueryText(const std::string& sql, const std::string& what) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    if (rc != SQLITE_OK) return Err(what, rc);
    rc = sqlite3_step(s);
    std::optional<std::string> out;
    if (rc == SQLITE_ROW) out = ColumnText(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Err(what, rc);
    return out;
  }

  Result<int64_t> QueryInt(const std::string& sql, const std::string& what) {
    auto r = QueryText(sql, what);
    if (!r) return r.status();
    return r->has_value() ? std::strtoll((*r)->c_str(), nullptr, 10) : int64_t{0};
  }

  // Rolls back if a transaction is open. Ok if none is.
  Status RollbackIfOpen() {
    if (sqlite3_get_autocommit(db)) return Status::Ok();
    Status s = Run(kRollback, "rollback");
    if (!sqlite3_get_autocommit(db)) {
      // Last resort: ROLLBACK fails only while statements are pending; none should be, but make
      // sure the connection is never left inside a transaction.
      for (sqlite3_stmt* st : stmts)
        if (st) sqlite3_reset(st);
      s = Exec("ROLLBACK", "rollback");
    }
    return s;
  }

  // The largest outbox id ever used: the AUTOINCREMENT sequence, or a larger row's.
  Result<int64_t> OutboxHighWater() {
    return QueryInt(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'lc_outbox'), 0), "
        "coalesce((SELECT max(id) FROM lc_outbox), 0))",
        "read outbox ids");
  }

  Status Migrate(bool read_only);
  Status OpenSentMark();
  // Fills `informational` from the unsent entries, each cut as StoreOptions says.
  Status LoadInformational(const std::function<bool(std::string_view)>& is_informational) {
    constexpr const char* kSqlInformational =
        "SELECT id, length(CAST(frame AS BLOB)), "
        "substr(frame, 1, instr(frame, '\"content\":\"') + 10 + 684) "
        "FROM lc_outbox WHERE id > ?1 ORDER BY id";
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, kSqlInformational, -1, &s, nullptr);
    if (rc != SQLITE_OK) return Err("read outbox", rc);
    sqlite3_bind_int64(s, 1, acked_through);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      if (!is_informational(ColumnText(s, 2))) continue;
      informational.emplace_back(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1));
      informational_bytes += informational.back().second;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? Status::Ok() : Err("read outbox", rc);
  }
  // Pops the informational entries with an id <= `id`.
  void AckInformational(int64_t id) {
    while (!informational.empty() && informational.front().first <= id) {
      informational_bytes -= informational.front().second;
      informational.pop_front();
    }
  }

  // After a commit: the transaction's appends join the tail. TrimTail (also after each
  // acknowledgement): acknowledged entries leave it, and the oldest leave it (raising tail_floor)
  // past kTailMaxEntries or kTailMaxBytes.
  void KeepTail() {
    for (auto& e : appended) {
      tail_bytes += static_cast<int64_t>(e.frame.size());
      tail.push_back(std::move(e));
    }
    appended.clear();
    TrimTail();
  }
  void TrimTail() {
    while (!tail.empty() && (tail.front().id <= acked_through || tail.size() > kTailMaxEntries ||
                             tail_bytes > kTailMaxBytes)) {
      tail_floor = std::max(tail_floor, tail.front().id);
      tail_bytes -= static_cast<int64_t>(tail.front().frame.size());
      tail.pop_front();
    }
  }
  Status AdoptResources();
  Status RebuildStateTable();
};

Status Store::Impl::AdoptResources() {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA table_info(resources)", -1, &s, nullptr);
  if (rc != SQLITE_OK) return Err("read table resources", rc);
  std::vector<std::string> have;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) have.push_back(ColumnText(s, 1));
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Err("read table resources", rc);
  for (const char* want : kResourceColumns) {
    bool found = false;
    for (const auto& h : have) found = found || sqlite3_stricmp(h.c_str(), want) == 0;
    if (!found) {
      return Status::Error("database " + path + ": existing table resources has no column " + want +
                           "; it was not created by Sedna's LC");
    }
  }
  return Status::Ok();
}

// Rebuilds lc_state as a rowid table when it is the WITHOUT ROWID one of earlier versions
// (kStateColumns says why); inside Migrate's transaction.
Status Store::Impl::RebuildStateTable() {
  auto table = QueryText("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'lc_state'",
                         "read schema");
  if (!table) return table.status();
  if (!table->has_value() || sqlite3_strlike("%WITHOUT ROWID%", (*table)->c_str(), 0) != 0) {
    return Status::Ok();
  }
  const std::string rebuild =
      std::string("CREATE TABLE lc_state_rebuilt") + kStateColumns + kStateCopyAndSwap;
  return Exec(rebuild.c_str(), "rebuild table lc_state");
}

// Brings the schema to kSchemaVersion inside one write transaction, so two processes opening the
// same new file cannot both migrate it. Read-only: only checks the version.
Status Store::Impl::Migrate(bool read_only) {
  if (!read_only) {
    if (Status s = Exec("BEGIN IMMEDIATE", "begin migration"); !s.ok()) return s;
  }
  auto fail = [&](Status s) {
    if (read_only) return s;
    Status r = RollbackIfOpen();
    return r.ok() ? s : s.WithMessage(s.message() + "; " + r.message());
  };
  auto version = QueryInt("PRAGMA user_version", "read schema version");
  if (!version) return fail(version.status());
  if (*version > kSchemaVersion) {
    return fail(Status::Error("database " + path + " has schema version " +
                              std::to_string(*version) + ", this sedna-lc knows up to " +
                              std::to_string(kSchemaVersion)));
  }
  if (*version == kSchemaVersion) {
    if (read_only) return Status::Ok();
    Status s = RebuildStateTable();
    if (s.ok()) s = Exec("COMMIT", "commit");
    return s.ok() ? s : fail(s);
  }
  if (read_only) {
    return Status::Error("database " + path + " has schema version " + std::to_string(*version) +
                         ", needs migration to " + std::to_string(kSchemaVersion) +
                         "; open it read-write once");
  }
  // 0 -> 1: the Go LC's `resources` (created here if absent, adopted if present) plus our tables.
  auto table = QueryText(
      "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'resources'", "read schema");
  if (!table) return fail(table.status());
  Status s = table->has_value() ? AdoptResources() : Exec(kResourcesDdl, "create table resources");
  if (!s.ok()) return fail(s);
  auto index = QueryText(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'idx_resources_deleted_at'",
      "read schema");
  if (!index) return fail(index.status());
  if (!index->has_value()) {
    if (s = Exec(kResourcesIndexDdl, "create index idx_resources_deleted_at"); !s.ok()) {
      return fail(s);
    }
  }
  const std::string state_ddl = std::string("CREATE TABLE IF NOT EXISTS lc_state") + kStateColumns;
  if (s = Exec(state_ddl.c_str(), "create table lc_state"); !s.ok()) return fail(s);
  if (s = RebuildStateTable(); !s.ok()) return fail(s);
  if (s = Exec(kOutboxDdl, "create table lc_outbox"); !s.ok()) return fail(s);
  const std::string set_version = "PRAGMA user_version = " + std::to_string(kSchemaVersion);
  if (s = Exec(set_version.c_str(), "set schema version"); !s.ok()) return fail(s);
  if (s = Exec("COMMIT", "commit migration"); !s.ok()) return fail(s);
  return Status::Ok();
}

Store::Store(std::string path, StoreOptions options)
    : path_(std::move(path)), options_(std::move(options)), impl_(std::make_unique<Impl>(path_)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  const std::string db_name = "database " + path;
  if (path.empty()) return Result<std::unique_ptr<Store>>::Error("database path is empty");
  if (options.read_only) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return Result<std::unique_ptr<Store>>::Error(
          db_name + ": cannot open read-only: " + std::strerror(errno));
    }
  } else {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      if (!ec && !std::filesystem::is_directory(dir, ec)) {
        ec = std::make_error_code(std::errc::not_a_directory);
      }
      if (ec) {
        return Result<std::unique_ptr<Store>>::Error(db_name + ": cannot create directory " +
                                                     dir.string() + ": " + ec.message());
      }
    }
  }

  ConfigureSqliteOnce();
  std::unique_ptr<Store> store(new Store(path, options));
  Impl& im = *store->impl_;
  // NOMUTEX (SQLite's multi-thread mode): a Store is used from one thread (store.h), so SQLite
  // need not lock the connection around every call (~19 % of an outbox INSERT's time).
  int flags =
      SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_NOMUTEX |
      (options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &im.db, flags, nullptr);
  if (rc != SQLITE_OK) return im.Err("cannot open", rc);
  sqlite3_extended_result_codes(im.db, 1);
  const auto timeout = options.busy_timeout.count();
  sqlite3_busy_timeout(im.db, timeout > INT32_MAX ? INT32_MAX : static_cast<int>(timeout));

  if (!options.read_only) {
    auto mode = im.QueryText("PRAGMA journal_mode = WAL", "enable WAL");
    if (!mode) return mode.status();
    if (!mode->has_value() || sqlite3_stricmp((*mode)->c_str(), "wal") != 0) {
      return Result<std::unique_ptr<Store>>::Error(
          db_name + ": cannot enable WAL (journal_mode is " + mode->value_or("unknown") + ")");
    }
  }
  // Small footprint: a 512 KiB page cache, no memory-mapped I/O, WAL file trimmed to 4 MiB after
  // checkpoints. secure_delete FAST: deleted content is zeroed in the pages a commit writes anyway,
  // but a page freed (a job record's old overflow page, acknowledged outbox rows) is not written
  // again as zeros; Debian's SQLite is built with SECURE_DELETE on, which wrote every freed page to
  // the WAL (docs/benchmarks.md, session 36). Nothing the store holds is a secret: credentials are
  // never stored ([P:B23]).
  std::string pragmas = std::string("PRAGMA synchronous = ") +
                        (options.synchronous_full ? "FULL" : "NORMAL") +
                        "; PRAGMA foreign_keys = OFF; PRAGMA cache_size = -256;"
                        " PRAGMA mmap_size = 0; PRAGMA secure_delete = FAST;";
  if (!options.read_only) pragmas += " PRAGMA journal_size_limit = 4194304;";
  if (Status s = im.Exec(pragmas.c_str(), "configure"); !s.ok()) return s;
  if (!options.read_only) {
    im.checkpointer = std::make_unique<WalCheckpointer>(im.db, path, options.on_checkpoint);
  }
  if (Status s = im.Migrate(options.read_only); !s.ok()) return s;

  if (Status s = im.LoadStats(); !s.ok()) return s;
  if (!options.read_only) {
    if (Status s = im.OpenSentMark(); !s.ok()) return s;
    if (Status s = store->OutboxFlushAcks(); !s.ok()) return s;
    im.acks_counted = true;  // nothing a previous run sent is left
  }
  if (options.outbox_informational && im.stats.count > 0) {
    if (Status s = im.LoadInformational(options.outbox_informational); !s.ok()) return s;
  }
  return store;
}

// Loads the sent mark; a mark above the outbox's AUTOINCREMENT sequence (the WAL lost its newest
// commits in a power loss) is clamped to it, so ids handed out from here on are never taken as
// sent.
Status Store::Impl::OpenSentMark() {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Error("database " + path + ": cannot stat: " + std::strerror(errno));
  }
  identity = (static_cast<uint64_t>(st.st_dev) << 40) ^ st.st_ino;
  auto mark = SentMark::Open(path + "-sent", identity);
  if (!mark.ok()) return Status::Error("database " + path + ": " + mark.message());
  sent = std::move(*mark);
  auto seq =
      QueryInt("SELECT seq FROM sqlite_sequence WHERE name = 'lc_outbox'", "read outbox sequence");
  if (!seq) return seq.status();
  const int64_t through = std::clamp<int64_t>(sent->Get(), 0, *seq);
  if (through != sent->Get()) sent->Set(through);
  acked_through = through;
  tail_floor = *seq;  // nothing committed by this process yet
  auto high = OutboxHighWater();
  if (!high) return high.status();
  next_outbox_id = *high + 1;
  return Status::Ok();
}

uint64_t Store::identity() const { return impl_->identity; }

void Store::ReleaseMemory() { (void)sqlite3_db_release_memory(impl_->db); }

int64_t Store::CachedBytes() const {
  int used = 0, high = 0;
  if (sqlite3_db_status(impl_->db, SQLITE_DBSTATUS_CACHE_USED, &used, &high, 0) != SQLITE_OK) {
    return -1;
  }
  return used;
}

Status Store::Transact(const std::function<Status(Tx&)>& fn) {
  Status s = Transact(fn, kDeleteBatch);
  if (options_.on_transact) options_.on_transact(s);
  return s;
}

Status Store::Transact(const std::function<Status(Tx&)>& fn, int64_t delete_from) {
  Impl& im = *impl_;
  if (options_.read_only) return Status::Error("database " + path_ + " is opened read-only");
  if (im.in_tx) {
    return Status::Error("database " + path_ + ": Transact called inside a transaction");
  }
  if (Status s = im.Run(kBegin, "begin"); !s.ok()) {
    if (Status r = im.RollbackIfOpen(); !r.ok())
      return s.WithMessage(s.message() + "; " + r.message());
    return s;
  }
  im.in_tx = true;
  Tx& tx = tx_;
  tx.active_ = true;
  tx.failed_ = Status::Ok();
  tx.added_count_ = 0;
  tx.added_bytes_ = 0;
  im.appended.clear();
  im.appended_informational.clear();
  // Closes the transaction however fn exits, including by an exception.
  struct Guard {
    Impl& im;
    Tx& tx;
    const int64_t first_id;    // the first id this transaction gives out
    bool ids_settled = false;  // next_outbox_id is final: committed, or taken back below
    ~Guard() {
      tx.active_ = false;
      if (!ids_settled) im.next_outbox_id = first_id;  // fn threw
      // Open here only when fn threw (every other path has committed or rolled back): the
      // exception is the error, and RollbackIfOpen's last resort leaves no transaction open.
      im.RollbackIfOpen().IgnoreError();
      im.in_tx = false;
    }
  } guard{im, tx, im.next_outbox_id};

  // Written frames are deleted in batches: they are already recorded as sent (the sent mark), so
  // each one need not cost a DELETE of its own; OutboxFlushAcks deletes any number.
  const int64_t ack = im.acked_through;
  const bool trim = ack - im.deleted_through >= delete_from;
  OutboxStats removed;
  Status s = trim ? im.DeleteThrough(ack, removed) : Status::Ok();
  if (s.ok()) s = fn(tx);
  tx.active_ = false;
  if (s.ok()) s = tx.failed_;
  if (s.ok() && !im.appended.empty()) s = im.InsertAppended(GormNow(options_.clock));
  if (s.ok()) s = im.Run(kCommit, "commit");
  if (!s.ok()) {
    if (Status r = im.RollbackIfOpen(); !r.ok())
      s = s.WithMessage(s.message() + "; " + r.message());
    // The ids go back to the first one given out, or past what the table holds now: rows with
    // those ids (another writer's, the failed insert's constraint) must not fail every later
    // transaction.
    im.next_outbox_id = guard.first_id;
    if (!im.appended.empty()) {
      if (auto high = im.OutboxHighWater(); high.ok() && *high >= guard.first_id) {
        im.next_outbox_id = *high + 1;
      }
    }
    guard.ids_settled = true;
    return s;
  }
  guard.ids_settled = true;
  im.stats.count += tx.added_count_ - removed.count;
  im.stats.bytes += tx.added_bytes_ - removed.bytes;
  if (options_.outbox_informational) {
    for (size_t k = 0; k < im.appended.size(); ++k) {
      const OutboxEntry& e = im.appended[k];
      if (e.id <= im.acked_through) continue;
      const std::optional<bool> known = im.appended_informational[k];
      if (!(known ? *known : options_.outbox_informational(e.frame))) continue;
      im.informational.emplace_back(e.id, static_cast<int64_t>(e.frame.size()));
      im.informational_bytes += im.informational.back().second;
    }
  }
  im.KeepTail();
  if (trim) {
    im.deleted_through = std::max(im.deleted_through, ack);
    im.acked = OutboxStats{};
    if (im.recount && im.LoadStats().ok()) im.recount = false;
  }
  return s;
}

Status Store::Tx::Check() const {
  if (!active_) {
    return Status::Error("database " + store_->path_ + ": transaction used outside Transact");
  }
  return failed_;
}

Status Store::Tx::Fail(Status s) {
  if (failed_.ok()) failed_ = s;
  return s;
}

Status Store::Tx::UpsertResource(const ResourceRow& row) {
  if (Status s = Check(); !s.ok()) return s;
  Impl& im = *store_->impl_;
  const std::string now = GormNow(store_->options_.clock);
  auto bind = [&](sqlite3_stmt* s) {
    BindText(s, 1, now);
    BindText(s, 2, row.type_meta);
    BindText(s, 3, row.object_meta);
    BindText(s, 4, row.spec);
    BindText(s, 5, row.name);
  };
  {
    auto s = im.Stmt(kResourceUpdate);
    if (!s) return Fail(s.status());
    StmtReset reset(*s);
    bind(*s);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return Fail(im.Err("update resource " + row.name, rc));
    if (sqlite3_changes64(im.db) > 0) return Status::Ok();
  }
  auto s = im.Stmt(kResourceInsert);
  if (!s) return Fail(s.status());
  StmtReset reset(*s);
  bind(*s);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return Fail(im.Err("insert resource " + row.name, rc));
  return Status::Ok();
}

Status Store::Tx::DeleteResource(const std::string& name) {
  if (Status s = Check(); !s.ok()) return s;
  Impl& im = *store_->impl_;
  auto s = im.Stmt(kResourceDelete);
  if (!s) return Fail(s.status());
  StmtReset reset(*s);
  BindText(*s, 1, name);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return Fail(im.Err("delete resource " + name, rc));
  return Status::Ok();
}

Status Store::Tx::PutState(const std::string& scope, const std::string& key,
                           const std::string& value) {
  if (Status s = Check(); !s.ok()) return s;
  Impl& im = *store_->impl_;
  auto s = im.Stmt(kStatePut);
  if (!s) return Fail(s.status());
  const std::string now = GormNow(store_->options_.clock);
  StmtReset reset(*s);
  BindText(*s, 1, scope);
  BindText(*s, 2, key);
  BindText(*s, 3, value);
  BindText(*s, 4, now);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return Fail(im.Err("put state " + scope + "/" + key, rc));
  return Status::Ok();
}

Status Store::Tx::DeleteState(const std::string& scope, const std::string& key) {
  if (Status s = Check(); !s.ok()) return s;
  Impl& im = *store_->impl_;
  auto s = im.Stmt(kStateDelete);
  if (!s) return Fail(s.status());
  StmtReset reset(*s);
  BindText(*s, 1, scope);
  BindText(*s, 2, key);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return Fail(im.Err("delete state " + scope + "/" + key, rc));
  return Status::Ok();
}

Result<int64_t> Store::Tx::OutboxAppend(const std::string& frame,
                                        std::optional<bool> informational) {
  if (Status s = Check(); !s.ok()) return s;
  Impl& im = *store_->impl_;
  const int64_t id = im.next_outbox_id++;
  added_count_ += 1;
  added_bytes_ += static_cast<int64_t>(frame.size());
  im.appended.push_back(OutboxEntry{id, frame});  // inserted at the commit (InsertAppended)
  im.appended_informational.push_back(informational);
  return id;
}

Result<std::vector<ResourceRow>> Store::LoadResources() const {
  Impl& im = *impl_;
  auto s = im.Stmt(kResourcesLoad);
  if (!s) return s.status();
  StmtReset reset(*s);
  std::vector<ResourceRow> out;
  int rc;
  while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
    out.push_back(
        ResourceRow{ColumnText(*s, 0), ColumnText(*s, 1), ColumnText(*s, 2), ColumnText(*s, 3)});
  }
  if (rc != SQLITE_DONE) return im.Err("load resources", rc);
  return out;
}

Result<std::optional<std::string>> Store::GetState(const std::string& scope,
                                                   const std::string& key) const {
  Impl& im = *impl_;
  auto s = im.Stmt(kStateGet);
  if (!s) return s.status();
  StmtReset reset(*s);
  BindText(*s, 1, scope);
  BindText(*s, 2, key);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_ROW) return std::optional<std::string>(ColumnText(*s, 0));
  if (rc != SQLITE_DONE) return im.Err("get state " + scope + "/" + key, rc);
  return std::optional<std::string>();
}

Result<std::vector<std::pair<std::string, std::string>>> Store::LoadStates(
    const std::string& scope) const {
  Impl& im = *impl_;
  auto s = im.Stmt(kStatesLoad);
  if (!s) return s.status();
  StmtReset reset(*s);
  BindText(*s, 1, scope);
  std::vector<std::pair<std::string, std::string>> out;
  int rc;
  while ((rc = sqlite3_step(*s)) == SQLITE_ROW)
    out.emplace_back(ColumnText(*s, 0), ColumnText(*s, 1));
  if (rc != SQLITE_DONE) return im.Err("load state " + scope, rc);
  return out;
}

Result<std::vector<OutboxEntry>> Store::OutboxPeek(size_t limit, int64_t after_id) const {
  Impl& im = *impl_;
  std::vector<OutboxEntry> out;
  if (limit == 0) return out;
  const int64_t after = std::max(after_id, im.acked_through);
  if (!options_.read_only && after >= im.tail_floor) {
    out.reserve(std::min(limit, im.tail.size()));
    for (const auto& e : im.tail) {
      if (out.size() == limit) break;
      if (e.id > after) out.push_back(e);
    }
    return out;
  }
  auto s = im.Stmt(kOutboxPeek);
  if (!s) return s.status();
  StmtReset reset(*s);
  sqlite3_bind_int64(*s, 1, limit > INT64_MAX ? INT64_MAX : static_cast<sqlite3_int64>(limit));
  sqlite3_bind_int64(*s, 2, after);
  int rc;
  while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
    out.push_back(OutboxEntry{sqlite3_column_int64(*s, 0), ColumnText(*s, 1)});
  }
  if (rc != SQLITE_DONE) return im.Err("read outbox", rc);
  return out;
}

Result<std::vector<OutboxEntry>> Store::OutboxTake(size_t limit, int64_t after_id) {
  Impl& im = *impl_;
  const int64_t after = std::max(after_id, im.acked_through);
  if (limit == 0 || options_.read_only || after < im.tail_floor) return OutboxPeek(limit, after);
  // What is above tail_floor is all in the tail: taking from its front (raising tail_floor past
  // what was taken) keeps that true, and OutboxPeek/OutboxTake of what is left still read it.
  std::vector<OutboxEntry> out;
  out.reserve(std::min(limit, im.tail.size()));
  while (!im.tail.empty() && out.size() < limit) {
    OutboxEntry& e = im.tail.front();
    im.tail_floor = std::max(im.tail_floor, e.id);
    im.tail_bytes -= static_cast<int64_t>(e.frame.size());
    if (e.id > after) out.push_back(std::move(e));
    im.tail.pop_front();
  }
  return out;
}

void Store::OutboxAck(int64_t id, int64_t bytes) {
  Impl& im = *impl_;
  if (id <= im.acked_through) return;
  im.acked_through = id;
  if (im.sent) im.sent->Set(id);
  im.acked.count += 1;
  im.acked.bytes += bytes;
  im.AckInformational(id);
  im.TrimTail();  // sent entries leave the in-memory tail at once
}

int64_t Store::OutboxAckedThrough() const { return impl_->acked_through; }

Status Store::OutboxFlushAcks() {
  if (impl_->acked_through <= impl_->deleted_through) return Status::Ok();
  return Transact([](Tx&) { return Status::Ok(); }, 1);
}

Result<OutboxStats> Store::GetOutboxStats() const {
  const Impl& im = *impl_;
  return OutboxStats{std::max<int64_t>(0, im.stats.count - im.acked.count),
                     std::max<int64_t>(0, im.stats.bytes - im.acked.bytes),
                     static_cast<int64_t>(im.informational.size()), im.informational_bytes};
}

}  // namespace sedna::store
