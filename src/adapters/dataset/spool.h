// Per-job sample spool (design-notes §D4, bounded memory): samples are appended to a file on disk,
// one per line, as they are read from the index; the process keeps only byte offsets. The round
// files of §P7.4 are then cut from spool ranges with fs::WriteFileFromRanges.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/fs/confined.h"
#include "adapters/fs/sync_batch.h"
#include "core/status.h"

namespace sedna::dataset {

// Append-only file of samples. The durable length is owned by the caller's state: the caller
// records size() after a successful Flush() (e.g. in the same transaction as the index cursor)
// and passes it back to Open after a restart. Not thread-safe.
class Spool {
 public:
  // Opens or creates `path` (mode 0644; the directory must exist) and truncates it to
  // committed_size: bytes beyond it come from a write that was never committed. A file shorter
  // than committed_size is an error (committed data is gone). Errors name the path.
  //
  // Its directory is not synced here: a file's entry is made durable with its first data sync
  // (Flush, PrepareSync), before any size of it is committed, so opening (creating) a job's
  // spools on the loop makes no fsync. A restart before that sync finds no file or an empty one,
  // committed size 0 either way. An existing file's entry needs it once per directory and process
  // (one fsync makes every entry durable), unless this process created it and has not synced it.
  static Result<std::unique_ptr<Spool>> Open(const std::string& path, int64_t committed_size);
  // `path` was removed (its entry needs no sync any more).
  static void Removed(const std::string& path);

  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Adds `sample` + '\n' to the buffer, writing (not syncing) when the buffer is full. A sample
  // containing '\n' is rejected. On error this sample is not added; earlier ones stay buffered.
  Status Append(std::string_view sample);
  // Writes the buffered bytes and fdatasyncs (and syncs the directory, the first time); afterwards
  // size() bytes are durable. Safe to retry after an error (writes are positional, a partial
  // write is overwritten).
  Status Flush();
  // The syncs of several spools, made together (fs::SyncAll, Context::syncs): a directory whose
  // entries need a sync is in `items` once, however many spools in it need one.
  struct SyncList {
    std::vector<fs::SyncItem> items;
    std::map<std::string, size_t> dirs;  // a directory's fsync in `items`, by path
  };
  // Flush in two parts, for a caller that syncs several spools together: PrepareSync writes the
  // buffered bytes and adds the spool's fdatasync to `list` (and its directory's fsync, while the
  // file's entry is not known durable; nothing is added on an error, which is returned); once the
  // list's syncs are made, Synced with them (their `error` set) returns what Flush would. Then, as
  // after Flush, size() bytes are durable. The spool is left alone in between.
  Status PrepareSync(SyncList& list);
  Status Synced(const std::vector<fs::SyncItem>& synced);
  // Whether the file's directory entry is known durable (thread-safe). One that is not can be made
  // so ahead of the first data sync: its directory (OpenDir) fsynced, then EntrySynced with the
  // result (0 or an errno; thread-safe). A failed one is made again with the next data sync.
  bool entry_durable() const { return entry_durable_.load(std::memory_order_acquire); }
  Result<fs::UniqueFd> OpenDir() const;
  Status EntrySynced(int error);
  // Drops everything beyond `size` (buffered and written bytes), e.g. to roll back the samples
  // of a read that failed part way; size must not exceed size(). Not synced: the caller's
  // committed size already excludes those bytes.
  Status Truncate(int64_t size);
  // Bytes including the buffered ones.
  int64_t size() const { return written_ + static_cast<int64_t>(buffer_.size()); }
  // Bytes written to the file (durable only after Flush).
  int64_t written() const { return written_; }
  const std::string& path() const { return path_; }
  // path()'s directory, "/"-terminated.
  const std::string& dir() const { return dir_; }

 private:
  Spool(std::string path, int fd, int64_t size, bool entry_durable);
  Status WriteBuffer();

  std::string path_;
  std::string dir_;  // path_'s directory, "/"-terminated
  int fd_;
  int64_t written_;
  std::string buffer_;
  std::atomic<bool> entry_durable_;
  fs::UniqueFd entry_fd_;  // the directory, while this spool's PrepareSync added its sync
  int data_at_ = -1;       // this spool's syncs in the last PrepareSync's list
  int entry_at_ = -1;
};

}  // namespace sedna::dataset
