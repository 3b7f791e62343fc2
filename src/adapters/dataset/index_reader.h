// Incremental reading of a dataset index file (docs/protocol.md §P7.3, design-notes §D4): only
// bytes appended since the last call are read, complete lines only; a file replaced or rewritten is
// read on after what was consumed when it starts with those bytes, else read whole. Every input is
// bounded: only regular files are opened (never blocking, whatever is at the path), a line longer
// than a limit is skipped, and memory stays within twice the limit plus a fixed buffer whatever the
// file holds (a partial last line is scanned once, not re-read at every append).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace sedna::dataset {

enum class IndexFormat { kTxt, kCsv };

// Case-insensitive "txt" / "csv". Error: `format: unsupported "json" (expected txt or csv)`.
Result<IndexFormat> ParseIndexFormat(std::string_view format);

// The longest sample (line without its '\n' and one trailing '\r') read by default: 1 MiB.
inline constexpr int64_t kDefaultMaxLineBytes = int64_t{1} << 20;

// FNV-1a (64-bit) of `bytes`, continuing from `h`: the digest of a consumed prefix is extended a
// line at a time. kEmptyPrefixDigest is the digest of no bytes.
inline constexpr uint64_t kEmptyPrefixDigest = 0xcbf29ce484222325ULL;
uint64_t ExtendPrefixDigest(uint64_t h, std::string_view bytes);

// Where reading of one index file stands. Plain data: the caller persists it and passes it back.
// A default-constructed cursor reads the file from the start.
struct IndexCursor {
  // The index path this cursor reads; the caller's bookkeeping (ReadNewSamples ignores it). A
  // cursor is only meaningful for its own path: a different index starts from a fresh cursor.
  std::string path;
  // Identity of the file last read (0, 0: none yet).
  uint64_t dev = 0, ino = 0;
  // Bytes consumed: just after a '\n', at EOF after taking an unterminated line, or (while
  // `skipping`) inside an over-long line, after its bytes read so far.
  int64_t offset = 0;
  // Samples taken from this index so far (across rewrites and replacements: it never goes down).
  int64_t samples = 0;
  // Only after a rewrite found with a cursor whose prefix digest is unknown (a record written
  // before digests existed): samples of the new file still to skip, taken as already consumed.
  int64_t skip = 0;
  // ExtendPrefixDigest of the current file's bytes [0, offset), and the samples among them
  // (including those skipped by `skip`). Kept as lines are consumed; on a rewrite the new file's
  // first `offset` bytes are compared with it.
  uint64_t prefix_digest = kEmptyPrefixDigest;
  int64_t prefix_samples = 0;
  // False only for a cursor restored from a record without prefix_digest: a rewrite is then
  // handled as before digests (restart at byte 0, skip = samples), after which it is true again.
  bool prefix_digest_known = true;
  // A prefix check sliced by max_bytes, in progress: the identity of the file checked, the bytes of
  // it digested so far (-1: none) and their digest. In-memory bookkeeping: losing it restarts the
  // check.
  uint64_t check_dev = 0, check_ino = 0;
  int64_t check_at = -1;
  uint64_t check_digest = kEmptyPrefixDigest;
  // csv: the header line of the current file has been consumed.
  bool header_done = false;
  // csv header text (no newline); kept until the new file's header is read after a rewrite.
  std::string header;
  // File size when an unterminated tail was last seen by a take_unterminated call (-1 none).
  int64_t tail_size = -1;
  // Bytes after `offset` already read and known to hold no '\n' (the partial last line): the next
  // call reads on from offset + scanned. In-memory bookkeeping: 0 (scan again) is always correct.
  int64_t scanned = 0;
  // The line containing `offset` is longer than the limit and was reported: bytes through its
  // '\n' are dropped. Must be persisted with `offset` (which is then inside that line).
  bool skipping = false;
};

// What a call found about the file it read (see ReadNewSamples, "Rewrite").
enum class Rewrite {
  kNone,           // the same file, appended to (or unchanged)
  kPrefixKept,     // replaced or rewritten, starting with the consumed bytes: only the rest is new
  kNewFile,        // replaced or rewritten with other content: every sample in it is new
  kSkippedByCount  // rewritten, prefix digest unknown (old record): the first `skip` are skipped
};

struct ReadResult {
  int64_t new_samples = 0;  // on_sample calls made
  int64_t bytes_read = 0;   // bytes read from the file by this call (I/O, not cursor progress)
  bool rewritten = false;   // rewrite != kNone
  Rewrite rewrite = Rewrite::kNone;
  // When rewritten: the consumed prefix of the file that was replaced, in bytes and in samples
  // (kPrefixKept: the new file starts with them; kNewFile: it does not; kSkippedByCount: samples
  // is the count skipped), and the new file's size.
  int64_t consumed_bytes = 0;
  int64_t consumed_samples = 0;
  int64_t file_bytes = 0;
  // Bytes read by this call to compare the new file's start with the consumed prefix (also in
  // bytes_read), and whether that check is still under way (rewrite is then kNone and nothing
  // else was read: call again).
  int64_t prefix_bytes_checked = 0;
  bool checking = false;
  bool missing = false;  // the file does not exist; nothing else was done
  // Lines found longer than max_line_bytes by this call (each one reported once, when found;
  // its bytes are never delivered), and the byte offsets where the first kMaxSkippedOffsets start.
  static constexpr size_t kMaxSkippedOffsets = 16;
  int64_t skipped_lines = 0;
  std::vector<int64_t> skipped_offsets;
};

// Where another cursor over the same file stands (see ReadNewSamples, "Stop"): a read that
// reaches it leaves its cursor level with that one, so the two can be read on together.
struct IndexStop {
  uint64_t dev = 0, ino = 0;  // the file that cursor read
  int64_t offset = -1;        // its offset; -1: no stop
  bool skipping = false;      // it stands inside an over-long line
};
inline IndexStop StopAt(const IndexCursor& c) { return {c.dev, c.ino, c.offset, c.skipping}; }

struct ReadOptions {
  // See ReadNewSamples.
  bool take_unterminated = false;
  int64_t max_bytes = 0;
  // A line whose sample (without '\n' and one trailing '\r') is longer is skipped; must be > 0.
  int64_t max_line_bytes = kDefaultMaxLineBytes;
  // Set: the index is the host file `host_path` under the rootfs mount `rootfs`, opened with
  // fs::OpenHostFile (host links taken as the host takes them, never above the rootfs; nothing but
  // a regular file opened); `path` then only names it in messages. Empty: `path` is opened as it
  // is (an S3 mirror in the LC's own spool, tests).
  std::string rootfs;
  std::string host_path;
  // No stop by default (see ReadNewSamples, "Stop").
  IndexStop stop;
};

// Reads what was written since cursor.offset and calls on_sample(line) for every new sample, in
// file order.
// - Only a regular file (after symlinks) is read. The open never blocks (O_NONBLOCK) and a FIFO,
//   device, socket or directory is an error naming the path and what it is, e.g.
//   "reading /data/index.txt: is a FIFO, not a regular file".
// - A line is complete once its '\n' is written. A trailing '\r' is stripped (CRLF). Empty lines
//   are not samples.
// - A line longer than options.max_line_bytes is never delivered, whole or in part: it is counted
//   in skipped_lines / skipped_offsets once, as soon as it is known to be too long (its '\n' may
//   come later), and reading goes on after its '\n'. It does not count as a sample (nor as the
//   csv header). The bytes of a partial last line are read about once however it grows: memory
//   stays within twice max_line_bytes plus two 64 KiB buffers.
// - csv: the first non-empty line of each file incarnation is the header (cursor.header), never a
//   sample.
// - Rewrite: (dev, ino) differs from the cursor's, or the size is below the bytes already seen
//   (cursor.offset + cursor.scanned). A first read with a default cursor is not a rewrite. (A
//   rewrite in place that leaves the file at least as long is indistinguishable from an append
//   and is read as one.) Then the new file's first cursor.offset bytes are read once (in 64 KiB
//   chunks, holes not read; with max_bytes > 0, at most max_bytes of them per call, `checking`
//   telling the caller to call again) and their digest compared with cursor.prefix_digest:
//   - equal (and the file at least that long): kPrefixKept, reading goes on at cursor.offset,
//     header and samples kept: only what follows is new (a file grown by replacement);
//   - otherwise (an empty consumed prefix included): kNewFile, reading restarts at byte 0 with
//   header_done = false: every sample of
//     the new file is new (a rotated index), and `samples` keeps counting on from its value;
//   - prefix digest unknown: kSkippedByCount, reading restarts at byte 0 with skip = samples
//     and header_done = false, as before digests existed.
// - Unterminated last line: taken (offset moves to EOF) only when take_unterminated is true and
//   the size equals cursor.tail_size, which only take_unterminated calls record. So with
//   take_unterminated passed on poll ticks only, the tail is taken once the file stayed unchanged
//   for one whole poll period; calls without it never take it and never restart that period. An
//   over-long tail is ended the same way (what is appended after it is a new line).
// - Missing file (ENOENT/ENOTDIR): missing = true, cursor unchanged, ok.
// - Any error (I/O, or from on_sample, returned unchanged) stops the read and leaves `cursor`
//   untouched, so the same call can be retried; samples delivered before the error are delivered
//   again by the retry.
// - max_bytes > 0 ends the call at the first line end (or, while skipping an over-long line, the
//   first 64 KiB chunk end) once bytes_read >= max_bytes, so a call reads at most about
//   max_bytes + max_line_bytes (a prefix check slice counts in bytes_read); the caller calls again
//   for the rest, without waiting.
//   Unterminated-tail handling happens only in a call that reaches the end of the file.
//   0 = read to the end of the file as it was when the call started.
// - Stop: when options.stop names the file read (dev, ino) and an offset beyond where this call
//   starts reading (after any rewrite handling), the file is read as if it ended there, and the
//   line ending there is taken whole, terminated or not, unless stop.skipping (then the over-long
//   line it is inside is being skipped, as by the cursor stopped at). A call that reaches the stop
//   leaves `cursor` where a cursor that read the same bytes up to there stands (same offset,
//   digest, header and skipping state), with tail_size -1. A stop on another file, or at or
//   before where the call starts, is ignored, except a stop at offset 0 for a fresh cursor (a
//   first read): that call reads nothing and leaves the cursor at the file's start, level with a
//   cursor that read the file while it was empty.
Result<ReadResult> ReadNewSamples(const std::string& path, IndexFormat format, IndexCursor& cursor,
                                  const ReadOptions& options,
                                  const std::function<Status(std::string_view sample)>& on_sample);

// The same with max_line_bytes = kDefaultMaxLineBytes.
Result<ReadResult> ReadNewSamples(const std::string& path, IndexFormat format, IndexCursor& cursor,
                                  bool take_unterminated, int64_t max_bytes,
                                  const std::function<Status(std::string_view sample)>& on_sample);

// For a log line naming the Dataset and its path, "" when not rewritten:
// "index replaced or rewritten: it starts with the 120 sample(s) (4096 bytes) already consumed;
//  only what follows is new", "index replaced or rewritten by a new file (it does not start with
//  the 120 sample(s), 4096 bytes, already consumed): all its samples are new", or
// "index replaced or rewritten (cursor without a prefix digest): its first 120 sample(s) are
//  taken as already consumed".
std::string RewriteMessage(const ReadResult& result);

// For a log line naming the Dataset: "skipped 2 line(s) longer than 1048576 bytes, at byte
// offset(s) 0, 2000000" ("..." appended when offsets were left out). "" when none was skipped.
std::string SkippedLinesMessage(const ReadResult& result, int64_t max_line_bytes);

}  // namespace sedna::dataset
