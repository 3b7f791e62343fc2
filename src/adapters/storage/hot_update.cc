#include "adapters/storage/hot_update.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>

#include "adapters/clock/system_clock.h"
#include "adapters/fs/files.h"
#include "adapters/json/go_json.h"
#include "adapters/storage/ledger.h"
#include "core/ascii.h"
#include "core/resources.h"

namespace sedna::storage {

namespace {

// Go's time package takes its monotonic origin when the process starts (runtime startNano, one
// nanosecond before the first reading).
const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();

// Go's appendInt(b, x, width): decimal, zero-padded to `width` digits, '-' before the padding.
void AppendInt(std::string& out, int64_t x, int width) {
  uint64_t u = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  if (x < 0) out += '-';
  std::string digits = std::to_string(u);
  if (static_cast<int>(digits.size()) < width) out.append(width - digits.size(), '0');
  out += digits;
}

// Floor division and modulo (the wall time may be before 1970).
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// A job's own hot-update directory, opened, and its host path.
struct JobDir {
  std::string host;  // <base>/<ns>/incrementallearningjob/<name>, lower-cased
  fs::Dir dir;
};

Result<std::string> JobDirPath(const Context& ctx, const std::string& ns, const std::string& name) {
  if (ns.empty() || name.empty() || ns.find('/') != std::string::npos ||
      name.find('/') != std::string::npos || ns == "." || ns == ".." || name == "." ||
      name == "..") {
    return Status::Error("hot update: the job's namespace and name (\"" + ns + "\", \"" + name +
                         "\") do not name a hot-update directory");
  }
  const std::string base = fs::CleanPath(ctx.hot_update_dir.empty() ? std::string(kHotUpdateHostDir)
                                                                    : ctx.hot_update_dir);
  return base + "/" + core::AsciiLowered(ns + "/" + core::kKindIlJob + "/" + name);
}

// `path` (the annotation's config path, or a copy's target) relative to the job's directory: a
// file strictly beneath it, lexically; else an error naming the annotation and the directory.
Result<std::string> BeneathJobDir(const std::string& job_dir, const std::string& path,
                                  const std::string& what) {
  if (Status s = fs::CheckPathBounds(path, what); !s.ok()) return s;
  auto rel = fs::RelativeBeneath(job_dir, path);
  if (!rel || rel->empty()) {
    return Status::Error(what + " " + path + " is not inside the job's hot-update directory " +
                         job_dir + "/");
  }
  return *rel;
}

constexpr char kAnnotationWhat[] = "hot-update config path (annotation ";

std::string AnnotationWhat() {
  return std::string(kAnnotationWhat) + core::kHotUpdateConfigAnnotation + ")";
}

// The directory of `rel` beneath the job's directory, no link followed; made when `create`.
Result<fs::Dir> DirOf(const fs::Dir& job, const std::string& rel, bool create) {
  const size_t slash = rel.rfind('/');
  return job.Sub(
      slash == std::string::npos ? std::string_view() : std::string_view(rel).substr(0, slash),
      create);
}

std::string NameOf(const std::string& rel) { return rel.substr(rel.rfind('/') + 1); }

bool IsMissing(const Status& s) { return s.errno_value() == ENOENT; }

// Which write of the config `a` is: its condition and a hash of what it writes. The write the LC
// resumes after a restart is the same action, so it has the same key.
std::string WriteKey(const core::il::WriteHotUpdate& a) {
  std::string what = a.model_path;
  for (const core::il::CopyModel& c : a.copies) {
    what += '\0';
    what += c.src_url;
    what += '\0';
    what += c.dst_url;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, internal::Fnv1a(what));
  return std::to_string(a.condition) + " " + hex;
}

// The model_update_time of `a`'s config write if that write has finished: the last config write
// recorded is `a`'s, and the config in place (`name` in `cd`) is the very file it put there (its
// dev/ino and its bytes). Else none: the write is still to do (never made, or killed before its
// rename, or the config was replaced since).
Result<std::optional<std::string>> FinishedWrite(const Context& ctx,
                                                 const core::il::WriteHotUpdate& a,
                                                 const fs::Dir& cd, const std::string& name) {
  auto recs = internal::Ledger::ForHotUpdateConfig(ctx, a.job_namespace, a.job_name).Read();
  if (!recs.ok()) return recs.status();
  const std::string key = WriteKey(a) + " ";
  if (recs->size() != 1 || recs->front().name.compare(0, key.size(), key) != 0) {
    return std::optional<std::string>();
  }
  auto st = cd.Lstat(name);
  if (!st.ok()) return st.status();
  if (!*st || !S_ISREG((*st)->st_mode) || !(fs::IdOf(**st) == recs->front().id)) {
    return std::optional<std::string>();
  }
  // A freed inode number is given to the next file made (a config replaced by unlink and write
  // may have the recorded dev/ino): the file is the LC's write only if it also holds its bytes.
  std::string update_time = recs->front().name.substr(key.size());
  auto opened = cd.OpenFile(name);
  if (!opened.ok()) {
    if (IsMissing(opened.status())) return std::optional<std::string>();
    return opened.status();
  }
  const std::string want = ModelConfigJson(a.model_path, update_time);
  if (!(fs::IdOf(opened->st) == recs->front().id) ||
      static_cast<uint64_t>(opened->st.st_size) != want.size()) {
    return std::optional<std::string>();
  }
  auto have = fs::ReadUpTo(*opened, want.size() + 1);
  if (!have.ok()) return have.status();
  if (*have != want) return std::optional<std::string>();
  return std::optional<std::string>(std::move(update_time));
}

// Records `a`'s config write: the file `id` (the temp file the rename puts in place) and which
// write it was, replacing the previous write's entry.
Status RecordWrite(const Context& ctx, const core::il::WriteHotUpdate& a,
                   const std::string& update_time, const fs::FileId& id) {
  return internal::Ledger::ForHotUpdateConfig(ctx, a.job_namespace, a.job_name)
      .Update([&](std::vector<internal::Recorded>& recs) -> Status {
        recs = {internal::Recorded{WriteKey(a) + " " + update_time, id}};
        return Status::Ok();
      });
}

// Records `rel` (a file the LC just wrote beneath the job's directory) with its identity.
Status Record(const Context& ctx, const core::il::WriteHotUpdate& a, const std::string& rel,
              const fs::FileId& id) {
  return internal::Ledger::ForHotUpdate(ctx, a.job_namespace, a.job_name)
      .Update([&](std::vector<internal::Recorded>& recs) -> Status {
        std::erase_if(recs, [&](const internal::Recorded& r) { return r.name == rel; });
        recs.push_back({rel, id});
        return Status::Ok();
      });
}

}  // namespace

std::string ModelConfigJson(std::string_view model_path, std::string_view update_time) {
  std::string out = "{\n \"model_config\": {\n  \"model_path\": ";
  json::AppendGoString(out, model_path);
  out += ",\n  \"model_update_time\": ";
  json::AppendGoString(out, update_time);
  out += "\n }\n}";
  return out;
}

std::string GoTimeString(int64_t unix_nanos, int utc_offset_seconds, std::string_view zone,
                         int64_t mono_nanos) {
  const int64_t secs = FloorDiv(unix_nanos, 1'000'000'000) + utc_offset_seconds;
  const int64_t nanos = unix_nanos - FloorDiv(unix_nanos, 1'000'000'000) * 1'000'000'000;
  const int64_t days = FloorDiv(secs, 86400);
  const int64_t sod = secs - days * 86400;
  const std::chrono::year_month_day ymd{std::chrono::sys_days{std::chrono::days{days}}};
  std::string out;
  out.reserve(64);
  AppendInt(out, static_cast<int>(ymd.year()), 4);
  out += '-';
  AppendInt(out, static_cast<unsigned>(ymd.month()), 2);
  out += '-';
  AppendInt(out, static_cast<unsigned>(ymd.day()), 2);
  out += ' ';
  AppendInt(out, sod / 3600, 2);
  out += ':';
  AppendInt(out, sod / 60 % 60, 2);
  out += ':';
  AppendInt(out, sod % 60, 2);
  if (nanos != 0) {  // ".999999999": trailing zeros trimmed
    std::string frac;
    AppendInt(frac, nanos, 9);
    frac.erase(frac.find_last_not_of('0') + 1);
    out += '.';
    out += frac;
  }
  // "-0700": the offset in whole minutes.
  int zone_minutes = utc_offset_seconds / 60;
  std::string numeric;
  numeric += zone_minutes < 0 ? '-' : '+';
  if (zone_minutes < 0) zone_minutes = -zone_minutes;
  AppendInt(numeric, zone_minutes / 60, 2);
  AppendInt(numeric, zone_minutes % 60, 2);
  out += ' ';
  out += numeric;
  out += ' ';
  if (zone.empty()) {
    out += numeric;
  } else {
    out += zone;
  }
  // " m=±<seconds>.<9 digits>"
  out += " m=";
  uint64_t m = mono_nanos < 0 ? uint64_t{0} - static_cast<uint64_t>(mono_nanos)
                              : static_cast<uint64_t>(mono_nanos);
  out += mono_nanos < 0 ? '-' : '+';
  out += std::to_string(m / 1'000'000'000);
  out += '.';
  AppendInt(out, static_cast<int64_t>(m % 1'000'000'000), 9);
  return out;
}

std::string GoTimeNow(const core::Clock& clock) {
  const int64_t unix_nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock.Now().time_since_epoch()).count();
  const auto mono = clock.Steady() - kProcessStart;
  tm local{};
  const time_t secs = static_cast<time_t>(FloorDiv(unix_nanos, 1'000'000'000));
  ::localtime_r(&secs, &local);
  const int64_t mono_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(mono).count() + 1;
  return GoTimeString(unix_nanos, static_cast<int>(local.tm_gmtoff),
                      local.tm_zone != nullptr ? local.tm_zone : "", mono_nanos);
}

std::string GoTimeNow() { return GoTimeNow(clock::System()); }

Result<std::string> HotUpdateJobDir(const Context& ctx, const std::string& ns,
                                    const std::string& name) {
  return JobDirPath(ctx, ns, name);
}

Result<HotUpdateResult> WriteHotUpdate(const Context& ctx, const core::il::WriteHotUpdate& action) {
  auto job_path = JobDirPath(ctx, action.job_namespace, action.job_name);
  if (!job_path.ok()) return job_path.status();
  auto config_rel = BeneathJobDir(*job_path, action.config_path, AnnotationWhat());
  if (!config_rel.ok()) return config_rel.status();
  auto job = fs::Dir::OpenHost(ctx.rootfs, *job_path, true);
  if (!job.ok()) return job.status().With("hot update");
  auto cd = DirOf(*job, *config_rel, true);
  if (!cd.ok()) return cd.status().With("hot update");
  const std::string name = NameOf(*config_rel);
  HotUpdateResult result;
  result.config_file = fs::JoinRootfs(ctx.rootfs, fs::CleanPath(action.config_path));
  // A write resumed after a restart that finds its own config in place had finished: nothing is
  // written again (the worker would load the same model twice, the deploy model would be kept as
  // a version of itself).
  auto finished = FinishedWrite(ctx, action, *cd, name);
  if (!finished.ok()) return finished.status().With("hot update");
  if (*finished) {
    result.update_time = **finished;
    result.resumed = true;
    return result;
  }
  for (const core::il::CopyModel& c : action.copies) {
    // A copy into the job's directory goes beneath the directory opened here (no link followed
    // below it); the deploy model and the eval model lie elsewhere (their own targets).
    std::optional<std::string> rel;
    if (!fs::IsS3Url(c.dst_url)) rel = fs::RelativeBeneath(*job_path, c.dst_url);
    if (!rel) {
      auto r = DeployModel(ctx, c.src_url, c.dst_url);
      if (!r.ok()) return r.status();
      result.copies.push_back(std::move(*r));
      continue;
    }
    if (rel->empty())
      return Status::Error("hot-update copy target " + c.dst_url + " is a directory");
    auto d = DirOf(*job, *rel, true);
    if (!d.ok()) return d.status().With("hot update");
    auto r = internal::DeployModelIn(ctx, c.src_url, c.dst_url, &*d);
    if (!r.ok()) return r.status();
    result.copies.push_back(std::move(*r));
    auto st = d->Lstat(NameOf(*rel));
    if (!st.ok()) return st.status();
    if (*st && S_ISREG((*st)->st_mode)) {
      if (Status s = Record(ctx, action, *rel, fs::IdOf(**st)); !s.ok()) return s;
    }
  }
  result.update_time = GoTimeNow(ctx.clock ? *ctx.clock : clock::System());
  const std::string content = ModelConfigJson(action.model_path, result.update_time);
  // The config is recorded before it becomes visible (its temp file's dev/ino is what the rename
  // puts in place), so that the worker never sees a config the LC has not recorded, and its
  // completion is not delayed by the ledger; a failed replace puts the old record back.
  auto before = internal::Ledger::ForHotUpdate(ctx, action.job_namespace, action.job_name).Read();
  if (!before.ok()) return before.status();
  std::optional<fs::FileId> old;
  for (const internal::Recorded& r : *before) {
    if (r.name == *config_rel) old = r.id;
  }
  bool recorded = false;
  auto id = cd->Replace(name, 0644, [&](int fd, const std::string& path) -> Status {
    if (Status s = fs::WriteAllAt(fd, 0, content, path); !s.ok()) return s;
    auto st = fs::Fstat(fd, "writing " + path);
    if (!st.ok()) return st.status();
    if (Status s = Record(ctx, action, *config_rel, fs::IdOf(*st)); !s.ok()) return s;
    recorded = true;
    return RecordWrite(ctx, action, result.update_time, fs::IdOf(*st));
  });
  if (!id.ok()) {
    if (recorded && old) (void)Record(ctx, action, *config_rel, *old);
    return id.status();
  }
  return result;
}

Status RemoveHotUpdateDir(const Context& ctx, const std::string& ns, const std::string& name) {
  auto job_path = JobDirPath(ctx, ns, name);
  if (!job_path.ok()) return job_path.status();
  const internal::Ledger ledger = internal::Ledger::ForHotUpdate(ctx, ns, name);
  auto recs = ledger.Read();
  if (!recs.ok()) return recs.status();
  if (recs->empty()) return Status::Ok();  // this LC wrote nothing there
  Status first = Status::Ok();
  auto note = [&](const Status& s) {
    if (!s.ok() && first.ok()) first = s;
  };
  auto job = fs::Dir::OpenHost(ctx.rootfs, *job_path, false);
  if (job.ok()) {
    std::vector<std::string> dirs;  // relative directories holding recorded files
    for (const internal::Recorded& r : *recs) {
      const size_t slash = r.name.rfind('/');
      const std::string parent = slash == std::string::npos ? "" : r.name.substr(0, slash);
      auto d = job->Sub(parent, false);
      if (!d.ok()) {
        if (!IsMissing(d.status())) note(d.status());
        continue;
      }
      // The versions the LC kept of this file, then the file itself.
      const std::string target = *job_path + "/" + r.name;
      const internal::Ledger vledger = internal::Ledger::ForVersions(ctx, target);
      auto vs = vledger.Read();
      if (!vs.ok()) {
        note(vs.status());
      } else if (!vs->empty()) {
        auto vst = d->Lstat(kVersionDirName);
        if (vst.ok() && *vst && S_ISDIR((*vst)->st_mode)) {
          auto vd = d->Sub(kVersionDirName, false);
          if (vd.ok()) {
            for (const internal::Recorded& v : *vs) note(vd->RemoveFileIf(v.name, v.id));
            note(vd->Sync());
          } else {
            note(vd.status());
          }
          note(d->RemoveDirIfEmpty(kVersionDirName));
        }
        note(vledger.Update([](std::vector<internal::Recorded>& all) -> Status {
          all.clear();
          return Status::Ok();
        }));
      }
      note(d->RemoveFileIf(NameOf(r.name), r.id));
      note(d->Sync());
      if (std::find(dirs.begin(), dirs.end(), parent) == dirs.end()) dirs.push_back(parent);
    }
    // The directories, deepest first, each only when empty; then the job's directory itself.
    std::vector<std::string> all;
    for (const std::string& d : dirs) {
      for (std::string p = d; !p.empty();
           p = p.rfind('/') == std::string::npos ? "" : p.substr(0, p.rfind('/'))) {
        if (std::find(all.begin(), all.end(), p) == all.end()) all.push_back(p);
      }
    }
    std::sort(all.begin(), all.end(), [](const std::string& a, const std::string& b) {
      return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    for (const std::string& p : all) {
      const size_t slash = p.rfind('/');
      auto parent = job->Sub(slash == std::string::npos ? "" : p.substr(0, slash), false);
      if (parent.ok()) note(parent->RemoveDirIfEmpty(NameOf(p)));
    }
    const fs::DirAndName dn = fs::SplitDirName(*job_path);
    auto up = fs::Dir::OpenHost(ctx.rootfs, dn.dir, false);
    if (up.ok()) {
      // Only the directory the files were removed from (not another one swapped in its place).
      auto here = up->Lstat(dn.name);
      auto x = fs::Fstat(job->fd(), job->path());
      if (here.ok() && *here && x.ok() && fs::IdOf(*x) == fs::IdOf(**here)) {
        note(up->RemoveDirIfEmpty(dn.name));
      }
    }
  } else if (!IsMissing(job.status())) {
    return job.status().With("removing the hot-update files of " + ns + "/" + name);
  }
  // Records are dropped either way: a file that is not as recorded is not the LC's any more.
  for (const internal::Ledger& l : {ledger, internal::Ledger::ForHotUpdateConfig(ctx, ns, name)}) {
    note(l.Update([](std::vector<internal::Recorded>& all) -> Status {
      all.clear();
      return Status::Ok();
    }));
  }
  if (!first.ok()) return first.With("removing the hot-update files of " + ns + "/" + name);
  return Status::Ok();
}

}  // namespace sedna::storage
