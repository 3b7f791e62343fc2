#include "adapters/dataset/index_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "adapters/dataset/regular_file.h"

namespace sedna::dataset {
namespace {

constexpr size_t kChunk = 64 * 1024;

Status ReadError(const std::string& path, int e) {
  return Status::Error("reading " + path + ": " + std::system_category().message(e));
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

}  // namespace

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
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      res.missing = true;
      return res;
    }
    return ReadError(path, errno);
  }
  if (Status s = RequireRegularFile("reading", path, st.st_mode); !s.ok()) return s;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      res.missing = true;
      return res;
    }
    return ReadError(path, errno);
  }
  FdCloser closer(fd);
  if (::fstat(fd, &st) != 0) return ReadError(path, errno);
  if (Status s = RequireRegularFile("reading", path, st.st_mode); !s.ok()) return s;

  IndexCursor c = cursor;
  if (c.skipping) c.scanned = 0;
  int64_t eof = st.st_size;
  const bool same_file = c.dev == st.st_dev && c.ino == st.st_ino;
  if (!same_file || eof < c.offset + c.scanned) {
    const bool fresh = c.dev == 0 && c.ino == 0 && c.offset == 0 && c.samples == 0;
    res.rewritten = !fresh;
    c.dev = st.st_dev;
    c.ino = st.st_ino;
    c.offset = 0;
    c.skip = c.samples;
    c.header_done = false;
    c.tail_size = -1;
    c.scanned = 0;
    c.skipping = false;
  }

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
      return Status::Ok();
    }
    if (Status s = on_sample(line); !s.ok()) return s;
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

  std::string buf(kChunk, '\0');
  int64_t pos = c.offset + (c.skipping ? 0 : c.scanned);
  bool budget_hit = false;
  auto over_budget = [&] { return options.max_bytes > 0 && res.bytes_read >= options.max_bytes; };
  while (pos < eof && !budget_hit) {
    if (c.skipping) {
      // A hole holds no '\n': a sparse file is skipped without reading (or caching) its zeros.
      const off_t data = ::lseek(fd, pos, SEEK_DATA);
      if (data > pos || (data < 0 && errno == ENXIO)) {
        pos = data < 0 ? eof : std::min<int64_t>(data, eof);
        c.offset = pos;
        continue;
      }
    }
    const size_t want = static_cast<size_t>(std::min<int64_t>(kChunk, eof - pos));
    const ssize_t n = ::pread(fd, buf.data(), want, pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path, errno);
    }
    if (n == 0) {  // truncated while reading
      eof = pos;
      break;
    }
    res.bytes_read += n;
    const int64_t chunk_at = pos;
    pos += n;
    size_t i = 0;
    while (i < static_cast<size_t>(n)) {
      const void* nl = std::memchr(buf.data() + i, '\n', static_cast<size_t>(n) - i);
      const size_t seg_end = nl ? static_cast<const char*>(nl) - buf.data() : n;
      if (c.skipping) {
        if (nl == nullptr) {
          c.offset = pos;
          break;
        }
        c.skipping = false;
      } else {
        const int64_t len = chunk_at + static_cast<int64_t>(seg_end) - c.offset;
        if (len - 1 > limit) {  // too long even without a '\r': skip it from here on
          note_skipped(c.offset);
          line.clear();
          missing = 0;
          if (nl == nullptr) {
            c.skipping = true;
            c.offset = pos;
            break;
          }
        } else {
          line.append(buf.data() + i, seg_end - i);
          if (nl == nullptr) break;
          if (Status s = complete_line(); !s.ok()) return s;
          line.clear();
        }
      }
      c.offset = chunk_at + static_cast<int64_t>(seg_end) + 1;
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
    if (c.offset == eof && !c.skipping) {
      c.tail_size = -1;
    } else if (options.take_unterminated) {
      if (c.tail_size == eof) {
        if (!c.skipping) {
          if (Status s = complete_line(); !s.ok()) return s;
        }
        c.offset = eof;
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
