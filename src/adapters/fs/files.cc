#include "adapters/fs/files.h"

#include "adapters/fs/confined.h"
#include "adapters/fs/errno_status.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <system_error>

namespace sedna::fs {

std::string FileKind(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFIFO:
      return "a FIFO";
    case S_IFDIR:
      return "a directory";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "";
  }
}

std::string Dirname(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  size_t end = path.find_last_not_of('/', slash);
  if (end == std::string::npos) return "/";
  return path.substr(0, end + 1);
}

namespace {

using internal::ErrnoError;
using internal::ErrnoText;
using internal::kCopyChunk;

std::atomic<bool> g_hook_set{false};
std::mutex g_hook_mu;
std::function<int(const std::string&)> g_hook;

}  // namespace

int internal::InjectedFault(const std::string& path) {
  if (!g_hook_set.load(std::memory_order_acquire)) return 0;
  std::function<int(const std::string&)> hook;
  {
    std::lock_guard<std::mutex> lock(g_hook_mu);
    hook = g_hook;
  }
  return hook ? hook(path) : 0;
}

namespace {

using internal::InjectedFault;

// Owns an fd; closes it on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports close(2)'s error (which can carry a deferred write error).
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

std::string Basename(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string TempNameFor(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   (static_cast<uint64_t>(::getpid()) << 32));
  std::string dir = Dirname(path);
  std::string name = "." + Basename(path) + ".tmp-" + std::to_string(::getpid()) + "-" +
                     std::to_string(counter.fetch_add(1)) + "-" + std::to_string(rng() % 1000000);
  return dir == "/" ? "/" + name : dir + "/" + name;
}

Status FsyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("syncing directory " + dir, errno);
  if (int e = InjectedFault(dir); e != 0) return ErrnoError("syncing directory " + dir, e);
  if (::fsync(fd.get()) != 0) return ErrnoError("syncing directory " + dir, errno);
  return Status::Ok();
}

// Writes the target through a temp file beside it: fill(fd) writes the content, then fsync,
// rename over `path`, fsync the directory. `mode` is applied with fchmod when >= 0.
// Removes ".<name>.tmp-<pid>-..." files beside `path` left by a process that no longer exists
// (a writer killed mid-write); temp files of live processes are left alone.
void RemoveStaleTemps(const std::string& path) {
  const std::string dir = Dirname(path);
  const std::string prefix = "." + Basename(path) + ".tmp-";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

Status ReplaceAtomically(const std::string& path, int mode,
                         const std::function<Status(int fd)>& fill) {
  RemoveStaleTemps(path);
  std::string temp;
  int fd_raw = -1;
  for (int attempt = 0; attempt < 16; ++attempt) {
    temp = TempNameFor(path);
    fd_raw = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_raw >= 0 || errno != EEXIST) break;
  }
  if (fd_raw < 0) return ErrnoError("writing " + path + ": creating temp file " + temp, errno);
  Fd fd(fd_raw);
  auto fail = [&](Status s) {
    ::unlink(temp.c_str());
    return s;
  };
  if (mode >= 0 && ::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) {
    return fail(ErrnoError("writing " + path + ": setting mode", errno));
  }
  if (Status s = fill(fd.get()); !s.ok()) return fail(s);
  if (::fsync(fd.get()) != 0) return fail(ErrnoError("syncing " + path, errno));
  if (int e = fd.Close(); e != 0) return fail(ErrnoError("writing " + path, e));
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fail(ErrnoError("replacing " + path, errno));
  }
  if (Status s = FsyncDir(Dirname(path)); !s.ok()) {
    return s.WithMessage(s.message() + " (" + path + " was already replaced)");
  }
  return Status::Ok();
}

// Copies [begin, end) of `src` (or to EOF when end < 0) into `out` at *out_off.
Status CopyRange(int src_fd, const std::string& src, int64_t begin, int64_t end, int out_fd,
                 const std::string& out_path, int64_t* out_off, char* buf, size_t buf_size) {
  int64_t pos = begin;
  while (end < 0 || pos < end) {
    size_t want = buf_size;
    if (end >= 0) want = static_cast<size_t>(std::min<int64_t>(end - pos, buf_size));
    ssize_t n = ::pread(src_fd, buf, want, pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("reading " + src, errno);
    }
    if (n == 0) {
      if (end < 0) break;
      return Status::Error("reading " + src + ": range [" + std::to_string(begin) + ", " +
                           std::to_string(end) + ") extends past the end of the file (" +
                           std::to_string(pos) + " bytes)");
    }
    if (Status s = WriteAllAt(out_fd, *out_off, std::string_view(buf, n), out_path); !s.ok()) {
      return s;
    }
    pos += n;
    *out_off += n;
  }
  return Status::Ok();
}

}  // namespace

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Status::Error("mkdir: empty path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return Status::Error("mkdir " + path + ": exists and is not a directory");
  }
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix.back() == '/') continue;  // "//" runs
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    int e = errno;
    if (e == EEXIST) {
      if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
      return Status::Error("mkdir " + prefix + ": exists and is not a directory");
    }
    return ErrnoError("mkdir " + prefix, e);
  }
  return Status::Ok();
}

Status WriteAllAt(int fd, int64_t offset, std::string_view data, const std::string& path) {
  if (int e = InjectedFault(path); e != 0) return ErrnoError("writing " + path, e);
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::pwrite(fd, p, left, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("writing " + path, errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
    offset += n;
  }
  return Status::Ok();
}

Status WriteRangesTo(int fd, const std::string& path, std::string_view prefix,
                     const std::vector<FileRange>& ranges) {
  for (const FileRange& r : ranges) {
    if (r.begin < 0 || r.end < r.begin) {
      return Status::Error("reading " + r.path + ": invalid range [" + std::to_string(r.begin) +
                           ", " + std::to_string(r.end) + ")");
    }
  }
  int64_t off = 0;
  if (Status s = WriteAllAt(fd, off, prefix, path); !s.ok()) return s;
  off += static_cast<int64_t>(prefix.size());
  // Sized to the largest range, up to a chunk, and not zeroed: a round's file is often a few lines
  // (zeroing the whole chunk cost more than the copy).
  int64_t largest = 1;
  for (const FileRange& r : ranges) largest = std::max(largest, r.end - r.begin);
  const size_t buf_size = static_cast<size_t>(std::min<int64_t>(largest, kCopyChunk));
  std::unique_ptr<char[]> buf;
  for (const FileRange& r : ranges) {
    if (r.begin == r.end) continue;
    Fd src(::open(r.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (src.get() < 0) return ErrnoError("reading " + r.path, errno);
    if (!buf) buf = std::make_unique_for_overwrite<char[]>(buf_size);
    if (Status s =
            CopyRange(src.get(), r.path, r.begin, r.end, fd, path, &off, buf.get(), buf_size);
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status WriteFileFromRanges(const std::string& path, std::string_view prefix,
                           const std::vector<FileRange>& ranges) {
  for (const FileRange& r : ranges) {
    if (r.begin < 0 || r.end < r.begin) {
      return Status::Error("reading " + r.path + ": invalid range [" + std::to_string(r.begin) +
                           ", " + std::to_string(r.end) + ")");
    }
  }
  return ReplaceAtomically(
      path, -1, [&](int fd) -> Status { return WriteRangesTo(fd, path, prefix, ranges); });
}

Status AtomicWriteFile(const std::string& path, std::string_view content) {
  return WriteFileFromRanges(path, content, {});
}

Status AtomicCopyFile(const std::string& src, const std::string& dst) {
  Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return ErrnoError("copying " + src, errno);
  struct stat st;
  if (::fstat(in.get(), &st) != 0) return ErrnoError("copying " + src, errno);
  if (S_ISDIR(st.st_mode)) return Status::Error("copying " + src + ": is a directory");
  if (!S_ISREG(st.st_mode)) return Status::Error("copying " + src + ": not a regular file");
  if (Status s = MakeDirs(Dirname(dst)); !s.ok()) return s.With("copying " + src + " to " + dst);
  return ReplaceAtomically(dst, static_cast<int>(st.st_mode & 07777), [&](int fd) -> Status {
    auto buf = std::make_unique_for_overwrite<char[]>(kCopyChunk);
    int64_t off = 0;
    return CopyRange(in.get(), src, 0, -1, fd, dst, &off, buf.get(), kCopyChunk);
  });
}

Status SyncDir(const std::string& dir) { return FsyncDir(dir); }

std::string CleanPath(std::string_view path) {
  if (path.empty()) return ".";
  const bool rooted = path[0] == '/';
  const size_t n = path.size();
  std::string out;
  out.reserve(n);
  size_t r = 0, dotdot = 0;
  if (rooted) {
    out.push_back('/');
    r = dotdot = 1;
  }
  while (r < n) {
    if (path[r] == '/' || (path[r] == '.' && (r + 1 == n || path[r + 1] == '/'))) {
      ++r;  // an empty or "." element
    } else if (path[r] == '.' && path[r + 1] == '.' && (r + 2 == n || path[r + 2] == '/')) {
      r += 2;
      if (out.size() > dotdot) {
        size_t w = out.size() - 1;
        while (w > dotdot && out[w] != '/') --w;
        out.resize(w);
      } else if (!rooted) {
        if (!out.empty()) out.push_back('/');
        out += "..";
        dotdot = out.size();
      }
    } else {
      if ((rooted && out.size() != 1) || (!rooted && !out.empty())) out.push_back('/');
      for (; r < n && path[r] != '/'; ++r) out.push_back(path[r]);
    }
  }
  return out.empty() ? "." : out;
}

std::string JoinRootfs(const std::string& rootfs, const std::string& host_path) {
  if (rootfs.empty()) return host_path.empty() ? std::string() : CleanPath(host_path);
  return CleanPath(rootfs + "/" + CleanPath("/" + host_path));
}

std::string StripRootfs(const std::string& rootfs, const std::string& path) {
  if (rootfs.empty()) return path;
  const std::string root = CleanPath(rootfs);
  if (root == "/" || root == ".") return path;
  const std::string cleaned = CleanPath(path);
  if (cleaned == root) return "/";
  if (cleaned.size() <= root.size() || cleaned.compare(0, root.size(), root) != 0 ||
      cleaned[root.size()] != '/') {
    return path;
  }
  std::string rest = cleaned.substr(root.size());
  if (path.back() == '/' && rest != "/") rest.push_back('/');
  return rest;
}

bool IsS3Url(std::string_view url) {
  static constexpr std::string_view kScheme = "s3://";
  if (url.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = url[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return false;
  }
  return true;
}

void SetWriteFaultForTest(std::function<int(const std::string& path)> hook) {
  std::lock_guard<std::mutex> lock(g_hook_mu);
  g_hook = std::move(hook);
  g_hook_set.store(static_cast<bool>(g_hook), std::memory_order_release);
}

}  // namespace sedna::fs
