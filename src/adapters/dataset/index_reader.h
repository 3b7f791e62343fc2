// Incremental reading of a dataset index file (sedna-protocol.md §7.3, design.md §4): only bytes
// appended since the last call are read, complete lines only, rewrites detected, memory bounded
// by the longest line plus a fixed buffer (no line length limit, B27).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace sedna::dataset {

enum class IndexFormat { kTxt, kCsv };

// Case-insensitive "txt" / "csv". Error: `format: unsupported "json" (expected txt or csv)`.
Result<IndexFormat> ParseIndexFormat(std::string_view format);

// Where reading of one index file stands. Plain data: the caller persists it and passes it back.
// A default-constructed cursor reads the file from the start.
struct IndexCursor {
  // The index path this cursor reads; the caller's bookkeeping (ReadNewSamples ignores it). A
  // cursor is only meaningful for its own path: a different index starts from a fresh cursor.
  std::string path;
  // Identity of the file last read (0, 0: none yet).
  uint64_t dev = 0, ino = 0;
  // Bytes consumed: always just after a '\n', or at EOF after taking an unterminated line.
  int64_t offset = 0;
  // Samples taken from this index so far (across rewrites).
  int64_t samples = 0;
  // After a rewrite: samples of the new file still to skip (already consumed).
  int64_t skip = 0;
  // csv: the header line of the current file has been consumed.
  bool header_done = false;
  // csv header text (no newline); kept until the new file's header is read after a rewrite.
  std::string header;
  // File size when an unterminated tail was last seen by a take_unterminated call (-1 none).
  int64_t tail_size = -1;
};

struct ReadResult {
  int64_t new_samples = 0;  // on_sample calls made
  int64_t bytes_read = 0;   // bytes read from the file by this call (I/O, not cursor progress)
  bool rewritten = false;   // the file was replaced or rewritten; reading restarted at byte 0
  bool missing = false;     // the file does not exist; nothing else was done
};

// Reads what was written since cursor.offset and calls on_sample(line) for every new sample, in
// file order.
// - A line is complete once its '\n' is written. A trailing '\r' is stripped (CRLF). Empty lines
//   are not samples. Lines of any length are delivered whole.
// - csv: the first non-empty line of each file incarnation is the header (cursor.header), never a
//   sample.
// - Rewrite: (dev, ino) differs from the cursor's, or the size is below cursor.offset → reading
//   restarts at byte 0 with skip = samples (the first `samples` samples of the new file were
//   already consumed), header_done = false, rewritten = true. A first read with a default cursor
//   is not a rewrite. (A rewrite in place that leaves the file at least as long as the offset is
//   indistinguishable from an append.)
// - Unterminated last line: taken (offset moves to EOF) only when take_unterminated is true and
//   the size equals cursor.tail_size, which only take_unterminated calls record. So with
//   take_unterminated passed on poll ticks only, the tail is taken once the file stayed unchanged
//   for one whole poll period; calls without it never take it and never restart that period.
// - Missing file (ENOENT/ENOTDIR): missing = true, cursor unchanged, ok.
// - Any error (I/O, or from on_sample, returned unchanged) stops the read and leaves `cursor`
//   untouched, so the same call can be retried; samples delivered before the error are delivered
//   again by the retry.
// - max_bytes > 0 ends the call at the first line end at or after max_bytes consumed bytes (so at
//   least one line is consumed whatever its length); the caller calls again for the rest, without
//   waiting. Unterminated-tail handling happens only in a call that reaches the end of the file.
//   0 = read to the end of the file as it was when the call started.
Result<ReadResult> ReadNewSamples(const std::string& path, IndexFormat format, IndexCursor& cursor,
                                  bool take_unterminated, int64_t max_bytes,
                                  const std::function<Status(std::string_view sample)>& on_sample);

}  // namespace sedna::dataset
