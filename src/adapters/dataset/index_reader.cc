#include "adapters/dataset/index_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>
#include <vector>

#include "adapters/dataset/regular_file.h"
#include "adapters/fs/confined.h"
#include "core/ascii.h"

namespace sedna::dataset {
namespace {

using core::EqualsIgnoreCase;

constexpr size_t kChunk = 64 * 1024;

Status ReadError(const std::string& path, int e) {
  return Status::Error("reading " + path + ": " + std::system_category().message(e));
}

constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

// n zero bytes (a hole) extend FNV-1a by a multiplication by the prime each: h * prime^n.
uint64_t ExtendWithZeros(uint64_t h, int64_t n) {
  for (uint64_t p = kFnvPrime; n > 0; n >>= 1, p *= p) {
    if (n & 1) h *= p;
  }
  return h;
}

// Extends `h` with the file's bytes [from, to), read in chunks (holes are not read). Adds the
// bytes read to `bytes_read`. The file ending before `to` is an error (it changed meanwhile).
Status DigestRange(int fd, const std::string& path, int64_t from, int64_t to, uint64_t& h,
                   int64_t& bytes_read) {
  const size_t buf_size = static_cast<size_t>(std::clamp<int64_t>(to - from, 1, kChunk));
  std::unique_ptr<char[]> buf;  // not zeroed, as in ReadNewSamples
  for (int64_t pos = from; pos < to;) {
    const off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) {  // a hole up to the end of the file
      h = ExtendWithZeros(h, to - pos);
      break;
    }
    if (data > pos) {
      const int64_t zeros = std::min<int64_t>(data, to) - pos;
      h = ExtendWithZeros(h, zeros);
      pos += zeros;
      continue;
    }
    if (!buf) buf = std::make_unique_for_overwrite<char[]>(buf_size);
    const size_t want = static_cast<size_t>(std::min<int64_t>(buf_size, to - pos));
    const ssize_t n = ::pread(fd, buf.get(), want, pos);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReadError(path, errno);
    if (n == 0) return Status::Error("reading " + path + ": truncated while reading");
    h = ExtendPrefixDigest(h, std::string_view(buf.get(), static_cast<size_t>(n)));
    bytes_read += n;
    pos += n;
  }
  return Status::Ok();
}

}  // namespace

uint64_t ExtendPrefixDigest(uint64_t h, std::string_view bytes) {
  for (const char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= kFnvPrime;
  }
  return h;
}

std::string RewriteMessage(const ReadResult& r) {
  const std::string consumed = std::to_string(r.consumed_samples) + " sample(s)";
  const std::string bytes = std::to_string(r.consumed_bytes) + " bytes";
  switch (r.rewrite) {
    case Rewrite::kNone:
      return "";
    case Rewrite::kPrefixKept:
      return "index replaced or rewritten: it starts with the " + consumed + " (" + bytes +
             ") already consumed; only what follows is new";
    case Rewrite::kNewFile:
      return "index replaced or rewritten by a new file (it does not start with the " + consumed +
             ", " + bytes + ", already consumed): all its samples are new";
    case Rewrite::kSkippedByCount:
      return "index replaced or rewritten (cursor without a prefix digest): its first " + consumed +
             " are taken as already consumed";
  }
  return "";
}

Result<IndexFormat> ParseIndexFormat(std::string_view format) {
  if (EqualsIgnoreCase(format, "txt")) return IndexFormat::kTxt;
  if (EqualsIgnoreCase(format, "csv")) return IndexFormat::kCsv;
  return Result<IndexFormat>::Error("format: unsupported \"" + std::string(format) +
                                    "\" (expected txt or csv)");
}

std::string SkippedLinesMessage(const ReadResult& result, int64_t max_line_bytes) {
  if (result.skipped_lines == 0) return "";
  std::string m = "skipped " + std::to_string(result.skipped_lines) + " line(s) longer than " +
                  std::to_string(max_line_bytes) + " bytes, at byte offset(s) ";
  for (size_t i = 0; i < result.skipped_offsets.size(); ++i) {
    if (i > 0) m += ", ";
    m += std::to_string(result.skipped_offsets[i]);
  }
  if (static_cast<int64_t>(result.skipped_offsets.size()) < result.skipped_lines) m += ", ...";
  return m;
}

Result<ReadResult> ReadNewSamples(const std::string& path, IndexFormat format, IndexCursor& cursor,
                                  bool take_unterminated, int64_t max_bytes,
                                  const std::function<Status(std::string_view sample)>& on_sample) {
  ReadOptions options;
  options.take_unterminated = take_unterminated;
  options.max_bytes = max_bytes;
  return ReadNewSamples(path, format, cursor, options, on_sample);
}

Result<ReadResult> ReadNewSamples(const std::string& path, IndexFormat format, IndexCursor& cursor,
                                  const ReadOptions& options,
                                  const std::function<Status(std::string_view sample)>& on_sample) {
  ReadResult res;
  const int64_t limit = options.max_line_bytes;
  if (limit <= 0) {
    return Status::Error("reading " + path + ": bad line limit " + std::to_string(limit));
  }
  // Nothing but a regular file is ever opened (a device's open can have effects of its own); the
  // fstat after the open closes the race with a replacement in between.
  struct stat st;
  int fd = -1;
  fs::UniqueFd host_fd;
  if (!options.host_path.empty()) {
    auto opened = fs::OpenHostFile(options.rootfs, options.host_path);
    if (!opened.ok()) return Status::Error("reading " + opened.message());
    if (!opened->has_value()) {
      res.missing = true;
      return res;
    }
    st = (*opened)->st;
    host_fd = std::move((*opened)->fd);
    fd = host_fd.get();
  } else {
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        res.missing = true;
        return res;
      }
      return ReadError(path, errno);
    }
    if (Status s = RequireRegularFile("reading", path, st.st_mode); !s.ok()) return s;
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        res.missing = true;
        return res;
      }
      return ReadError(path, errno);
    }
    host_fd = fs::UniqueFd(fd);
    if (::fstat(fd, &st) != 0) return ReadError(path, errno);
    if (Status s = RequireRegularFile("reading", path, st.st_mode); !s.ok()) return s;
  }

  IndexCursor c = cursor;
  const bool fresh = c.dev == 0 && c.ino == 0 && c.offset == 0 && c.samples == 0;
  if (c.skipping) c.scanned = 0;
  int64_t eof = st.st_size;
  const bool same_file = c.dev == st.st_dev && c.ino == st.st_ino;
  if (!same_file || eof < c.offset + c.scanned) {
    Rewrite kind = Rewrite::kNewFile;
    if (fresh) {
      kind = Rewrite::kNone;
    } else if (!c.prefix_digest_known) {
      kind = Rewrite::kSkippedByCount;
    } else if (c.offset > 0 && eof >= c.offset) {
      // Bounded: the consumed length, once per rewrite, in max_bytes slices.
      if (c.check_at < 0 || c.check_dev != st.st_dev || c.check_ino != st.st_ino) {
        c.check_dev = st.st_dev;
        c.check_ino = st.st_ino;
        c.check_at = 0;
        c.check_digest = kEmptyPrefixDigest;
      }
      const int64_t until =
          options.max_bytes > 0 ? std::min(c.offset, c.check_at + options.max_bytes) : c.offset;
      Status s = DigestRange(fd, path, c.check_at, until, c.check_digest, res.prefix_bytes_checked);
      res.bytes_read += res.prefix_bytes_checked;
      if (!s.ok()) return s;
      c.check_at = until;
      if (until < c.offset) {
        res.checking = true;
        cursor = std::move(c);
        return res;
      }
      if (c.check_digest == c.prefix_digest) kind = Rewrite::kPrefixKept;
    }
    res.rewrite = kind;
    res.rewritten = kind != Rewrite::kNone;
    if (res.rewritten) {
      res.consumed_bytes = c.offset;
      res.consumed_samples = kind == Rewrite::kSkippedByCount ? c.samples : c.prefix_samples;
      res.file_bytes = eof;
    }
    c.dev = st.st_dev;
    c.ino = st.st_ino;
    c.tail_size = -1;
    c.scanned = 0;
    c.check_at = -1;
    if (kind != Rewrite::kPrefixKept) {
      c.offset = 0;
      c.skip = kind == Rewrite::kSkippedByCount ? c.samples : 0;
      c.header_done = false;
      c.skipping = false;
      c.prefix_digest = kEmptyPrefixDigest;
      c.prefix_samples = 0;
      c.prefix_digest_known = true;
    }
  } else {
    c.check_at = -1;  // the file checked is gone again
  }
  // Stop: this file read as if it ended where the other cursor stands.
  const IndexStop& stop = options.stop;
  bool at_stop = stop.offset >= 0 && stop.dev == c.dev && stop.ino == c.ino &&
                 (stop.offset > c.offset || (fresh && stop.offset == 0)) && stop.offset <= eof;
  if (at_stop) {
    eof = stop.offset;
    if (c.offset + c.scanned > eof) c.scanned = 0;
  }
  // Moves c.offset past `bytes` (the file's bytes at c.offset), extending the prefix digest.
  auto consume = [&](std::string_view bytes) {
    c.prefix_digest = ExtendPrefixDigest(c.prefix_digest, bytes);
    c.offset += static_cast<int64_t>(bytes.size());
  };

  auto note_skipped = [&](int64_t at) {
    ++res.skipped_lines;
    if (res.skipped_offsets.size() < ReadResult::kMaxSkippedOffsets) {
      res.skipped_offsets.push_back(at);
    }
  };

  auto take_line = [&](std::string_view line) -> Status {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (static_cast<int64_t>(line.size()) > limit) {
      note_skipped(c.offset);
      return Status::Ok();
    }
    if (line.empty()) return Status::Ok();
    if (format == IndexFormat::kCsv && !c.header_done) {
      c.header.assign(line);
      c.header_done = true;
      return Status::Ok();
    }
    if (c.skip > 0) {
      --c.skip;
      ++c.prefix_samples;
      return Status::Ok();
    }
    if (Status s = on_sample(line); !s.ok()) return s;
    ++c.prefix_samples;
    ++c.samples;
    ++res.new_samples;
    return Status::Ok();
  };

  // The line starting at c.offset: its first `missing` bytes were scanned by an earlier call and
  // are read again only once the line is complete; `line` holds the rest. At most limit + 1
  // bytes (one more may be the '\r' of a CRLF) are ever kept: past that the line is skipped.
  // (Peak: twice that, while the prefix is put in front.)
  std::string line;
  int64_t missing = c.skipping ? 0 : c.scanned;
  auto complete_line = [&]() -> Status {
    if (missing > 0) {
      line.insert(0, static_cast<size_t>(missing), '\0');
      for (int64_t got = 0; got < missing;) {
        const ssize_t n =
            ::pread(fd, line.data() + got, static_cast<size_t>(missing - got), c.offset + got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return ReadError(path, errno);
        if (n == 0) return Status::Error("reading " + path + ": truncated while reading");
        got += n;
        res.bytes_read += n;
      }
      missing = 0;
    }
    return take_line(line);
  };

  int64_t pos = c.offset + (c.skipping ? 0 : c.scanned);
  // Sized to what there is to read, up to a chunk, and not zeroed: most reads are a line or two
  // (zeroing 64 KiB each time was 65 k instructions, more than the rest of the read).
  const size_t buf_size = static_cast<size_t>(std::clamp<int64_t>(eof - pos, 1, kChunk));
  const auto buf_block = std::make_unique_for_overwrite<char[]>(buf_size);
  char* const buf = buf_block.get();
  bool budget_hit = false;
  auto over_budget = [&] { return options.max_bytes > 0 && res.bytes_read >= options.max_bytes; };
  while (pos < eof && !budget_hit) {
    if (c.skipping) {
      // A hole holds no '\n': a sparse file is skipped without reading (or caching) its zeros.
      const off_t data = ::lseek(fd, pos, SEEK_DATA);
      if (data > pos || (data < 0 && errno == ENXIO)) {
        pos = data < 0 ? eof : std::min<int64_t>(data, eof);
        c.prefix_digest = ExtendWithZeros(c.prefix_digest, pos - c.offset);
        c.offset = pos;
        continue;
      }
    }
    const size_t want = static_cast<size_t>(std::min<int64_t>(buf_size, eof - pos));
    const ssize_t n = ::pread(fd, buf, want, pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path, errno);
    }
    if (n == 0) {  // truncated while reading
      eof = pos;
      at_stop = false;
      break;
    }
    res.bytes_read += n;
    const int64_t chunk_at = pos;
    pos += n;
    size_t i = 0;
    while (i < static_cast<size_t>(n)) {
      const void* nl = std::memchr(buf + i, '\n', static_cast<size_t>(n) - i);
      const size_t seg_end = nl ? static_cast<const char*>(nl) - buf : n;
      // This chunk's bytes from i through the '\n' (or to its end).
      const std::string_view rest(buf + i, (nl ? seg_end + 1 : n) - i);
      if (c.skipping) {
        consume(rest);
        if (nl == nullptr) break;
        c.skipping = false;
      } else {
        const int64_t len = chunk_at + static_cast<int64_t>(seg_end) - c.offset;
        if (len - 1 > limit) {  // too long even without a '\r': skip it from here on
          note_skipped(c.offset);
          if (missing > 0) {  // scanned by an earlier call: read again for the digest only
            if (Status s = DigestRange(fd, path, c.offset, c.offset + missing, c.prefix_digest,
                                       res.bytes_read);
                !s.ok()) {
              return s;
            }
            c.offset += missing;
            missing = 0;
          }
          consume(line);
          line.clear();
          consume(rest);
          if (nl == nullptr) {
            c.skipping = true;
            break;
          }
        } else {
          line.append(buf + i, seg_end - i);
          if (nl == nullptr) break;
          if (Status s = complete_line(); !s.ok()) return s;
          consume(line);
          consume("\n");
          line.clear();
        }
      }
      i = seg_end + 1;
      if (over_budget()) {
        budget_hit = true;
        break;
      }
    }
    if (c.skipping && over_budget()) budget_hit = true;
  }
  // After a budget stop the rest of the last chunk was not scanned: it is read again.
  c.scanned = c.skipping || budget_hit ? 0 : pos - c.offset;

  if (!budget_hit || c.offset == eof) {
    if (at_stop) {
      // The line the other cursor ended at the stop is ended here too (unless it is skipping it).
      if (!stop.skipping && (c.offset < eof || c.skipping)) {
        if (!c.skipping) {
          if (Status s = complete_line(); !s.ok()) return s;
          consume(line);
        }
        c.offset = eof;
        c.scanned = 0;
        c.skipping = false;
      }
      c.tail_size = -1;
    } else if (c.offset == eof && !c.skipping) {
      c.tail_size = -1;
    } else if (options.take_unterminated) {
      if (c.tail_size == eof) {
        if (!c.skipping) {
          if (Status s = complete_line(); !s.ok()) return s;
          consume(line);
        }
        c.offset = eof;  // already there: the loop read to the end
        c.scanned = 0;
        c.skipping = false;
        c.tail_size = -1;
      } else {
        c.tail_size = eof;
      }
    }
  }
  cursor = std::move(c);
  return res;
}

}  // namespace sedna::dataset
