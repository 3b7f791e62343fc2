#include "adapters/storage/model_versions.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <optional>

namespace sedna::storage {

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string Basename(const std::string& url) { return url.substr(url.rfind('/') + 1); }

// "12" -> 12; anything but a positive decimal number without leading zeros -> nullopt.
std::optional<int64_t> ParseVersionNumber(std::string_view s) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return std::nullopt;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return n;
}

// A host deploy target and its version directory.
struct HostTarget {
  std::string path;  // the target under the rootfs
  std::string dir;   // <dir of path>/.sedna-versions
  std::string name;  // the target's file name
  std::string Version(int64_t n) const { return dir + "/" + name + "." + std::to_string(n); }
};

HostTarget HostTargetOf(const Context& ctx, const std::string& url) {
  HostTarget t;
  t.path = fs::JoinRootfs(ctx.rootfs, url);
  t.dir = fs::CleanPath(fs::Dirname(t.path) + "/" + kVersionDirName);
  t.name = Basename(t.path);
  return t;
}

// The numbers of the kept versions, ascending; no version directory: none.
Result<std::vector<int64_t>> HostVersionNumbers(const HostTarget& t) {
  std::vector<int64_t> out;
  DIR* d = ::opendir(t.dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return out;
    return Status::Error(Errno("reading directory " + t.dir));
  }
  const std::string prefix = t.name + ".";
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (auto n = ParseVersionNumber(name.substr(prefix.size()))) out.push_back(*n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Keeps the current target as the next version; 0 when there is no target file. *created: a new
// version entry was made (not when the target already is the newest version).
Result<int64_t> KeepHostVersion(const HostTarget& t, bool* created) {
  *created = false;
  const std::string what = "keeping " + t.path + " as a version";
  struct stat st;
  if (::lstat(t.path.c_str(), &st) != 0) {
    if (errno == ENOENT) return int64_t{0};
    return Status::Error(Errno(what));
  }
  // A directory or device is not a model file: the copy over it fails and says so.
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return int64_t{0};
  // A symlink that points nowhere holds no model; the rename replaces the link itself.
  struct stat pointed;
  if (S_ISLNK(st.st_mode) && ::stat(t.path.c_str(), &pointed) != 0) return int64_t{0};
  const bool regular = S_ISREG(st.st_mode);
  if (Status s = fs::MakeDirs(t.dir); !s.ok()) return s.With(what);
  auto nums = HostVersionNumbers(t);
  if (!nums.ok()) return nums.status().With(what);
  if (regular && !nums->empty()) {
    struct stat v;
    if (::stat(t.Version(nums->back()).c_str(), &v) == 0 && v.st_dev == st.st_dev &&
        v.st_ino == st.st_ino) {
      return nums->back();
    }
  }
  int64_t n = nums->empty() ? 1 : nums->back() + 1;
  for (int attempt = 0;; ++attempt, ++n) {
    if (attempt == 1000) return Status::Error(what + ": no free version number");
    const std::string v = t.Version(n);
    int e = 0;
    if (regular) {
      if (::link(t.path.c_str(), v.c_str()) == 0) break;
      e = errno;
      if (e == EEXIST) continue;  // a concurrent keeper took n
    }
    // A symlink target (keep what it points to) or a filesystem without hard links: copy.
    if (!regular || e == EPERM || e == ENOTSUP || e == EOPNOTSUPP || e == EXDEV || e == EMLINK) {
      if (::access(v.c_str(), F_OK) == 0) continue;
      if (Status s = fs::AtomicCopyFile(t.path, v); !s.ok()) return s.With(what);
      break;
    }
    return Status::Error(what + " " + v + ": " + std::strerror(e));
  }
  *created = true;
  if (Status s = fs::SyncDir(t.dir); !s.ok()) return s.With(what);
  return n;
}

// Removes all but the newest `keep` versions.
Status PruneHostVersions(const HostTarget& t, int keep) {
  auto nums = HostVersionNumbers(t);
  if (!nums.ok()) return nums.status();
  if (nums->size() <= static_cast<size_t>(keep)) return Status::Ok();
  for (size_t i = 0; i + keep < nums->size(); ++i) {
    const std::string v = t.Version((*nums)[i]);
    if (::unlink(v.c_str()) != 0 && errno != ENOENT) {
      return Status::Error(Errno("removing old model version " + v));
    }
  }
  return fs::SyncDir(t.dir);
}

// True when both paths name the same file (a version still linked to the unreplaced target).
bool SameFile(const std::string& a, const std::string& b) {
  struct stat x, y;
  return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev &&
         x.st_ino == y.st_ino;
}

// An exclusive flock on the target's directory (created if missing), held from keeping the old
// model to renaming the new one over it, so that a deploy by the daemon and a `rollback-model`
// run meanwhile do not interleave (one would silently undo the other, or keep no version).
class DirLock {
 public:
  static Result<std::unique_ptr<DirLock>> Take(const std::string& dir) {
    if (Status s = fs::MakeDirs(dir); !s.ok()) return s;
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::Error(Errno("locking directory " + dir));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const Status s = Status::Error(Errno("locking directory " + dir));
      ::close(fd);
      return s;
    }
    return std::unique_ptr<DirLock>(new DirLock(fd));
  }
  ~DirLock() { ::close(fd_); }  // releases the lock
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

// After a failed copy: the version just made is removed only while it is still the target's own
// file, i.e. the new model never replaced it. A failure after the rename (the directory's fsync)
// keeps it: it is then the only copy of the old model.
void DropUnneededVersion(const HostTarget& t, int64_t n) {
  if (SameFile(t.path, t.Version(n))) ::unlink(t.Version(n).c_str());
}

// An S3 deploy target and its version keys.
struct S3Target {
  s3::S3Url url;
  std::string prefix;  // "<dir>/.sedna-versions/<name>."
  s3::S3Url Version(int64_t n) const { return {url.bucket, prefix + std::to_string(n)}; }
  // Holds the newest version's number as decimal text.
  s3::S3Url Newest() const { return {url.bucket, prefix + "newest"}; }
};

S3Target S3TargetOf(const s3::S3Url& u) {
  const size_t slash = u.key.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : u.key.substr(0, slash + 1);
  return {u, dir + kVersionDirName + "/" + u.key.substr(slash + 1) + "."};
}

bool IsNotFound(const Status& s) { return s.message().find(": 404 ") != std::string::npos; }

// The newest version's number (0: none yet), from the `Newest()` object: a GET, where a LIST of
// the version keys would need s3:ListBucket (and trips moto's signature check on '/').
Result<int64_t> S3NewestVersion(s3::Client& c, const S3Target& t) {
  std::string text;
  Status s = c.Get(t.Newest(), 0, -1, [&](std::string_view chunk) -> Status {
    text.append(chunk);
    return text.size() > 32 ? Status::Error("longer than a version number") : Status::Ok();
  });
  if (!s.ok()) return IsNotFound(s) ? Result<int64_t>(int64_t{0}) : Result<int64_t>(s);
  auto n = ParseVersionNumber(text);
  if (!n) return Status::Error(s3::ToString(t.Newest()) + ": \"" + text + "\" is not a version");
  return *n;
}

Result<int64_t> KeepS3Version(s3::Client& c, const S3Target& t, bool* created) {
  *created = false;
  const std::string what = "keeping " + s3::ToString(t.url) + " as a version";
  auto cur = c.Head(t.url);
  if (!cur.ok())
    return IsNotFound(cur.status()) ? Result<int64_t>(int64_t{0}) : cur.status().With(what);
  auto newest = S3NewestVersion(c, t);
  if (!newest.ok()) return newest.status().With(what);
  if (*newest > 0) {
    auto v = c.Head(t.Version(*newest));
    if (v.ok() && !cur->etag.empty() && cur->etag == v->etag) return *newest;  // a re-run
  }
  const int64_t n = *newest + 1;
  if (Status s = c.Copy(t.url, t.Version(n)); !s.ok()) return s.With(what);
  *created = true;
  if (Status s = c.PutBytes(t.Newest(), std::to_string(n)); !s.ok()) return s.With(what);
  return n;
}

// Deletes the version that the newest one pushed out of the kept window. (One that a failed
// delete left behind stays.)
Status PruneS3Versions(s3::Client& c, const S3Target& t, int64_t newest, int keep) {
  return newest > keep ? c.Delete(t.Version(newest - keep)) : Status::Ok();
}

Status NotOnS3(const std::string& url) {
  return Status::Error(url + ": model versions on S3 are not listed or restored here; they are " +
                       "the objects " + ModelVersionUrl(url, 1) +
                       ", .2, … (copy one over the target with any S3 client)");
}

}  // namespace

std::string ModelVersionUrl(const std::string& dst_url, int64_t n) {
  const size_t slash = dst_url.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : dst_url.substr(0, slash + 1);
  return dir + kVersionDirName + "/" + dst_url.substr(slash + 1) + "." + std::to_string(n);
}

Result<DeployResult> DeployModel(const Context& ctx, const std::string& src_url,
                                 const std::string& dst_url) {
  DeployResult r;
  bool created = false;
  const bool dst_s3 = fs::IsS3Url(dst_url);
  const HostTarget host = HostTargetOf(ctx, dst_url);
  std::optional<S3Target> remote;
  std::unique_ptr<DirLock> lock;
  if (!dst_s3) {
    auto l = DirLock::Take(fs::Dirname(host.path));
    if (!l.ok()) return l.status().With("deploying " + dst_url);
    lock = std::move(*l);
  }
  Status s = CopyModelWith(ctx, src_url, dst_url, [&](s3::Client* c, const fs::Dir*) -> Status {
    Result<int64_t> kept = int64_t{0};
    if (c == nullptr) {
      kept = KeepHostVersion(host, &created);
    } else {
      remote = S3TargetOf(*s3::ParseS3Url(dst_url));
      kept = KeepS3Version(*c, *remote, &created);
    }
    if (!kept.ok()) return kept.status();
    r.kept_version = *kept;
    return Status::Ok();
  });
  if (!s.ok()) {
    // On S3 a failed PUT or COPY may still have landed (a timeout after the server stored it):
    // the version made is kept, as an extra one at worst.
    if (created && !dst_s3) DropUnneededVersion(host, r.kept_version);
    return s;
  }
  lock.reset();
  Status pruned = Status::Ok();
  if (dst_s3) {
    if (remote && r.kept_version > kKeptModelVersions) {  // a version fell out of the window
      s3::Client c(*ctx.credentials, ctx.s3_options);
      pruned = PruneS3Versions(c, *remote, r.kept_version, kKeptModelVersions);
    }
  } else {
    pruned = PruneHostVersions(host, kKeptModelVersions);
  }
  if (!pruned.ok()) {
    r.warning = "keeping at most " + std::to_string(kKeptModelVersions) + " versions of " +
                dst_url + ": " + pruned.message();
  }
  return r;
}

Result<std::vector<ModelVersion>> ListModelVersions(const Context& ctx,
                                                    const std::string& dst_url) {
  if (fs::IsS3Url(dst_url)) return NotOnS3(dst_url);
  const HostTarget t = HostTargetOf(ctx, dst_url);
  auto nums = HostVersionNumbers(t);
  if (!nums.ok()) return nums.status();
  std::vector<ModelVersion> out;
  for (int64_t n : *nums) {
    ModelVersion v;
    v.number = n;
    v.path = t.Version(n);
    struct stat st;
    if (::stat(v.path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // pruned meanwhile
      return Status::Error(Errno("reading " + v.path));
    }
    v.size = st.st_size;
    v.mtime = st.st_mtime;
    out.push_back(std::move(v));
  }
  return out;
}

Result<DeployResult> RestoreModelVersion(const Context& ctx, const std::string& dst_url,
                                         int64_t number) {
  if (fs::IsS3Url(dst_url)) return NotOnS3(dst_url);
  const HostTarget t = HostTargetOf(ctx, dst_url);
  auto nums = HostVersionNumbers(t);
  if (!nums.ok()) return nums.status();
  if (std::find(nums->begin(), nums->end(), number) == nums->end()) {
    std::string kept;
    for (int64_t n : *nums) kept += (kept.empty() ? "" : ", ") + std::to_string(n);
    return Status::Error("version " + std::to_string(number) + " of " + dst_url + " is not kept (" +
                         (kept.empty() ? "no versions in " + t.dir : "kept: " + kept) + ")");
  }
  auto lock = DirLock::Take(fs::Dirname(t.path));
  if (!lock.ok()) return lock.status();
  bool created = false;
  auto kept = KeepHostVersion(t, &created);
  if (!kept.ok()) return kept.status();
  if (Status s = fs::AtomicCopyFile(t.Version(number), t.path); !s.ok()) {
    if (created) DropUnneededVersion(t, *kept);
    return s;
  }
  lock->reset();
  DeployResult r;
  r.kept_version = *kept;
  if (Status s = PruneHostVersions(t, kKeptModelVersions); !s.ok()) {
    r.warning = "keeping at most " + std::to_string(kKeptModelVersions) + " versions of " +
                dst_url + ": " + s.message();
  }
  return r;
}

}  // namespace sedna::storage
