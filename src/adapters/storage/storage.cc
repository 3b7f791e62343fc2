#include "adapters/storage/storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <memory>

namespace sedna::storage {

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string Basename(const std::string& url) { return url.substr(url.rfind('/') + 1); }

// A file in staging_dir that is removed when this goes out of scope.
class StagingFile {
 public:
  static Result<StagingFile> Make(const Context& ctx, const std::string& url) {
    if (Status s = fs::MakeDirs(ctx.staging_dir); !s.ok()) return s;
    static std::atomic<uint64_t> counter{0};
    StagingFile f;
    f.path_ = ctx.staging_dir + "/stage-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter++) + "-" + Basename(url);
    return f;
  }
  StagingFile(StagingFile&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  StagingFile& operator=(StagingFile&&) = delete;
  ~StagingFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  StagingFile() = default;
  std::string path_;
};

// Writes `first_line` + '\n', then the first space-separated token of each line of `ranges`
// (one per line), to a new file at `path` (not atomic: `path` is a staging file).
Status WriteIndexFile(const std::string& path, const std::string& first_line,
                      const std::vector<fs::FileRange>& ranges) {
  int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return Status::Error(Errno("writing " + path));
  std::string buf = first_line + "\n";
  Status st = Status::Ok();
  auto flush = [&]() -> bool {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n = ::write(out, buf.data() + done, buf.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        st = Status::Error(Errno("writing " + path));
        return false;
      }
      done += static_cast<size_t>(n);
    }
    buf.clear();
    return true;
  };
  std::vector<char> chunk(64 * 1024);
  for (const auto& r : ranges) {
    if (!st.ok()) break;
    int in = ::open(r.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      st = Status::Error(Errno("reading " + r.path));
      break;
    }
    bool in_token = true, line_open = false;
    for (int64_t off = r.begin; off < r.end && st.ok();) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(chunk.size(), r.end - off));
      ssize_t n = ::pread(in, chunk.data(), want, off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        st = n < 0 ? Status::Error(Errno("reading " + r.path))
                   : Status::Error("reading " + r.path + ": range [" + std::to_string(r.begin) +
                                   ", " + std::to_string(r.end) + ") is past the end of the file");
        break;
      }
      for (ssize_t i = 0; i < n; ++i) {
        const char c = chunk[static_cast<size_t>(i)];
        if (c == '\n') {
          buf.push_back('\n');
          in_token = true;
          line_open = false;
        } else {
          line_open = true;
          if (c == ' ') in_token = false;
          if (in_token) buf.push_back(c);
        }
      }
      off += n;
      if (buf.size() >= chunk.size() && !flush()) break;
    }
    if (st.ok() && line_open) buf.push_back('\n');
    ::close(in);
  }
  if (st.ok()) flush();
  if (::close(out) != 0 && st.ok()) st = Status::Error(Errno("writing " + path));
  return st;
}

Result<s3::S3Url> ParseUrl(const Context& ctx, const std::string& url) {
  auto u = s3::ParseS3Url(url);
  if (!u.ok()) return Status::Error(url + ": " + u.message());
  if (!ctx.credentials) {
    return Status::Error(url + " is on S3 but the object has no sedna.io/credential annotation " +
                         "(is spec.credentialName set, and has the GM sent the object since the " +
                         "LC started?)");
  }
  return *u;
}

// Writes `prefix` + `ranges` (or the index of `ranges`) to `url`.
Status WriteOne(const Context& ctx, const std::string& url, const std::string& prefix,
                const std::vector<fs::FileRange>& ranges, bool index) {
  if (!fs::IsS3Url(url)) {
    const std::string path = fs::JoinRootfs(ctx.rootfs, url);
    if (Status s = fs::MakeDirs(fs::Dirname(path)); !s.ok()) return s;
    if (!index) return fs::WriteFileFromRanges(path, prefix, ranges);
    auto tmp = StagingFile::Make(ctx, url);
    if (!tmp.ok()) return tmp.status();
    if (Status s = WriteIndexFile(tmp->path(), prefix, ranges); !s.ok()) return s;
    return fs::AtomicCopyFile(tmp->path(), path);
  }
  auto u = ParseUrl(ctx, url);
  if (!u.ok()) return u.status();
  auto tmp = StagingFile::Make(ctx, url);
  if (!tmp.ok()) return tmp.status();
  Status s = index ? WriteIndexFile(tmp->path(), prefix, ranges)
                   : fs::WriteFileFromRanges(tmp->path(), prefix, ranges);
  if (!s.ok()) return s;
  s3::Client client(*ctx.credentials, ctx.s3_options);
  return client.PutFile(*u, tmp->path());
}

}  // namespace

std::string UrlPrefix(const std::string& index_url) {
  return index_url.substr(0, index_url.rfind('/') + 1);
}

Status WriteSampleFile(const Context& ctx, const SampleFile& file) {
  if (!file.index_url.empty()) {
    if (Status s = WriteOne(ctx, file.index_url, file.index_prefix, file.ranges, true); !s.ok()) {
      return s;
    }
  }
  return WriteOne(ctx, file.url, file.prefix, file.ranges, false);
}

namespace {

// Runs the copy of CopyModel; `keep` (may be empty) runs right before the target is replaced,
// with the S3 client when the target is on S3 (else nullptr). An error from it stops the copy.
Status CopyModelWith(const Context& ctx, const std::string& src_url, const std::string& dst_url,
                     const std::function<Status(s3::Client*)>& keep) {
  const bool src_s3 = fs::IsS3Url(src_url), dst_s3 = fs::IsS3Url(dst_url);
  if (!src_s3 && !dst_s3) {
    if (keep) {
      if (Status s = keep(nullptr); !s.ok()) return s;
    }
    return fs::AtomicCopyFile(fs::JoinRootfs(ctx.rootfs, src_url),
                              fs::JoinRootfs(ctx.rootfs, dst_url));
  }
  Result<s3::S3Url> src = s3::S3Url{}, dst = s3::S3Url{};
  if (src_s3) src = ParseUrl(ctx, src_url);
  if (!src.ok()) return src.status();
  if (dst_s3) dst = ParseUrl(ctx, dst_url);
  if (!dst.ok()) return dst.status();
  s3::Client client(*ctx.credentials, ctx.s3_options);
  if (dst_s3 && keep) {
    if (Status s = keep(&client); !s.ok()) return s;
  }
  if (src_s3 && dst_s3) return client.Copy(*src, *dst);
  if (dst_s3) return client.PutFile(*dst, fs::JoinRootfs(ctx.rootfs, src_url));
  // S3 -> host: download to staging, then replace the target atomically.
  auto tmp = StagingFile::Make(ctx, dst_url);
  if (!tmp.ok()) return tmp.status();
  int fd = ::open(tmp->path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(Errno("writing " + tmp->path()));
  Status s = client.Get(*src, 0, -1, [&](std::string_view chunk) -> Status {
    while (!chunk.empty()) {
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::Error(Errno("writing " + tmp->path()));
      }
      chunk.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  });
  if (::close(fd) != 0 && s.ok()) s = Status::Error(Errno("writing " + tmp->path()));
  if (!s.ok()) return s;
  if (keep) {
    if (Status k = keep(nullptr); !k.ok()) return k;
  }
  return fs::AtomicCopyFile(tmp->path(), fs::JoinRootfs(ctx.rootfs, dst_url));
}

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

Status CopyModel(const Context& ctx, const std::string& src_url, const std::string& dst_url) {
  return CopyModelWith(ctx, src_url, dst_url, nullptr);
}

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
  Status s = CopyModelWith(ctx, src_url, dst_url, [&](s3::Client* c) -> Status {
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
    s3::Client c(*ctx.credentials, ctx.s3_options);
    pruned = PruneS3Versions(c, S3TargetOf(*s3::ParseS3Url(dst_url)), r.kept_version,
                             kKeptModelVersions);
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
