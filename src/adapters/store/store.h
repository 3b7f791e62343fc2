// The LC's SQLite database: Sedna's `resources` table (docs/protocol.md §P9.2, kept compatible with
// the Go LC's GORM schema), controller job state, and the durable upstream outbox.
//
// "Persist before acting" (design-notes §D3): everything a transition writes goes through one
// Transact() call, which commits it atomically or not at all. The file runs in WAL mode; with the
// default synchronous=NORMAL a commit survives a process crash (kill -9), and with
// synchronous_full it also survives power loss.
//
// Threading: a Store is not thread-safe. Use it from one thread (the controller loop).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/store/wal_checkpointer.h"
#include "core/clock.h"
#include "core/status.h"

namespace sedna::store {

// One row of `resources`. `name` is the unique key "<ns>/<kind>/<name>"; the other fields are the
// JSON of the object's TypeMeta, ObjectMeta and spec.
struct ResourceRow {
  std::string name;
  std::string type_meta;
  std::string object_meta;
  std::string spec;

  friend bool operator==(const ResourceRow&, const ResourceRow&) = default;
};

// A queued upstream frame. Ids only grow, also across deletes and reopen.
struct OutboxEntry {
  int64_t id = 0;
  std::string frame;

  friend bool operator==(const OutboxEntry&, const OutboxEntry&) = default;
};

// Committed outbox contents: number of entries and the sum of their frames' sizes in bytes.
struct OutboxStats {
  int64_t count = 0;
  int64_t bytes = 0;
  // Of those, the ones StoreOptions::outbox_informational says are informational.
  int64_t informational_count = 0;
  int64_t informational_bytes = 0;

  friend bool operator==(const OutboxStats&, const OutboxStats&) = default;
};

struct StoreOptions {
  // Opens an existing, already migrated database for reading only; never creates or changes
  // anything. Transact() then fails.
  bool read_only = false;
  // false: synchronous=NORMAL (WAL; a commit is durable against a process crash, not power loss).
  // true: synchronous=FULL (every commit is fsynced).
  bool synchronous_full = false;
  // How long a call waits for another process's lock before failing with "... is locked ...".
  std::chrono::milliseconds busy_timeout{5000};
  // Checkpoints never run on the thread that calls Transact(): a thread of the Store's own runs
  // them (wal_checkpointer.h) and, if this is set, reports each one through it, on that thread.
  std::function<void(const CheckpointReport&)> on_checkpoint;
  // Called on the caller's thread at the end of every Transact() with its outcome (for health:
  // the LC's /readyz is 503 while commits fail).
  std::function<void(const Status&)> on_transact;
  // Which outbox frames count as informational (GetOutboxStats' informational_*, the outbox
  // quotas of docs/durability.md). Called on the committing thread for each frame appended, and at
  // Open for each unsent entry with the entry cut after its `"content":"` and 684 more
  // characters, so it must decide from the frame up to there (json::IsInformationalFrame does).
  // Unset: nothing is informational.
  std::function<bool(std::string_view frame)> outbox_informational;
  // The times written (resources' created_at/updated_at, lc_state's updated_at, the outbox's
  // created_at) are its Now(); it must outlive the Store. Null: the system clock.
  const core::Clock* clock = nullptr;
};

class Store {
 public:
  // The schema version this build writes (PRAGMA user_version).
  static constexpr int kSchemaVersion = 1;

  // Creates the parent directory if missing, opens or creates the file, enables WAL and migrates
  // the schema to kSchemaVersion. A file created by the Go LC (a GORM `resources` table, no
  // user_version) is adopted as is. Errors name the path, e.g.
  //   "database /x/y.db: cannot create directory /x: Permission denied"
  //   "database /x/y.db is not a SQLite database (file is not a database)"
  //   "database /x/y.db is locked by another process"
  //   "database /x/y.db has schema version 7, this sedna-lc knows up to 1"
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             const StoreOptions& options = {});

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The writes of one Transact() call. Valid only inside the function passed to Transact(); a
  // call through a reference kept past it fails (the object lives as long as the Store). If any
  // call fails, the whole transaction is rolled back, even if the function then returns Ok.
  class Tx {
   public:
    Tx(const Tx&) = delete;
    Tx& operator=(const Tx&) = delete;

    // Inserts the row, or updates type_meta/object_meta/spec of the row with the same name
    // (created_at kept, updated_at set to now; a GORM soft-deleted row is revived).
    Status UpsertResource(const ResourceRow& row);
    // Removes the row with this name (hard delete). Ok if there is none.
    Status DeleteResource(const std::string& name);
    // Sets (scope, key) to value.
    Status PutState(const std::string& scope, const std::string& key, const std::string& value);
    // Removes (scope, key). Ok if absent.
    Status DeleteState(const std::string& scope, const std::string& key);
    // Queues a frame, inserted when the transaction commits (so a failed insert fails the
    // commit); returns its id, greater than every id committed before. A transaction that fails
    // gives its ids out again. `informational`, when the caller knows it, is what
    // StoreOptions::outbox_informational says of `frame`: the store then does not ask it.
    Result<int64_t> OutboxAppend(const std::string& frame,
                                 std::optional<bool> informational = std::nullopt);

   private:
    friend class Store;
    explicit Tx(Store* store) : store_(store) {}
    Status Check() const;
    Status Fail(Status s);

    Store* store_;
    bool active_ = false;
    Status failed_;
    int64_t added_count_ = 0;
    int64_t added_bytes_ = 0;
  };

  // Runs fn inside one write transaction (BEGIN IMMEDIATE) and commits it. Rolls back, and returns
  // the error, if fn returns an error, a Tx call fails, or the commit fails; never leaves a
  // transaction open. Not re-entrant: calling Transact() from inside fn fails.
  Status Transact(const std::function<Status(Tx&)>& fn);

  // Live (not soft-deleted) resources, in insertion order.
  Result<std::vector<ResourceRow>> LoadResources() const;
  Result<std::optional<std::string>> GetState(const std::string& scope,
                                              const std::string& key) const;
  // All (key, value) pairs of a scope, ordered by key (bytewise).
  Result<std::vector<std::pair<std::string, std::string>>> LoadStates(
      const std::string& scope) const;

  // Up to `limit` entries with an id above `after_id` and above every acknowledged id (OutboxAck),
  // oldest first.
  Result<std::vector<OutboxEntry>> OutboxPeek(size_t limit, int64_t after_id = 0) const;
  // As OutboxPeek, for the reader that sends them (the outbox pump): entries served from memory
  // (committed by this process, not yet acknowledged) leave it rather than being copied, so a
  // frame is not copied on its way out; asked for again (a resend after a reconnect), they are
  // read from the database. The result is OutboxPeek's.
  Result<std::vector<OutboxEntry>> OutboxTake(size_t limit, int64_t after_id = 0);
  // Marks every entry with an id <= `id` as written upstream, in the sent mark (sent_mark.h: one
  // store to a mapped page, durable against a process crash, no commit). Acknowledged entries are
  // no longer returned by OutboxPeek, also after a restart; they are deleted inside a later
  // Transact() (whatever else it writes) once 64 are pending, or by OutboxFlushAcks();
  // GetOutboxStats() no longer counts them. Only a crash between the write upstream and this call
  // re-sends a frame (at-least-once delivery). Read-only stores keep the mark in memory. `bytes` is
  // the size of entry `id`'s frame: acks come one entry at a time, in id order (the outbox acks a
  // written batch entry by entry), so GetOutboxStats() can count only unsent entries.
  void OutboxAck(int64_t id, int64_t bytes);
  int64_t OutboxAckedThrough() const;
  // Deletes the acknowledged entries in a transaction of its own; Ok when there are none.
  Status OutboxFlushAcks();
  // Entries not yet acknowledged. O(1): counters kept in memory, loaded at Open and updated on
  // every commit and acknowledgement.
  Result<OutboxStats> GetOutboxStats() const;

  // Frees the pages SQLite caches for this connection (what a burst of commits or reads left; a
  // later transaction reads what it needs again, from the OS page cache). Called when the LC goes
  // idle, before the heap is trimmed. Never inside a transaction.
  void ReleaseMemory();
  // Heap bytes this connection's page cache holds now (SQLITE_DBSTATUS_CACHE_USED).
  int64_t CachedBytes() const;

  const std::string& path() const { return path_; }
  // The database file's identity (device and inode), recorded by the files kept beside it (the
  // sent mark, the intake journal) so that they are not taken over by a re-created database. 0
  // for a read-only store.
  uint64_t identity() const;

 private:
  // Transact that also deletes the acknowledged entries once at least `delete_from` are pending.
  Status Transact(const std::function<Status(Tx&)>& fn, int64_t delete_from);

  struct Impl;
  Store(std::string path, StoreOptions options);

  std::string path_;
  StoreOptions options_;
  std::unique_ptr<Impl> impl_;
  Tx tx_{this};
};

}  // namespace sedna::store
