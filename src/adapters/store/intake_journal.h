// The intake journal: worker reports the LC has acknowledged (HTTP 200) and not yet committed to
// SQLite. A file beside the database (`<db>-intake`), memory-mapped like the outbox's sent mark,
// so accepting a report costs a copy into a shared page instead of a SQLite commit; the reports
// are then committed in batches (docs/durability.md, "Worker reports").
//
// Contract:
//   * After Append() returns, the entry survives a crash of this process (kill -9): the pages
//     belong to the page cache, which the kernel writes back on its own. Like the database under
//     synchronous=NORMAL it is not fsynced: a power loss can lose the newest entries.
//   * Entries carry a sequence number that only grows, also across Reset() and reopen, and a
//     checksum. Recover() returns the entries after the last committed one (`applied`, which the
//     caller stores in SQLite with the commit that applies them), in append order, stopping at
//     the first entry that is incomplete (a kill during Append), corrupt or out of sequence.
//   * Reset() is called once every entry is committed: appends start at the beginning again, so
//     the file stays as small as one batch and no entry is ever rewritten in place while valid.
//   * The file records the database's identity (device and inode): entries left by another
//     database file read as none.
//
// Not thread-safe; one writer (the controller loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sedna::store {

struct IntakeEntry {
  uint64_t seq = 0;
  std::string worker;  // the worker name from the request path
  std::string body;    // the request body, as received

  friend bool operator==(const IntakeEntry&, const IntakeEntry&) = default;
};

class IntakeJournal {
 public:
  // 2 MiB: one worker API body (at most 1 MiB) always fits into an empty journal.
  static constexpr size_t kDefaultCapacity = 2 << 20;

  // Opens or creates `path`, with its blocks allocated up front (a full disk fails here, never as
  // a SIGBUS on a later append). A new, malformed or foreign (other `db_identity`) file starts
  // empty.
  static Result<std::unique_ptr<IntakeJournal>> Open(const std::string& path, uint64_t db_identity,
                                                     size_t capacity = kDefaultCapacity);
  ~IntakeJournal();
  IntakeJournal(const IntakeJournal&) = delete;
  IntakeJournal& operator=(const IntakeJournal&) = delete;

  // The entries with a sequence number above `applied`, oldest first. Appends continue after
  // them, with sequence numbers above `applied` and above every entry in the file. Call once,
  // right after Open.
  std::vector<IntakeEntry> Recover(uint64_t applied);

  // Appends one entry; returns its sequence number. Fails, changing nothing, when the entry does
  // not fit into the space left (Reset() after committing, then retry; an entry larger than an
  // empty journal never fits).
  Result<uint64_t> Append(std::string_view worker, std::string_view body);

  // Every appended entry is committed: the next Append starts at the beginning of the file.
  void Reset();

  // Bytes in use by entries since the last Reset (0 when empty).
  size_t used() const;
  size_t capacity() const { return capacity_; }
  // The sequence number the next Append returns.
  uint64_t next_seq() const { return next_seq_; }

 private:
  IntakeJournal(int fd, char* base, size_t capacity) : fd_(fd), base_(base), capacity_(capacity) {}

  int fd_;
  char* base_;
  size_t capacity_;
  size_t pos_ = 0;  // offset of the next entry (set by Recover / Reset)
  uint64_t next_seq_ = 1;
};

}  // namespace sedna::store
