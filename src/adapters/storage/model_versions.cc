#include "adapters/storage/model_versions.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <optional>

#include "adapters/storage/ledger.h"

namespace sedna::storage {

namespace {

// "12" -> 12; anything but a positive decimal number without leading zeros -> nullopt.
std::optional<int64_t> ParseVersionNumber(std::string_view s) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return std::nullopt;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return n;
}

// A host deploy target: its directory (a host path, opened with fs::Dir::OpenHost or beneath a
// job's hot-update directory) and its entry there.
struct HostTarget {
  std::string url;  // the target's clean host path
  std::string dir;  // its directory's host path
  std::string name;
  std::string shown;  // the target as this process sees it (under the rootfs), for messages
  std::string VersionName(int64_t n) const { return name + "." + std::to_string(n); }
  std::string VersionPath(const Context& ctx, int64_t n) const {
    return fs::JoinRootfs(ctx.rootfs, dir + "/" + kVersionDirName + "/" + VersionName(n));
  }
};

Result<HostTarget> HostTargetOf(const Context& ctx, const std::string& url) {
  if (Status s = fs::CheckPathBounds(url, "deploy target"); !s.ok()) return s;
  HostTarget t;
  t.url = fs::CleanPath(url);
  const fs::DirAndName dn = fs::SplitDirName(t.url);
  if (url.empty() || url[0] != '/' || dn.name.empty() || dn.name == "." || dn.name == "..") {
    return Status::Error(url + ": not a host file path");
  }
  t.dir = dn.dir.empty() ? "/" : dn.dir;
  t.name = dn.name;
  t.shown = fs::JoinRootfs(ctx.rootfs, t.url);
  return t;
}

// The version number in a version's file name "<target name>.<n>"; nullopt if it is not one.
std::optional<int64_t> NumberOf(const HostTarget& t, std::string_view version_name) {
  const std::string prefix = t.name + ".";
  if (version_name.size() <= prefix.size() || version_name.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  return ParseVersionNumber(version_name.substr(prefix.size()));
}

struct KeptVersion {
  int64_t number;
  internal::Recorded rec;
};

// The recorded versions that are still there as this LC made them (a regular file with the
// recorded dev/ino in `versions`), ascending. Nothing else in the directory is a version: a file
// or link a worker put there is neither listed, nor restored, nor pruned.
Result<std::vector<KeptVersion>> KeptVersions(const HostTarget& t,
                                              const std::vector<internal::Recorded>& recs,
                                              const fs::Dir* versions) {
  std::vector<KeptVersion> out;
  if (versions == nullptr) return out;
  for (const internal::Recorded& r : recs) {
    auto n = NumberOf(t, r.name);
    if (!n) continue;
    auto st = versions->Lstat(r.name);
    if (!st.ok()) return st.status();
    if (!*st || !S_ISREG((*st)->st_mode) || !(fs::IdOf(**st) == r.id)) continue;
    out.push_back({*n, r});
  }
  std::sort(out.begin(), out.end(),
            [](const KeptVersion& a, const KeptVersion& b) { return a.number < b.number; });
  return out;
}

// The version directory beneath the target's directory: opened with Sub, so a link there (to
// another directory) is refused and nothing is written through it. nullopt: none yet (!create).
Result<std::optional<fs::Dir>> OpenVersionDir(const fs::Dir& dir, bool create) {
  if (!create) {
    auto st = dir.Lstat(kVersionDirName);
    if (!st.ok()) return st.status();
    if (!*st) return std::optional<fs::Dir>();
  }
  auto v = dir.Sub(kVersionDirName, create);
  if (!v.ok()) {
    return Status::Error(v.message() + "; the deploy keeps the replaced model there and writes " +
                         "nothing through a link: remove it");
  }
  return std::optional<fs::Dir>(std::move(*v));
}

// What KeepHostVersion made.
struct Kept {
  int64_t number = 0;  // 0: nothing kept
  bool created = false;
  fs::FileId id;        // the version's file
  std::string warning;  // the target was not kept, and why
};

// Keeps the current target (the entry t.name of `dir`) as the next version: opened with OpenFile
// (a link or anything but a regular file is not kept, only warned about: the deploy replaces it,
// never following it), then hard-linked into the version directory (copied from the opened fd
// when the filesystem refuses a link, or when the entry changed since it was opened), recorded
// in the ledger before the link is made, and the version directory fsynced. A target that
// already is the newest recorded version (same dev/ino: a deploy re-run) is not kept twice.
// Called with the target directory locked.
Result<Kept> KeepHostVersion(const Context& ctx, const HostTarget& t, const fs::Dir& dir) {
  Kept k;
  const std::string what = "keeping " + t.shown + " as a version";
  auto st = dir.Lstat(t.name);
  if (!st.ok()) return st.status().With(what);
  if (!*st) return k;
  if (S_ISLNK((*st)->st_mode)) {
    k.warning = t.shown + " is a symbolic link: not kept as a version (links are not followed); " +
                "the deploy replaces the link itself";
    return k;
  }
  if (!S_ISREG((*st)->st_mode)) {
    k.warning = t.shown + " is not a regular file: not kept as a version";
    return k;
  }
  auto cur = dir.OpenFile(t.name);
  if (!cur.ok()) {
    k.warning = cur.message() + ": not kept as a version";
    return k;
  }
  const fs::FileId cur_id = fs::IdOf(cur->st);
  auto versions = OpenVersionDir(dir, true);
  if (!versions.ok()) return versions.status().With(what);
  const fs::Dir& vd = **versions;
  const internal::Ledger ledger = internal::Ledger::ForVersions(ctx, t.url);
  auto recs = ledger.Read();
  if (!recs.ok()) return recs.status().With(what);
  auto kept = KeptVersions(t, *recs, &vd);
  if (!kept.ok()) return kept.status().With(what);
  if (!kept->empty() && kept->back().rec.id == cur_id) {
    k.number = kept->back().number;
    k.id = cur_id;
    return k;
  }
  int64_t n = 1;
  for (const internal::Recorded& r : *recs) {
    if (auto m = NumberOf(t, r.name)) n = std::max(n, *m + 1);
  }
  for (int attempt = 0;; ++attempt, ++n) {
    if (attempt == 1000) return Status::Error(what + ": no free version number");
    const std::string vname = t.VersionName(n);
    auto there = vd.Lstat(vname);
    if (!there.ok()) return there.status().With(what);
    if (*there) continue;  // not this LC's (or a concurrent keeper's): another number
    // Recorded first, so that a crash right after the link leaves a version the LC knows.
    Status s = ledger.Update([&](std::vector<internal::Recorded>& r) -> Status {
      r.push_back({vname, cur_id});
      return Status::Ok();
    });
    if (!s.ok()) return s.With(what);
    auto linked = vd.LinkFrom(dir, t.name, vname);
    if (linked.ok() && !*linked) {  // the name was taken meanwhile: forget it, try the next
      s = ledger.Update([&](std::vector<internal::Recorded>& r) -> Status {
        std::erase_if(r, [&](const internal::Recorded& e) { return e.name == vname; });
        return Status::Ok();
      });
      if (!s.ok()) return s.With(what);
      continue;
    }
    fs::FileId id = cur_id;
    bool same = false;
    if (linked.ok()) {
      auto v = vd.Lstat(vname);
      same = v.ok() && *v && S_ISREG((**v).st_mode) && fs::IdOf(**v) == cur_id;
    }
    if (!same) {
      // No hard link here, or the entry linked was no longer the file opened: the version is a
      // copy of the opened file (renamed over whatever the link made).
      auto copied = fs::CopyInto(*cur, vd, vname);
      if (!copied.ok()) return copied.status().With(what);
      id = *copied;
      s = ledger.Update([&](std::vector<internal::Recorded>& r) -> Status {
        for (internal::Recorded& e : r) {
          if (e.name == vname) e.id = id;
        }
        return Status::Ok();
      });
      if (!s.ok()) return s.With(what);
    }
    k.number = n;
    k.created = true;
    k.id = id;
    break;
  }
  if (Status s = vd.Sync(); !s.ok()) return s.With(what);
  return k;
}

// Removes all but the newest `keep` recorded versions (each only if it still is the file this
// LC made: RemoveFileIf) and forgets records that match no file. Called with the target
// directory locked.
Status PruneHostVersions(const Context& ctx, const HostTarget& t, const fs::Dir& dir, int keep) {
  auto versions = OpenVersionDir(dir, false);
  if (!versions.ok()) return versions.status();
  const internal::Ledger ledger = internal::Ledger::ForVersions(ctx, t.url);
  Status removed = Status::Ok();
  Status s = ledger.Update([&](std::vector<internal::Recorded>& recs) -> Status {
    auto kept = KeptVersions(t, recs, versions->has_value() ? &**versions : nullptr);
    if (!kept.ok()) return kept.status();
    std::vector<internal::Recorded> stay;
    for (size_t i = 0; i < kept->size(); ++i) {
      const KeptVersion& v = (*kept)[i];
      if (i + keep >= kept->size()) {
        stay.push_back(v.rec);
        continue;
      }
      Status r = (**versions).RemoveFileIf(v.rec.name, v.rec.id);
      if (!r.ok() && removed.ok()) removed = r.With("removing old model version");
    }
    recs = std::move(stay);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!removed.ok()) return removed;
  return versions->has_value() ? (**versions).Sync() : Status::Ok();
}

// After a failed copy: the version just made is removed only while the target still is that
// file, i.e. the new model never replaced it. A failure after the rename (the directory's
// fsync) keeps it: it is then the only copy of the old model.
void DropUnneededVersion(const Context& ctx, const HostTarget& t, const fs::Dir& dir,
                         const Kept& k) {
  if (!k.created) return;
  auto st = dir.Lstat(t.name);
  if (!st.ok() || !*st || !(fs::IdOf(**st) == k.id)) return;
  auto versions = OpenVersionDir(dir, false);
  if (!versions.ok() || !versions->has_value()) return;
  const std::string vname = t.VersionName(k.number);
  if (!(**versions).RemoveFileIf(vname, k.id).ok()) return;
  (void)internal::Ledger::ForVersions(ctx, t.url)
      .Update([&](std::vector<internal::Recorded>& recs) -> Status {
        std::erase_if(recs, [&](const internal::Recorded& r) { return r.name == vname; });
        return Status::Ok();
      });
}

// The two directory fds name the same directory.
bool SameDir(const fs::Dir& a, const fs::Dir& b) {
  auto x = fs::Fstat(a.fd(), a.path());
  auto y = fs::Fstat(b.fd(), b.path());
  return x.ok() && y.ok() && fs::IdOf(*x) == fs::IdOf(*y);
}

// "keeping at most 5 versions of <url>: <why>" (pruning failed; the deploy stands).
std::string PruneWarning(const std::string& url, const Status& s) {
  return "keeping at most " + std::to_string(kKeptModelVersions) + " versions of " + url + ": " +
         s.message();
}

void AddWarning(std::string* to, const std::string& w) {
  if (w.empty()) return;
  if (!to->empty()) *to += "; ";
  *to += w;
}

bool IsNoEntry(const Status& s) { return s.errno_value() == ENOENT; }

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

bool IsNotFound(const Status& s) { return s.http_status() == 404; }

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

namespace internal {

Result<DeployResult> DeployModelIn(const Context& ctx, const std::string& src_url,
                                   const std::string& dst_url, const fs::Dir* target_dir) {
  DeployResult r;
  if (fs::IsS3Url(dst_url)) {
    std::optional<S3Target> remote;
    bool created = false;
    Status s = CopyModelWith(ctx, src_url, dst_url, [&](s3::Client* c, const fs::Dir*) -> Status {
      if (c == nullptr) return Status::Error(dst_url + ": an S3 target without an S3 client");
      remote = S3TargetOf(*s3::ParseS3Url(dst_url));
      auto kept = KeepS3Version(*c, *remote, &created);
      if (!kept.ok()) return kept.status();
      r.kept_version = *kept;
      return Status::Ok();
    });
    // A failed PUT or COPY may still have landed (a timeout after the server stored it): the
    // version made is kept, as an extra one at worst.
    if (!s.ok()) return s;
    if (remote && r.kept_version > kKeptModelVersions) {  // a version fell out of the window
      s3::Client c(*ctx.credentials, ctx.s3_options);
      if (Status p = PruneS3Versions(c, *remote, r.kept_version, kKeptModelVersions); !p.ok()) {
        r.warning = PruneWarning(dst_url, p);
      }
    }
    return r;
  }
  auto t = HostTargetOf(ctx, dst_url);
  if (!t.ok()) return t.status().With("deploying " + dst_url);
  std::optional<fs::Dir> opened;
  if (target_dir == nullptr) {
    auto d = fs::Dir::OpenHost(ctx.rootfs, t->dir, true);
    if (!d.ok()) return d.status().With("deploying " + dst_url);
    opened = std::move(*d);
    target_dir = &*opened;
  }
  const fs::Dir& dir = *target_dir;
  auto lock = dir.Lock();
  if (!lock.ok()) return lock.status().With("deploying " + dst_url);
  Kept kept;
  bool keep_tried = false;
  Status s =
      CopyModelWith(ctx, src_url, dst_url, [&](s3::Client*, const fs::Dir* written) -> Status {
        // The directory the copy writes (its own open of the target's directory) must be the one
        // locked and kept in: else the target's directory changed under the deploy (a link
        // swapped).
        if (written != nullptr && !SameDir(*written, dir)) {
          return Status::Error("deploying " + dst_url + ": " + written->path() +
                               " is not the directory opened for the deploy (" + dir.path() +
                               "); it changed meanwhile (a link?)");
        }
        keep_tried = true;
        auto k = KeepHostVersion(ctx, *t, dir);
        if (!k.ok()) return k.status();
        kept = std::move(*k);
        return Status::Ok();
      });
  if (!s.ok()) {
    if (keep_tried) DropUnneededVersion(ctx, *t, dir, kept);
    return s;
  }
  r.kept_version = kept.number;
  r.warning = kept.warning;
  if (Status p = PruneHostVersions(ctx, *t, dir, kKeptModelVersions); !p.ok()) {
    AddWarning(&r.warning, PruneWarning(dst_url, p));
  }
  return r;
}

}  // namespace internal

Result<DeployResult> DeployModel(const Context& ctx, const std::string& src_url,
                                 const std::string& dst_url) {
  return internal::DeployModelIn(ctx, src_url, dst_url, nullptr);
}

Result<std::vector<ModelVersion>> ListModelVersions(const Context& ctx,
                                                    const std::string& dst_url) {
  if (fs::IsS3Url(dst_url)) return NotOnS3(dst_url);
  auto t = HostTargetOf(ctx, dst_url);
  if (!t.ok()) return t.status();
  std::vector<ModelVersion> out;
  auto recs = internal::Ledger::ForVersions(ctx, t->url).Read();
  if (!recs.ok()) return recs.status();
  if (recs->empty()) return out;  // this LC kept none
  auto dir = fs::Dir::OpenHost(ctx.rootfs, t->dir, false);
  if (!dir.ok()) {
    if (IsNoEntry(dir.status())) return out;
    return dir.status();
  }
  auto versions = OpenVersionDir(*dir, false);
  if (!versions.ok()) return versions.status();
  auto kept = KeptVersions(*t, *recs, versions->has_value() ? &**versions : nullptr);
  if (!kept.ok()) return kept.status();
  for (const KeptVersion& k : *kept) {
    auto st = (**versions).Lstat(k.rec.name);
    if (!st.ok()) return st.status();
    if (!*st) continue;  // pruned meanwhile
    ModelVersion v;
    v.number = k.number;
    v.path = t->VersionPath(ctx, k.number);
    v.size = (*st)->st_size;
    v.mtime = (*st)->st_mtime;
    out.push_back(std::move(v));
  }
  return out;
}

Result<DeployResult> RestoreModelVersion(const Context& ctx, const std::string& dst_url,
                                         int64_t number) {
  if (fs::IsS3Url(dst_url)) return NotOnS3(dst_url);
  auto t = HostTargetOf(ctx, dst_url);
  if (!t.ok()) return t.status();
  auto recs = internal::Ledger::ForVersions(ctx, t->url).Read();
  if (!recs.ok()) return recs.status();
  std::optional<fs::Dir> dir;
  std::optional<fs::Dir> versions;
  if (!recs->empty()) {
    auto d = fs::Dir::OpenHost(ctx.rootfs, t->dir, false);
    if (!d.ok() && !IsNoEntry(d.status())) return d.status();
    if (d.ok()) {
      dir = std::move(*d);
      auto v = OpenVersionDir(*dir, false);
      if (!v.ok()) return v.status();
      versions = std::move(*v);
    }
  }
  auto not_kept = [&](const std::vector<KeptVersion>& kept) -> Status {
    std::string list;
    for (const KeptVersion& k : kept) list += (list.empty() ? "" : ", ") + std::to_string(k.number);
    return Status::Error("version " + std::to_string(number) + " of " + dst_url + " is not kept (" +
                         (list.empty() ? "no versions in " + fs::JoinRootfs(ctx.rootfs, t->dir) +
                                             "/" + kVersionDirName
                                       : "kept: " + list) +
                         ")");
  };
  if (!dir) return not_kept({});
  auto lock = dir->Lock();
  if (!lock.ok()) return lock.status();
  recs = internal::Ledger::ForVersions(ctx, t->url).Read();  // again, under the lock
  if (!recs.ok()) return recs.status();
  auto kept = KeptVersions(*t, *recs, versions ? &*versions : nullptr);
  if (!kept.ok()) return kept.status();
  const KeptVersion* chosen = nullptr;
  for (const KeptVersion& k : *kept) {
    if (k.number == number) chosen = &k;
  }
  if (chosen == nullptr) return not_kept(*kept);
  // Read through the fd of the file this LC kept (the recorded dev/ino), never by name again.
  auto src = versions->OpenFile(chosen->rec.name);
  if (!src.ok()) return src.status();
  if (!(fs::IdOf(src->st) == chosen->rec.id)) {
    return Status::Error(src->path + " is not the file this LC kept as version " +
                         std::to_string(number) + " (it changed meanwhile)");
  }
  auto k = KeepHostVersion(ctx, *t, *dir);
  if (!k.ok()) return k.status();
  auto copied = fs::CopyInto(*src, *dir, t->name);
  if (!copied.ok()) {
    DropUnneededVersion(ctx, *t, *dir, *k);
    return copied.status();
  }
  DeployResult r;
  r.kept_version = k->number;
  r.warning = k->warning;
  if (Status s = PruneHostVersions(ctx, *t, *dir, kKeptModelVersions); !s.ok()) {
    AddWarning(&r.warning, PruneWarning(dst_url, s));
  }
  return r;
}

}  // namespace sedna::storage
