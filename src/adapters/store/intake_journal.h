// The intake journal: worker reports the LC has acknowledged (HTTP 200) and not yet committed to
// SQLite. A file beside the database (`<db>-intake`) written with pwrite, so accepting a report
// costs one small write into the page cache instead of a SQLite commit; the reports are then
// committed in batches (docs/durability.md, "Worker reports"). The file is never mapped: a volume
// that fails or turns read-only, or a file truncated under the journal, is an error from Append,
// never a SIGBUS.
//
// Contract:
//   * After Append() returns ok, the entry survives a crash of this process (kill -9): it is in
//     the page cache, which the kernel writes back on its own. Like the database under
//     synchronous=NORMAL it is not fsynced: a power loss can lose the newest entries.
//   * Entries carry a sequence number that only grows, also across Reset() and reopen, and a
//     checksum. Recover() returns the entries after the last committed one (`applied`, which the
//     caller stores in SQLite with the commit that applies them), in append order, stopping at
//     the first entry that is incomplete (a kill during Append), corrupt or out of sequence.
//   * Reset() is called once every entry is committed: appends start at the beginning again, so
//     the file stays as small as one batch and no entry is ever rewritten in place while valid.
//   * The file records the database's identity (device and inode): entries left by another
//     database file read as none.
//   * A failed Append changes nothing and can be retried (e.g. once the volume is back).
//
// Not thread-safe; one writer (the controller loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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

  // Opens or creates `path` (a regular file), with its blocks allocated up front (a full disk
  // fails here rather than on a later append), and reads its chain of entries for Recover, one
  // entry at a time (memory: the entries found, not the file). A new, malformed or
  // foreign (other `db_identity`) file starts empty. Errors name the path.
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
  // empty journal never fits), when a write fails ("intake journal <path>: writing: <errno
  // text>"), or when the file was cut shorter under the journal while it holds uncommitted
  // entries (commit them, Reset(), retry: an empty journal re-allocates the file and goes on).
  // Not fitting is kResourceExhausted without an errno (IsFull); a failed write or allocation
  // carries its errno (a full volume: ENOSPC).
  Result<uint64_t> Append(std::string_view worker, std::string_view body);
  // Whether `s`, from Append, says the entry does not fit (the journal's bound, not the volume's).
  static bool IsFull(const Status& s) {
    return s.code() == ErrorCode::kResourceExhausted && s.errno_value() == 0;
  }

  // Every appended entry is committed: the next Append starts at the beginning of the file. The
  // write that clears the first entry is best effort: if it fails, what it leaves are entries at
  // or below the applied number, which Recover skips, and the next Append reports the failure.
  void Reset();

  // Bytes in use by entries since the last Reset (0 when empty).
  size_t used() const;
  size_t capacity() const { return capacity_; }
  // The sequence number the next Append returns.
  uint64_t next_seq() const { return next_seq_; }

 private:
  IntakeJournal(std::string path, int fd, size_t capacity)
      : path_(std::move(path)), fd_(fd), capacity_(capacity) {}
  Status WriteAt(size_t pos, const char* data, size_t n);
  // The file is at least capacity_ long again (re-allocated and re-claimed if it was cut).
  Status EnsureAllocated();
  // Writes the header (the current format, this database's identity).
  Status WriteHeader();
  // Reads the chain of valid entries from the start into found_ (Open, for a file of ours).
  Status Scan();
  Status ReadError() const;  // from errno

  struct Found {
    IntakeEntry entry;
    size_t end;  // offset just past it
  };

  std::string path_;
  int fd_;
  uint64_t identity_ = 0;
  size_t capacity_;
  std::vector<Found> found_;     // the chain Open read, until Recover takes it
  uint64_t found_last_seq_ = 0;  // its last sequence number, 0 for none
  size_t pos_ = 0;               // offset of the next entry (set by Recover / Reset)
  uint64_t next_seq_ = 1;
  std::string entry_;  // Append's buffer, its capacity kept (up to kKeepEntryBytes)
  // The file is of the format before CRC-32C (SEDNAIJ1): its entries are checked and written with
  // CRC-32 until it starts over.
  bool legacy_crc_ = false;
};

}  // namespace sedna::store
