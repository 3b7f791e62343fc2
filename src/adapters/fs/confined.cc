#include "adapters/fs/confined.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <system_error>

#include "adapters/fs/errno_status.h"
#include "adapters/fs/files.h"

namespace sedna::fs {

namespace {

using internal::ErrnoError;
using internal::ErrnoText;
using internal::kCopyChunk;
// Components looked at while opening one root, links expanded included: a bound on the work a
// link farm can make the walk do.
constexpr size_t kMaxRootSteps = 4096;

std::string JoinName(const std::string& dir, std::string_view rel) {
  if (rel.empty()) return dir;
  if (dir.empty() || dir.back() == '/') return dir + std::string(rel);
  return dir + "/" + std::string(rel);
}

bool IsOneComponent(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos && name.size() <= 255;
}

// "a//b/./c" -> {"a", "b", "c"}; "" and "." -> {}. A ".." or an absolute path is refused.
Result<std::vector<std::string>> SplitBeneath(std::string_view rel, const std::string& where) {
  if (rel.size() > kMaxPathBytes) {
    return Status::Error(where + ": " + std::to_string(rel.size()) + " bytes, over the " +
                         std::to_string(kMaxPathBytes) + " a path may have");
  }
  if (!rel.empty() && rel[0] == '/') return Status::Error(where + ": not a relative path");
  std::vector<std::string> out;
  size_t i = 0;
  while (i < rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string_view::npos) j = rel.size();
    std::string_view c = rel.substr(i, j - i);
    i = j + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") return Status::Error(where + ": \"..\" is not allowed beneath a root");
    if (c.find('\0') != std::string_view::npos) return Status::Error(where + ": NUL in the path");
    if (c.size() > 255) return Status::Error(where + ": a component is over 255 bytes");
    out.emplace_back(c);
    if (out.size() > kMaxPathComponents) {
      return Status::Error(where + ": over the " + std::to_string(kMaxPathComponents) +
                           " components a path may have");
    }
  }
  return out;
}

std::atomic<int> g_resolver{static_cast<int>(Resolver::kAuto)};

long Openat2(int dirfd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.mode = mode;
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

// Why opening `name` in `dirfd` without following it failed with `e`: a link says so.
Status NoFollowError(int dirfd, const std::string& name, const std::string& shown, int e) {
  struct stat st;
  if ((e == ELOOP || e == ENOTDIR || e == EXDEV) &&
      ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return Status::Error(shown + " is a symbolic link (links are not followed)");
  }
  if (e == ENOTDIR) return Status::Error(shown + ": not a directory");
  return ErrnoError(shown, e);
}

std::string JoinPath(const std::string& root_shown, const std::vector<std::string>& parts) {
  std::string shown = root_shown;
  for (const std::string& p : parts) shown = JoinName(shown, p);
  return shown;
}

// Opens `parts` beneath `dirfd` with `flags` for the last one (the ones before as O_PATH
// directories), nothing followed. `create`: missing directories are made (the last one too when
// `flags` has O_DIRECTORY).
Result<UniqueFd> OpenBeneath(int dirfd, const std::string& root_shown,
                             const std::vector<std::string>& parts, int flags, bool create) {
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (parts.empty()) {
    const int fd = ::openat(dirfd, ".", flags);
    if (fd < 0) return ErrnoError(root_shown, errno);
    return UniqueFd(fd);
  }
  // With `create`, the whole path is tried first too (it is there but for a round's new
  // directory); any failure sends the walk below, which makes what is missing and names what is
  // in the way as without openat2.
  if (ActiveResolver() == Resolver::kOpenat2) {
    std::string rel;
    for (const std::string& p : parts) rel += (rel.empty() ? "" : "/") + p;
    for (int attempt = 0;; ++attempt) {
      const long fd = Openat2(dirfd, rel.c_str(), static_cast<uint64_t>(flags), 0,
                              RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
      if (fd >= 0) return UniqueFd(static_cast<int>(fd));
      const int e = errno;
      if ((e == EAGAIN || e == EINTR) && attempt < 16) continue;  // a rename raced the lookup
      if (create) break;
      const std::string shown = JoinName(root_shown, rel);
      if (e == ELOOP || e == EXDEV) {
        return Status::Error(shown + ": a symbolic link on the way (links are not followed)");
      }
      if (e == ENOTDIR) return Status::Error(shown + ": a component is not a directory");
      return ErrnoError(shown, e);
    }
  }
  UniqueFd cur;
  int at = dirfd;
  std::string shown = root_shown;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const std::string& name = parts[i];
    shown = JoinName(shown, name);
    const bool dir = !last || (flags & O_DIRECTORY) != 0;
    const int f = last ? flags : (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = ::openat(at, name.c_str(), f);
    if (fd < 0 && errno == ENOENT && create && dir) {  // made, then opened as if it had been there
      if (::mkdirat(at, name.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoError("mkdir " + shown, errno);
      }
      fd = ::openat(at, name.c_str(), f);
    }
    if (fd < 0) {
      const int e = errno;
      // A missing component names the whole path, as openat2 does: the message does not depend
      // on the resolver (tests and users match the path, not the resolver's step).
      if (e == ENOENT) return ErrnoError(JoinPath(root_shown, parts), e);
      return NoFollowError(at, name, shown, e);
    }
    UniqueFd next(fd);
    if (dir) {
      struct stat st;
      if (::fstat(next.get(), &st) != 0) return ErrnoError(shown, errno);
      if (S_ISLNK(st.st_mode)) {
        return Status::Error(shown + " is a symbolic link (links are not followed)");
      }
      if (!S_ISDIR(st.st_mode)) return Status::Error(shown + ": not a directory");
    }
    cur = std::move(next);
    at = cur.get();
  }
  return cur;
}

std::string TempName(std::string_view name) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   (static_cast<uint64_t>(::getpid()) << 32));
  return "." + std::string(name.substr(0, 200)) + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1)) + "-" + std::to_string(rng() % 1000000);
}

// Removes ".<name>.tmp-<pid>-..." regular files of dead processes (a writer killed mid-write):
// the names this module creates, and only those.
void RemoveStaleTemps(int dirfd, std::string_view name) {
  const std::string prefix = "." + std::string(name.substr(0, 200)) + ".tmp-";
  const int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return;
  }
  size_t seen = 0;
  while (dirent* e = ::readdir(d)) {
    if (++seen > 65536) break;
    const std::string entry = e->d_name;
    if (entry.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(entry.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    struct stat st;
    if (::fstatat(dirfd, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    ::unlinkat(dirfd, entry.c_str(), 0);
  }
  ::closedir(d);
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = o.Release();
  }
  return *this;
}

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

FileId IdOf(const Stat& st) { return {st.st_dev, st.st_ino, st.birth_ns}; }

namespace {

// statx(2) of `name` at `dirfd` (flags: AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW) into `out`: 0 or an
// errno. A kernel without statx (ENOSYS) gets fstatat(2) and no birth time.
int StatInto(int dirfd, const char* name, int flags, Stat* out) {
  struct statx sx {};
  if (::statx(dirfd, name, flags | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS | STATX_BTIME, &sx) !=
      0) {
    const int e = errno;
    if (e != ENOSYS) return e;
    *out = Stat{};
    return ::fstatat(dirfd, name, out, flags) == 0 ? 0 : errno;
  }
  *out = Stat{};
  out->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  out->st_ino = sx.stx_ino;
  out->st_mode = sx.stx_mode;
  out->st_nlink = sx.stx_nlink;
  out->st_uid = sx.stx_uid;
  out->st_gid = sx.stx_gid;
  out->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
  out->st_size = static_cast<off_t>(sx.stx_size);
  out->st_blksize = static_cast<blksize_t>(sx.stx_blksize);
  out->st_blocks = static_cast<blkcnt_t>(sx.stx_blocks);
  out->st_atim = {sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec};
  out->st_mtim = {sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec};
  out->st_ctim = {sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec};
  if ((sx.stx_mask & STATX_BTIME) != 0 && sx.stx_btime.tv_sec > 0) {
    out->birth_ns =
        static_cast<uint64_t>(sx.stx_btime.tv_sec) * 1'000'000'000U + sx.stx_btime.tv_nsec;
  }
  return 0;
}

}  // namespace

Result<std::string> ReadUpTo(const OpenedFile& f, size_t max) {
  std::string out(max, '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n =
        ::pread(f.fd.get(), out.data() + got, out.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("reading " + f.path, errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

Result<Stat> Fstat(int fd, const std::string& path) {
  Stat st;
  if (const int e = StatInto(fd, "", AT_EMPTY_PATH, &st); e != 0) return ErrnoError(path, e);
  return st;
}

Status CheckPathBounds(std::string_view path, std::string_view field) {
  const std::string f(field);
  if (path.size() > kMaxPathBytes) {
    return Status::Error(f + ": " + std::to_string(path.size()) + " bytes, over the " +
                         std::to_string(kMaxPathBytes) + " a path may have");
  }
  if (path.find('\0') != std::string_view::npos) return Status::Error(f + ": NUL in the path");
  size_t components = 0;
  for (size_t i = 0; i < path.size();) {
    while (i < path.size() && path[i] == '/') ++i;
    if (i == path.size()) break;
    ++components;
    while (i < path.size() && path[i] != '/') ++i;
  }
  if (components > kMaxPathComponents) {
    return Status::Error(f + ": " + std::to_string(components) + " path components, over the " +
                         std::to_string(kMaxPathComponents) + " allowed");
  }
  return Status::Ok();
}

std::optional<std::string> RelativeBeneath(std::string_view dir, std::string_view path) {
  if (dir.empty() || path.empty() || dir[0] != '/' || path[0] != '/') return std::nullopt;
  const std::string d = CleanPath(dir), p = CleanPath(path);
  if (d == "/") return p.substr(1);
  if (p == d) return std::string();
  if (p.size() > d.size() && p.compare(0, d.size(), d) == 0 && p[d.size()] == '/') {
    return p.substr(d.size() + 1);
  }
  return std::nullopt;
}

bool KernelHasOpenat2() {
  static const bool has = [] {
    const long fd = Openat2(AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                            RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return false;  // ENOSYS before 5.6; EPERM under some seccomp profiles
    ::close(static_cast<int>(fd));
    return true;
  }();
  return has;
}

void SetResolver(Resolver r) { g_resolver.store(static_cast<int>(r), std::memory_order_relaxed); }

Resolver ActiveResolver() {
  const auto r = static_cast<Resolver>(g_resolver.load(std::memory_order_relaxed));
  if (r == Resolver::kWalk) return Resolver::kWalk;
  if (r == Resolver::kOpenat2) return KernelHasOpenat2() ? Resolver::kOpenat2 : Resolver::kWalk;
  return KernelHasOpenat2() ? Resolver::kOpenat2 : Resolver::kWalk;
}

DirAndName SplitDirName(std::string_view host_path) {
  const std::string p(host_path);
  if (p.empty() || p.back() == '/') return {CleanPath(p.empty() ? "." : p), ""};
  const std::string c = CleanPath(p);
  const size_t slash = c.rfind('/');
  if (slash == std::string::npos) return {".", c};
  if (c == "/") return {"/", ""};
  return {slash == 0 ? "/" : c.substr(0, slash), c.substr(slash + 1)};
}

Result<Dir> Dir::OpenTrusted(const std::string& path, bool create) {
  if (create) {
    if (Status s = MakeDirs(path); !s.ok()) return s;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening directory " + path, errno);
  return Dir(UniqueFd(fd), path);
}

namespace {

// What the host walk ends on: a directory (OpenHost), or a regular file (OpenHostFile).
struct HostWalkEnd {
  UniqueFd fd;
  Stat st{};
  bool missing = false;  // file walk only: the path (or a directory on it) does not exist
  static HostWalkEnd Missing() {
    HostWalkEnd end;
    end.missing = true;
    return end;
  }
};

// The walk behind OpenHost and OpenHostFile: `host_path`'s components opened one at a time under
// the rootfs without following them, a symlink met resolved as the host resolves it (absolute
// targets from the rootfs, ".." never above it). `file`: the last component, after links, must
// be a regular file: lstat'ed first (nothing else is ever opened: a device's open can have
// effects of its own), then opened O_RDONLY | O_NONBLOCK | O_NOFOLLOW and checked on its fd.
Result<HostWalkEnd> WalkHost(const std::string& rootfs, const std::string& host_dir, bool create,
                             bool file) {
  const std::string where = JoinRootfs(rootfs, host_dir);
  if (host_dir.empty() || host_dir[0] != '/') {
    return Status::Error(host_dir + ": not an absolute host path");
  }
  if (Status s = CheckPathBounds(host_dir, host_dir); !s.ok()) return s;
  const std::string root_path = rootfs.empty() ? "/" : rootfs;
  auto root = Dir::OpenTrusted(root_path, false);
  if (!root.ok()) return root.status();
  // A directory in one openat2 when the kernel has it: RESOLVE_IN_ROOT resolves links as the walk
  // below does (absolute targets from the rootfs, ".." never above it); magic links are refused.
  // Any failure (a missing component, a magic link, a loop, a rename racing a "..") takes the
  // walk, which makes what is missing and names what is wrong.
  if (!file && ActiveResolver() == Resolver::kOpenat2) {
    const std::string clean = CleanPath(host_dir);
    const std::string rel = clean.size() > 1 ? clean.substr(1) : ".";
    for (int attempt = 0; attempt < 4; ++attempt) {
      const long fd = Openat2(root->fd(), rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
                              RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
      if (fd >= 0) {
        HostWalkEnd end;
        end.fd = UniqueFd(static_cast<int>(fd));
        return end;
      }
      if (errno != EAGAIN && errno != EINTR) break;
    }
  }
  // The walk: `stack` holds the directories opened so far below the root (".." pops one, never
  // the root); `todo` the components still to take, a link's target spliced in front.
  std::vector<UniqueFd> stack;
  std::vector<std::string> names;  // the host path of stack.back(), by component
  std::deque<std::string> todo;
  {
    // ".." in a host path is taken lexically against the host's "/" (fs::JoinRootfs does too).
    auto parts = SplitBeneath(CleanPath(host_dir).substr(1), host_dir);
    if (!parts.ok()) return parts.status();
    todo.assign(parts->begin(), parts->end());
  }
  int links = 0;
  size_t steps = 0;
  auto shown = [&] {
    std::string h;
    for (const std::string& n : names) h += "/" + n;
    return JoinRootfs(rootfs, h.empty() ? "/" : h);
  };
  while (!todo.empty()) {
    if (++steps > kMaxRootSteps) return Status::Error(where + ": too many path components");
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!stack.empty()) {
        stack.pop_back();
        names.pop_back();
      }
      continue;
    }
    const int at = stack.empty() ? root->fd() : stack.back().get();
    if (file && todo.empty()) {
      struct stat lst;
      if (::fstatat(at, c.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0) {
        const int e = errno;
        if (e == ENOENT || e == ENOTDIR) {
          return HostWalkEnd::Missing();
        }
        return ErrnoError(JoinName(shown(), c), e);
      }
      if (!S_ISLNK(lst.st_mode)) {
        const std::string shown_file = JoinName(shown(), c);
        if (!S_ISREG(lst.st_mode)) {
          const std::string kind = FileKind(lst.st_mode);
          return Status::Error(shown_file + ": is " + (kind.empty() ? "not" : kind + ", not") +
                               " a regular file");
        }
        const int ffd =
            ::openat(at, c.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (ffd < 0) {
          const int e = errno;
          if (e == ENOENT) {
            return HostWalkEnd::Missing();
          }
          if (e == ELOOP) {
            return Status::Error(shown_file + ": replaced by a symbolic link while opened");
          }
          return ErrnoError(shown_file, e);
        }
        HostWalkEnd end;
        end.fd = UniqueFd(ffd);
        if (const int e = StatInto(ffd, "", AT_EMPTY_PATH, &end.st); e != 0) {
          return ErrnoError(shown_file, e);
        }
        // Checked on the fd: whatever was lstat'ed, this is what is read.
        if (!S_ISREG(end.st.st_mode)) {
          return Status::Error(shown_file + ": replaced by a non-regular file while opened");
        }
        const int fl = ::fcntl(ffd, F_GETFL);
        if (fl >= 0) ::fcntl(ffd, F_SETFL, fl & ~O_NONBLOCK);
        return end;
      }
      // A link at the file's own name: taken as the host takes it, below.
    }
    int fd = ::openat(at, c.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(at, c.c_str(), 0755) != 0 && errno != EEXIST) {
        return ErrnoError("mkdir " + JoinName(shown(), c), errno);
      }
      fd = ::openat(at, c.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      const int e = errno;
      struct stat st;
      if ((e == ENOTDIR || e == ELOOP) && ::fstatat(at, c.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        if (++links > kMaxRootSymlinks) {
          return Status::Error(where + ": more than " + std::to_string(kMaxRootSymlinks) +
                               " symbolic links on the way");
        }
        std::string target(kMaxPathBytes + 1, '\0');
        const ssize_t n = ::readlinkat(at, c.c_str(), target.data(), target.size());
        if (n < 0) return ErrnoError("reading link " + JoinName(shown(), c), errno);
        if (static_cast<size_t>(n) > kMaxPathBytes) {
          return Status::Error(JoinName(shown(), c) + ": link target over " +
                               std::to_string(kMaxPathBytes) + " bytes");
        }
        target.resize(static_cast<size_t>(n));
        if (!target.empty() && target[0] == '/') {  // absolute: from the host's "/" (the rootfs)
          stack.clear();
          names.clear();
        }
        std::vector<std::string> expanded;
        for (size_t i = 0; i < target.size();) {
          size_t j = target.find('/', i);
          if (j == std::string::npos) j = target.size();
          if (j > i) expanded.push_back(target.substr(i, j - i));
          i = j + 1;
        }
        if (expanded.size() + todo.size() > kMaxRootSteps) {
          return Status::Error(where + ": too many path components");
        }
        todo.insert(todo.begin(), expanded.begin(), expanded.end());
        continue;
      }
      if (file && (e == ENOENT || e == ENOTDIR)) {
        return HostWalkEnd::Missing();
      }
      if (e == ENOTDIR) return Status::Error(JoinName(shown(), c) + ": not a directory");
      return ErrnoError(JoinName(shown(), c), e);
    }
    stack.emplace_back(fd);
    names.push_back(std::move(c));
    if (stack.size() > kMaxPathComponents) {
      return Status::Error(where + ": deeper than " + std::to_string(kMaxPathComponents));
    }
  }
  if (file) return Status::Error(where + ": is a directory, not a regular file");
  const int at = stack.empty() ? root->fd() : stack.back().get();
  const int fd = ::openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(where, errno);
  HostWalkEnd end;
  end.fd = UniqueFd(fd);
  return end;
}

}  // namespace

Result<Dir> Dir::OpenHost(const std::string& rootfs, const std::string& host_dir, bool create) {
  auto end = WalkHost(rootfs, host_dir, create, /*file=*/false);
  if (!end.ok()) return end.status();
  return Dir(std::move(end->fd), JoinRootfs(rootfs, host_dir));
}

Result<std::optional<OpenedFile>> OpenHostFile(const std::string& rootfs,
                                               const std::string& host_path) {
  auto end = WalkHost(rootfs, host_path, /*create=*/false, /*file=*/true);
  if (!end.ok()) return end.status();
  if (end->missing) return std::optional<OpenedFile>();
  OpenedFile f;
  f.fd = std::move(end->fd);
  f.st = end->st;
  f.path = JoinRootfs(rootfs, host_path);
  return std::optional<OpenedFile>(std::move(f));
}

Result<Dir> Dir::Sub(std::string_view rel, bool create) const {
  const std::string shown = JoinName(path_, rel);
  if (!valid()) return Status::Error(shown + ": no directory");
  auto parts = SplitBeneath(rel, shown);
  if (!parts.ok()) return parts.status();
  auto fd = OpenBeneath(fd_.get(), path_, *parts, O_RDONLY | O_DIRECTORY, create);
  if (!fd.ok()) return fd.status();
  return Dir(std::move(*fd), shown);
}

Result<OpenedFile> Dir::OpenFile(std::string_view rel) const {
  const std::string shown = JoinName(path_, rel);
  if (!valid()) return Status::Error(shown + ": no directory");
  auto parts = SplitBeneath(rel, shown);
  if (!parts.ok()) return parts.status();
  if (parts->empty()) return Status::Error(shown + ": is a directory");
  auto fd = OpenBeneath(fd_.get(), path_, *parts, O_RDONLY | O_NONBLOCK, false);
  if (!fd.ok()) return fd.status();
  OpenedFile f;
  f.fd = std::move(*fd);
  f.path = shown;
  if (const int e = StatInto(f.fd.get(), "", AT_EMPTY_PATH, &f.st); e != 0) {
    return ErrnoError(shown, e);
  }
  if (S_ISDIR(f.st.st_mode)) return Status::Error(shown + ": is a directory");
  if (!S_ISREG(f.st.st_mode)) return Status::Error(shown + ": not a regular file");
  // Reads of a regular file never block; clear O_NONBLOCK so that they are plain reads.
  const int fl = ::fcntl(f.fd.get(), F_GETFL);
  if (fl >= 0) ::fcntl(f.fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  return f;
}

Result<std::optional<Stat>> Dir::Lstat(std::string_view name) const {
  const std::string shown = JoinName(path_, name);
  if (!IsOneComponent(name)) return Status::Error(shown + ": not a file name");
  Stat st;
  if (const int e = StatInto(fd_.get(), std::string(name).c_str(), AT_SYMLINK_NOFOLLOW, &st);
      e != 0) {
    if (e == ENOENT) return std::optional<Stat>();
    return ErrnoError(shown, e);
  }
  return std::optional<Stat>(st);
}

Result<FileId> Dir::Replace(std::string_view name, int mode,
                            const std::function<Status(int fd, const std::string& path)>& fill,
                            Order order) const {
  if (order == Order::kRenameThenSync) {
    auto u = ReplaceUnsynced(name, mode, fill);
    if (!u.ok()) return u.status();
    return FinishReplace(std::move(*u));
  }
  auto done = WriteAndRename(name, mode, fill, true);
  if (!done.ok()) return done.status();
  return done->id;
}

Result<Dir::Unsynced> Dir::ReplaceUnsynced(
    std::string_view name, int mode,
    const std::function<Status(int fd, const std::string& path)>& fill, UniqueFd spare,
    Sweep sweep) const {
  if (spare.valid() && IsOneComponent(name) && valid()) {
    if (auto placed = PlaceSpare(std::move(spare), name, mode, fill, sweep)) {
      return std::move(*placed);
    }
    sweep = Sweep::kNewDirectory;  // PlaceSpare swept it
  }
  return WriteAndRename(name, mode, fill, false, sweep);
}

// Links `path` (of this directory) to the unnamed file `fd`: by the fd itself when the process
// may (CAP_DAC_READ_SEARCH), else through /proc/self/fd. 0 or the errno.
static int LinkUnnamed(int fd, int dirfd, const char* path) {
  if (::linkat(fd, "", dirfd, path, AT_EMPTY_PATH) == 0) return 0;
  if (errno != ENOENT) return errno;
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, proc.c_str(), dirfd, path, AT_SYMLINK_FOLLOW) == 0) return 0;
  return errno;
}

// ReplaceUnsynced with a spare: the content is written into the spare, which is then linked in
// place of `name` (straight under `name` when there is none, else under a temp name renamed over
// it). nullopt: the spare cannot be linked here (another mount, no O_TMPFILE link support, ...);
// the caller writes a temp file instead.
std::optional<Result<Dir::Unsynced>> Dir::PlaceSpare(
    UniqueFd spare, std::string_view name, int mode,
    const std::function<Status(int fd, const std::string& path)>& fill, Sweep sweep) const {
  const std::string target = JoinName(path_, name);
  if (sweep == Sweep::kStaleTemps) RemoveStaleTemps(fd_.get(), name);
  if (mode >= 0 && ::fchmod(spare.get(), static_cast<mode_t>(mode)) != 0) return std::nullopt;
  if (Status s = fill(spare.get(), target); !s.ok()) return Result<Unsynced>(s);
  Stat st;
  if (const int e = StatInto(spare.get(), "", AT_EMPTY_PATH, &st); e != 0) {
    return Result<Unsynced>(ErrnoError("writing " + target, e));
  }
  const std::string n(name);
  int e = LinkUnnamed(spare.get(), fd_.get(), n.c_str());
  if (e == EEXIST) {
    // Something is there (the file of an earlier try, a link, a directory): renamed over, as a
    // temp file would be; a directory stays and is an error.
    std::string temp;
    for (int attempt = 0; attempt < 16; ++attempt) {
      temp = TempName(name);
      e = LinkUnnamed(spare.get(), fd_.get(), temp.c_str());
      if (e != EEXIST) break;
    }
    if (e != 0) return std::nullopt;
    if (::renameat(fd_.get(), temp.c_str(), fd_.get(), n.c_str()) != 0) {
      const int re = errno;
      ::unlinkat(fd_.get(), temp.c_str(), 0);
      if (re == EISDIR || re == ENOTEMPTY || re == EEXIST) {
        return Result<Unsynced>(Status::Error("replacing " + target + ": is a directory"));
      }
      return Result<Unsynced>(ErrnoError("replacing " + target, re));
    }
  } else if (e != 0) {
    return std::nullopt;
  }
  return Result<Unsynced>(Unsynced{std::move(spare), target, IdOf(st)});
}

// Replace up to the rename: with `sync_first` the file is fsynced and closed before it (and
// `file` of the result is closed); without, it stays open, not synced.
Result<Dir::Unsynced> Dir::WriteAndRename(
    std::string_view name, int mode,
    const std::function<Status(int fd, const std::string& path)>& fill, bool sync_first,
    Sweep sweep) const {
  const std::string target = JoinName(path_, name);
  if (!IsOneComponent(name)) return Status::Error(target + ": not a file name");
  if (!valid()) return Status::Error(target + ": no directory");
  if (sweep == Sweep::kStaleTemps) RemoveStaleTemps(fd_.get(), name);
  std::string temp;
  int raw = -1;
  for (int attempt = 0; attempt < 16; ++attempt) {
    temp = TempName(name);
    raw = ::openat(fd_.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0644);
    if (raw >= 0 || errno != EEXIST) break;
  }
  if (raw < 0) return ErrnoError("writing " + target + ": creating temp file " + temp, errno);
  UniqueFd fd(raw);
  auto fail = [&](Status s) -> Result<Unsynced> {
    ::unlinkat(fd_.get(), temp.c_str(), 0);
    return s;
  };
  if (mode >= 0 && ::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) {
    return fail(ErrnoError("writing " + target + ": setting mode", errno));
  }
  if (Status s = fill(fd.get(), target); !s.ok()) return fail(s);
  if (sync_first && ::fsync(fd.get()) != 0) return fail(ErrnoError("syncing " + target, errno));
  Stat st;
  if (const int e = StatInto(fd.get(), "", AT_EMPTY_PATH, &st); e != 0) {
    return fail(ErrnoError("writing " + target, e));
  }
  if (sync_first && ::close(fd.Release()) != 0) {
    return fail(ErrnoError("writing " + target, errno));
  }
  if (::renameat(fd_.get(), temp.c_str(), fd_.get(), std::string(name).c_str()) != 0) {
    const int e = errno;
    if (e == EISDIR || e == ENOTEMPTY || e == EEXIST) {
      return fail(Status::Error("replacing " + target + ": is a directory"));
    }
    return fail(ErrnoError("replacing " + target, e));
  }
  if (sync_first) {
    if (Status s = Sync(); !s.ok()) {
      return s.WithMessage(s.message() + " (" + target + " was already replaced)");
    }
  }
  return Unsynced{std::move(fd), target, IdOf(st)};
}

Result<FileId> Dir::FinishReplace(Unsynced u) const {
  std::array<SyncItem, 2> syncs = FinishSyncs(u);
  SyncAll(syncs);
  return Finished(std::move(u), syncs[0].error, syncs[1].error);
}

std::array<SyncItem, 2> Dir::FinishSyncs(const Unsynced& u) const {
  return {SyncItem{u.file.get(), false, 0}, SyncItem{fd_.get(), false, 0}};
}

Result<FileId> Dir::Finished(Unsynced u, int file_error, int dir_error) const {
  const auto replaced = [&](const Status& s) -> Result<FileId> {
    return s.WithMessage(s.message() + " (" + u.target + " was already replaced)");
  };
  if (file_error != 0) return replaced(ErrnoError("syncing " + u.target, file_error));
  if (::close(u.file.Release()) != 0) return replaced(ErrnoError("writing " + u.target, errno));
  if (Status s = Synced(dir_error); !s.ok()) return replaced(s);
  return u.id;
}

Result<bool> Dir::MoveDirHere(const Dir& from, std::string_view from_name, const FileId& id,
                              std::string_view name) const {
  const std::string shown = JoinName(path_, name);
  if (!IsOneComponent(name) || !IsOneComponent(from_name)) {
    return Status::Error(shown + ": not a file name");
  }
  if (!valid() || !from.valid()) return false;
  const std::string n(name);
  if (::renameat2(from.fd(), std::string(from_name).c_str(), fd_.get(), n.c_str(),
                  RENAME_NOREPLACE) != 0) {
    return false;
  }
  Stat st;
  if (const int e = StatInto(fd_.get(), n.c_str(), AT_SYMLINK_NOFOLLOW, &st); e != 0) {
    return ErrnoError(shown, e);
  }
  if (!S_ISDIR(st.st_mode) || !(IdOf(st) == id)) {
    return Status::Error(shown + ": the directory moved here was replaced before the move");
  }
  return true;
}

Result<bool> Dir::LinkFrom(const Dir& src, std::string_view src_name, std::string_view name) const {
  const std::string shown = JoinName(path_, name);
  if (!IsOneComponent(name) || !IsOneComponent(src_name)) {
    return Status::Error(shown + ": not a file name");
  }
  if (::linkat(src.fd(), std::string(src_name).c_str(), fd_.get(), std::string(name).c_str(), 0) ==
      0) {
    return true;
  }
  if (errno == EEXIST) return false;
  return ErrnoError("linking " + JoinName(src.path(), src_name) + " as " + shown, errno);
}

Status Dir::RemoveFileIf(std::string_view name, const FileId& id) const {
  const std::string shown = JoinName(path_, name);
  auto st = Lstat(name);
  if (!st.ok()) return st.status();
  if (!*st) return Status::Ok();
  if (!S_ISREG((*st)->st_mode) || !(IdOf(**st) == id)) {
    return Status::Error("not removing " + shown + ": it is not the file this LC wrote there");
  }
  // The entry could be swapped between the lstat and the unlink only by a rename within this
  // directory; what is removed is then an entry of this directory, never anything outside it.
  if (::unlinkat(fd_.get(), std::string(name).c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoError("removing " + shown, errno);
  }
  return Status::Ok();
}

Status Dir::RemoveDirIfEmpty(std::string_view name) const {
  const std::string shown = JoinName(path_, name);
  if (!IsOneComponent(name)) return Status::Error(shown + ": not a file name");
  if (::unlinkat(fd_.get(), std::string(name).c_str(), AT_REMOVEDIR) == 0) return Status::Ok();
  if (errno == ENOENT || errno == ENOTEMPTY || errno == EEXIST) return Status::Ok();
  if (errno == ENOTDIR) return Status::Error("not removing " + shown + ": not a directory");
  return ErrnoError("removing " + shown, errno);
}

Result<std::vector<std::string>> Dir::List(size_t max_entries) const {
  const int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("reading directory " + path_, errno);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    ::close(fd);
    return ErrnoError("reading directory " + path_, e);
  }
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    if (out.size() == max_entries) {
      ::closedir(d);
      return Status::Error("reading directory " + path_ + ": more than " +
                           std::to_string(max_entries) + " entries");
    }
    out.emplace_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

Status Dir::Sync() const { return Synced(::fsync(fd_.get()) == 0 ? 0 : errno); }

Status Dir::Synced(int error) const {
  if (int e = internal::InjectedFault(path_); e != 0) error = e;
  if (error != 0) return ErrnoError("syncing directory " + path_, error);
  return Status::Ok();
}

Result<UniqueFd> Dir::Lock() const {
  const int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("locking directory " + path_, errno);
  UniqueFd lock(fd);
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return ErrnoError("locking directory " + path_, errno);
  }
  return lock;
}

Result<FileId> CopyInto(const OpenedFile& src, const Dir& dir, std::string_view name, int mode) {
  const int m = mode >= 0 ? mode : static_cast<int>(src.st.st_mode & 07777);
  return dir.Replace(name, m, [&](int out, const std::string& target) -> Status {
    auto buf = std::make_unique_for_overwrite<char[]>(kCopyChunk);
    int64_t off = 0;
    for (;;) {
      const ssize_t n = ::pread(src.fd.get(), buf.get(), kCopyChunk, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("reading " + src.path, errno);
      }
      if (n == 0) break;
      if (Status s =
              WriteAllAt(out, off, std::string_view(buf.get(), static_cast<size_t>(n)), target);
          !s.ok()) {
        return s;
      }
      off += n;
    }
    return Status::Ok();
  });
}

}  // namespace sedna::fs
