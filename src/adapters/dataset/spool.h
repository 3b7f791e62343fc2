// Per-job sample spool (design-notes §D4, bounded memory): samples are appended to a file on disk,
// one per line, as they are read from the index; the process keeps only byte offsets. The round
// files of §P7.4 are then cut from spool ranges with fs::WriteFileFromRanges.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  static Result<std::unique_ptr<Spool>> Open(const std::string& path, int64_t committed_size);

  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Adds `sample` + '\n' to the buffer, writing (not syncing) when the buffer is full. A sample
  // containing '\n' is rejected. On error this sample is not added; earlier ones stay buffered.
  Status Append(std::string_view sample);
  // Writes the buffered bytes and fdatasyncs; afterwards size() bytes are durable. Safe to retry
  // after an error (writes are positional, a partial write is overwritten).
  Status Flush();
  // Flush in two parts, for a caller that syncs several spools together (fs::SyncAll, whose
  // syncs the kernel makes at once): PrepareSync writes the buffered bytes and adds the spool's
  // fdatasync to `syncs` (nothing is added on an error, which is returned); once it is made,
  // Synced with its error (0 or an errno) returns what Flush would. Then, as after Flush, size()
  // bytes are durable. The spool is left alone in between.
  Status PrepareSync(std::vector<fs::SyncItem>& syncs);
  Status Synced(int error) const;
  // Drops everything beyond `size` (buffered and written bytes), e.g. to roll back the samples
  // of a read that failed part way; size must not exceed size(). Not synced: the caller's
  // committed size already excludes those bytes.
  Status Truncate(int64_t size);
  // Bytes including the buffered ones.
  int64_t size() const { return written_ + static_cast<int64_t>(buffer_.size()); }
  // Bytes written to the file (durable only after Flush).
  int64_t written() const { return written_; }
  const std::string& path() const { return path_; }

 private:
  Spool(std::string path, int fd, int64_t size);
  Status WriteBuffer();

  std::string path_;
  int fd_;
  int64_t written_;
  std::string buffer_;
};

}  // namespace sedna::dataset
