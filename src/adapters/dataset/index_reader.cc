#include "adapters/dataset/index_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

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

Result<ReadResult> ReadNewSamples(const std::string& path, IndexFormat format, IndexCursor& cursor,
                                  bool take_unterminated, int64_t max_bytes,
                                  const std::function<Status(std::string_view sample)>& on_sample) {
  ReadResult res;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      res.missing = true;
      return res;
    }
    return ReadError(path, errno);
  }
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ReadError(path, errno);
  if (S_ISDIR(st.st_mode)) return Status::Error("reading " + path + ": is a directory");

  IndexCursor c = cursor;
  int64_t eof = st.st_size;
  const bool same_file = c.dev == st.st_dev && c.ino == st.st_ino;
  if (!same_file || eof < c.offset) {
    const bool fresh = c.dev == 0 && c.ino == 0 && c.offset == 0 && c.samples == 0;
    res.rewritten = !fresh;
    c.dev = st.st_dev;
    c.ino = st.st_ino;
    c.offset = 0;
    c.skip = c.samples;
    c.header_done = false;
    c.tail_size = -1;
  }

  auto take_line = [&](std::string_view line) -> Status {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
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

  // buf[begin, end) holds bytes [c.offset, pos) of the file; no '\n' in buf[begin, scanned).
  std::string buf(kChunk, '\0');
  size_t begin = 0, end = 0, scanned = 0;
  int64_t pos = c.offset;
  const int64_t start = c.offset;
  bool budget_hit = false;
  while (pos < eof && !budget_hit) {
    if (begin > 0) {
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      scanned -= begin;
      begin = 0;
    }
    if (end == buf.size()) buf.resize(buf.size() * 2);  // a line longer than the buffer
    const size_t want = static_cast<size_t>(std::min<int64_t>(buf.size() - end, eof - pos));
    const ssize_t n = ::pread(fd, buf.data() + end, want, pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path, errno);
    }
    if (n == 0) {  // truncated while reading
      eof = pos;
      break;
    }
    res.bytes_read += n;
    pos += n;
    end += static_cast<size_t>(n);
    while (scanned < end) {
      const void* nl = std::memchr(buf.data() + scanned, '\n', end - scanned);
      if (nl == nullptr) {
        scanned = end;
        break;
      }
      const size_t line_end = static_cast<const char*>(nl) - buf.data();
      if (Status s = take_line(std::string_view(buf.data() + begin, line_end - begin)); !s.ok()) {
        return s;
      }
      c.offset += static_cast<int64_t>(line_end + 1 - begin);
      begin = scanned = line_end + 1;
      if (max_bytes > 0 && c.offset - start >= max_bytes) {
        budget_hit = true;
        break;
      }
    }
  }

  if (!budget_hit || c.offset == eof) {
    if (c.offset == eof) {
      c.tail_size = -1;
    } else if (take_unterminated) {
      if (c.tail_size == eof) {
        if (Status s = take_line(std::string_view(buf.data() + begin, end - begin)); !s.ok()) {
          return s;
        }
        c.offset = eof;
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
