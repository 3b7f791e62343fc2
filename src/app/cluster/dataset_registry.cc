// The dataset registry (dataset_registry.h): host watch, S3 index polling, numberOfSamples.
#include "app/cluster/dataset_registry.h"

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "adapters/dataset/index_watcher.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/s3_client.h"
#include "app/cluster/il_record.h"
#include "app/cluster/problem_shape.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

// FNV-1a, to give each S3 index URL its own mirror file name.
std::string UrlHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void RemoveMirror(const std::string& path) {
  for (const char* suffix : {"", ".state", ".tmp"}) ::unlink((path + suffix).c_str());
}

}  // namespace

struct DatasetRegistry::Entry {
  DatasetSource src;
  core::Dataset ds;
  json::Decoded<core::Dataset> decoded;
  DatasetRecord record;
  s3::S3Url s3_url;
  std::optional<s3::Credentials> creds;  // sedna.io/credential, in memory only (B23)
  bool sync_inflight = false;
  std::string last_sync_problem;  // ProblemShape of the one logged; logged once until it changes
  std::string last_read_problem;  // the same, for reading the index
  bool watching = false;
  bool read_posted = false;
  bool read_inflight = false;  // a count read is on the pool
  bool read_again = false;     // another was asked for meanwhile
  bool read_again_take = false;
  std::unique_ptr<asio::steady_timer> poll_timer;
  // numberOfSamples coalescing (--dataset-status-interval-ms): when the last one was sent, and a
  // timer that reads again when a changed count had to wait.
  std::chrono::steady_clock::time_point last_status;
  std::unique_ptr<asio::steady_timer> status_timer;
  bool status_due = false;

  // "<ns>/<name>", as log lines name a Dataset ("Dataset default/d1: ...").
  std::string name() const { return ds.meta.ns + "/" + ds.meta.name; }
};

DatasetRegistry::DatasetRegistry(Context& ctx, Outbox& outbox, ReportIntake& intake, Hooks hooks)
    : ctx_(ctx), outbox_(outbox), intake_(intake), hooks_(std::move(hooks)) {}
DatasetRegistry::~DatasetRegistry() = default;

void DatasetRegistry::Start() {
  watcher_ = std::make_unique<dataset::IndexWatcher>(
      ctx_.io, [this](const std::string& path) { OnIndexChanged(path); });
}

DatasetRegistry::Entry* DatasetRegistry::Find(const std::string& ns, const std::string& name) {
  auto it = datasets_.find(core::ResourceKey(ns, core::kKindDataset, name));
  return it == datasets_.end() ? nullptr : it->second.get();
}

const DatasetSource* DatasetRegistry::Source(const std::string& ns, const std::string& name) const {
  auto it = datasets_.find(core::ResourceKey(ns, core::kKindDataset, name));
  return it == datasets_.end() ? nullptr : &it->second->src;
}

void DatasetRegistry::Upsert(json::Decoded<core::Dataset> d, bool persist) {
  // Reports that arrived before this change step under the spec they came for.
  if (!UpdateAfterReports(
          intake_, "Dataset " + d.object.meta.ns + "/" + d.object.meta.name, d,
          [this, persist](json::Decoded<core::Dataset> u) { Upsert(std::move(u), persist); })) {
    return;
  }
  const auto& ds = d.object;
  const std::string key = core::ResourceKey(ds.meta.ns, core::kKindDataset, ds.meta.name);
  const std::string who = "Dataset " + ds.meta.ns + "/" + ds.meta.name;
  auto fmt = dataset::ParseIndexFormat(ds.spec.format);
  if (!fmt.ok()) {
    spdlog::error("{}: spec.{}; keeping the previous version", who, fmt.message());
    return;
  }
  if (ds.spec.url.empty()) {
    spdlog::error("{}: spec.url: empty; keeping the previous version", who);
    return;
  }
  const bool is_s3 = fs::IsS3Url(ds.spec.url);
  s3::S3Url s3_url;
  std::optional<s3::Credentials> creds;
  if (is_s3) {
    auto u = s3::ParseS3Url(ds.spec.url);
    if (u.ok() && u->key.empty()) u = Status::Error("names a bucket, not an index object");
    if (!u.ok()) {
      spdlog::error("{}: spec.url: \"{}\": {}; keeping the previous version", who, ds.spec.url,
                    u.message());
      return;
    }
    s3_url = *u;
    auto c = CredentialsOf(d.credential_json);
    if (!c.ok()) {
      spdlog::error("{}: {}; keeping the previous version", who, c.message());
      return;
    }
    creds = *c;
  } else if (ds.spec.url.find("://") != std::string::npos) {
    spdlog::error(
        "{}: spec.url: \"{}\": unsupported scheme (host paths and s3:// only); keeping the "
        "previous version",
        who, ds.spec.url);
    return;
  }
  auto& slot = datasets_[key];
  const bool fresh = !slot;
  if (fresh) {
    slot = std::make_unique<Entry>();
    slot->src.key = key;
    if (auto rec = ctx_.store->GetState(kScopeDataset, key); rec.ok() && rec->has_value()) {
      auto r = DecodeDatasetRecord(**rec);
      if (r.ok()) slot->record = *r;
    }
  }
  Entry& e = *slot;
  const std::string new_path =
      is_s3 ? MirrorPath(key, ds.spec.url) : fs::JoinRootfs(ctx_.cfg.rootfs, ds.spec.url);
  if (!fresh && new_path != e.src.local_path) {
    // B26: a changed spec.url is followed; counting restarts on the new index.
    if (e.watching) watcher_->Unwatch(e.src.local_path);
    if (e.src.s3) RemoveMirror(e.src.local_path);
    e.watching = false;
    e.record = DatasetRecord{};
  }
  e.src.s3 = is_s3;
  e.s3_url = s3_url;
  // Stored objects carry no credential (B23): keep what the GM sent until it sends again.
  if (creds || persist) e.creds = creds;
  e.ds = ds;
  e.src.ns = ds.meta.ns;
  e.src.name = ds.meta.name;
  e.src.url = ds.spec.url;
  e.src.format = *fmt;
  e.src.local_path = new_path;
  if (persist) {
    Status s = ctx_.store->Transact([&](store::Store::Tx& tx) {
      return tx.UpsertResource({key, d.type_meta_json, d.object_meta_json, d.spec_json});
    });
    if (!s.ok()) spdlog::error("{}: persisting: {}", who, s.message());
  }
  e.decoded = std::move(d);  // `ds` refers into `d`: use e.ds below
  if (fresh) {
    if (e.src.s3) {
      spdlog::info("{}: polling {} every {} s (mirrored in {})", who, e.ds.spec.url, PollSeconds(e),
                   e.src.local_path);
    } else {
      spdlog::info("{}: watching {}", who, e.src.local_path);
    }
  }
  EnsureWatch(e);
  SchedulePoll(e);
  if (e.src.s3) {
    SyncS3(e);
  } else {
    PostRead(e, false);
  }
  hooks_.changed(e.ds.meta.ns, e.ds.meta.name);
}

void DatasetRegistry::Delete(const std::string& key) {
  if (!intake_.RunAfterReports(key + " delete", [this, key] { Delete(key); })) return;
  // "<ns>/dataset/<name>" -> "<ns>/<name>", as the other Dataset log lines name it.
  const std::string name = key.substr(0, key.find('/')) + "/" + key.substr(key.rfind('/') + 1);
  auto it = datasets_.find(key);
  if (it != datasets_.end()) {
    Entry& e = *it->second;
    if (e.watching) watcher_->Unwatch(e.src.local_path);
    if (e.poll_timer) e.poll_timer->cancel();
    if (e.status_timer) e.status_timer->cancel();
    if (e.src.s3 && !e.sync_inflight) RemoveMirror(e.src.local_path);
    datasets_.erase(it);
  }
  (void)ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
    if (Status st = tx.DeleteResource(key); !st.ok()) return st;
    return tx.DeleteState(kScopeDataset, key);
  });
  spdlog::info("Dataset {}: deleted", name);
}

std::string DatasetRegistry::MirrorPath(const std::string& key, const std::string& url) const {
  return ctx_.cfg.spool_dir + "/s3-index/" + SanitizeKey(key) + "-" + UrlHash(url) + ".index";
}

void DatasetRegistry::EnsureWatch(Entry& e) {
  if (e.watching || e.src.s3) return;
  Status s = watcher_->Watch(e.src.local_path);
  if (s.ok()) {
    e.watching = true;
  } else {
    spdlog::warn("Dataset {}: {} (polling every {} s until it appears)", e.name(), s.message(),
                 PollSeconds(e));
  }
}

int64_t DatasetRegistry::PollSeconds(const Entry& e) {
  return std::max<int64_t>(hooks_.poll_seconds(e.ds.meta.ns, e.ds.meta.name), 1);
}

void DatasetRegistry::Reschedule(const std::string& ns, const std::string& name) {
  if (Entry* e = Find(ns, name)) SchedulePoll(*e);
}

// A poll already due within the period stays as it is: the GM re-sends every Dataset and job
// every 30-60 s, and postponing the poll at each re-send would keep an unterminated last line
// (taken only by a poll) from ever counting.
void DatasetRegistry::SchedulePoll(Entry& e) {
  const auto now = asio::steady_timer::clock_type::now();
  const auto due = now + std::chrono::seconds(PollSeconds(e));
  if (!e.poll_timer) e.poll_timer = std::make_unique<asio::steady_timer>(ctx_.io);
  if (e.poll_timer->expiry() > now && e.poll_timer->expiry() <= due) return;
  e.poll_timer->expires_at(due);
  const std::string key = e.src.key;
  e.poll_timer->async_wait([this, key](const boost::system::error_code& ec) {
    if (ec || ctx_.stopped) return;
    auto it = datasets_.find(key);
    if (it == datasets_.end()) return;
    if (it->second->src.s3) {
      SyncS3(*it->second);
    } else {
      EnsureWatch(*it->second);
      Read(*it->second, true);
    }
    SchedulePoll(*it->second);
  });
}

void DatasetRegistry::PostRead(Entry& e, bool take_unterminated) {
  if (e.read_posted) return;
  e.read_posted = true;
  const std::string key = e.src.key;
  asio::post(ctx_.io, [this, key, take_unterminated] {
    auto it = datasets_.find(key);
    if (it == datasets_.end() || ctx_.stopped) return;
    it->second->read_posted = false;
    Read(*it->second, take_unterminated);
  });
}

void DatasetRegistry::ReadAll() {
  for (auto& [k, d] : datasets_) PostRead(*d, false);
}

// An S3 index: one HEAD (and a ranged GET of the new bytes, if any) on the pool, then the mirror
// is read like a host index. An unchanged poll also takes an unterminated last line.
void DatasetRegistry::SyncS3(Entry& e) {
  if (e.sync_inflight) return;
  if (!e.creds) {
    NoteSyncProblem(e, "spec.url is on S3 but no " + std::string(core::kCredentialAnnotation) +
                           " annotation was received (spec.credentialName unset, or the GM "
                           "has not re-sent the Dataset since this LC started); not polled yet");
    return;
  }
  if (Status s = fs::MakeDirs(ctx_.cfg.spool_dir + "/s3-index"); !s.ok()) {
    NoteSyncProblem(e, s.message());
    return;
  }
  e.sync_inflight = true;
  asio::post(ctx_.pool, [this, key = e.src.key, creds = *e.creds, url = e.s3_url,
                         mirror = e.src.local_path, options = ctx_.S3Options()] {
    s3::Client client(creds, options);
    auto r = s3::SyncIndexMirror(client, url, mirror);
    asio::post(ctx_.io, [this, key, mirror, r = std::move(r)] { OnS3Synced(key, mirror, r); });
  });
}

void DatasetRegistry::OnS3Synced(const std::string& key, const std::string& mirror,
                                 const Result<s3::MirrorSync>& r) {
  auto it = datasets_.find(key);
  if (it == datasets_.end() || it->second->src.local_path != mirror) {
    RemoveMirror(mirror);  // deleted, or moved to another URL, while syncing
    if (it != datasets_.end()) it->second->sync_inflight = false;
    return;
  }
  Entry& e = *it->second;
  e.sync_inflight = false;
  if (ctx_.stopped) return;
  ctx_.metrics.s3_index_polls++;
  if (!r.ok()) {
    NoteSyncProblem(e, r.message() + "; retrying every " + std::to_string(PollSeconds(e)) + " s");
    return;
  }
  ctx_.metrics.s3_index_requests += r->requests;
  ctx_.metrics.s3_index_bytes += r->bytes_fetched;
  if (r->missing) {
    NoteSyncProblem(e, "s3://" + e.s3_url.bucket + "/" + e.s3_url.key +
                           ": no such object (or bucket); polled again every " +
                           std::to_string(PollSeconds(e)) + " s");
    return;
  }
  if (!e.last_sync_problem.empty()) {
    spdlog::info("Dataset {}: S3 index readable again", e.name());
    e.last_sync_problem.clear();
  }
  if (r->rewritten) spdlog::info("Dataset {}: S3 index object was replaced", e.name());
  Read(e, !r->changed);
}

// A read error is logged once until it changes or clears (a FIFO at the path, say, is read at
// every poll and every change event).
void DatasetRegistry::NoteReadProblem(Entry& e, const std::string& problem) {
  std::string shape = ProblemShape(problem);
  if (shape == e.last_read_problem) return;
  e.last_read_problem = std::move(shape);
  spdlog::error("Dataset {}: {}", e.name(), problem);
}

void DatasetRegistry::NoteSyncProblem(Entry& e, const std::string& problem) {
  std::string shape = ProblemShape(problem);
  if (shape == e.last_sync_problem) return;
  e.last_sync_problem = std::move(shape);
  spdlog::error("Dataset {}: {}", e.name(), problem);
}

void DatasetRegistry::OnIndexChanged(const std::string& path) {
  for (auto& [k, e] : datasets_) {
    if (e->src.local_path == path) PostRead(*e, false);
  }
}

void DatasetRegistry::Read(Entry& e, bool take_unterminated) {
  if (outbox_.Full()) return;  // resumed when the outbox drains
  // The outbox keeps arrival order; a read waiting behind reports is queued once per Dataset.
  if (!intake_.RunAfterReportsOnce("read:" + e.src.key, e.name() + " index read",
                                   [this, key = e.src.key, take_unterminated] {
                                     if (auto it = datasets_.find(key); it != datasets_.end()) {
                                       Read(*it->second, take_unterminated);
                                     }
                                   })) {
    return;
  }
  // One read in flight per Dataset, on the pool: a slow file never holds the loop.
  if (e.read_inflight) {
    e.read_again = true;
    e.read_again_take |= take_unterminated;
    return;
  }
  e.read_inflight = true;
  const dataset::ReadOptions options{take_unterminated, kIngestSliceBytes,
                                     ctx_.cfg.max_index_line_bytes};
  asio::post(ctx_.pool, [this, key = e.src.key, path = e.src.local_path, format = e.src.format,
                         cursor = e.record.cursor, options]() mutable {
    auto r = std::make_shared<Result<dataset::ReadResult>>(dataset::ReadNewSamples(
        path, format, cursor, options, [](std::string_view) { return Status::Ok(); }));
    asio::post(ctx_.io, [this, key, path, cursor, r, take = options.take_unterminated] {
      OnRead(key, path, cursor, *r, take);
    });
  });
}

// A count read came back from the pool: report and persist it, then let the jobs ingest.
void DatasetRegistry::OnRead(const std::string& key, const std::string& path,
                             const dataset::IndexCursor& cursor,
                             const Result<dataset::ReadResult>& r, bool take_unterminated) {
  auto it = datasets_.find(key);
  if (it == datasets_.end()) return;
  Entry& e = *it->second;
  e.read_inflight = false;
  if (ctx_.stopped) return;
  if (e.src.local_path != path) {  // the Dataset moved to another index meanwhile
    PostRead(e, false);
    return;
  }
  // The count frame must not overtake reports acknowledged while the read ran.
  if (!intake_.settled() &&
      !intake_.RunAfterReports(e.name() + " index read",
                               [this, key, path, cursor, r, take_unterminated] {
                                 if (auto it = datasets_.find(key); it != datasets_.end()) {
                                   it->second->read_inflight = true;  // OnRead clears it again
                                   OnRead(key, path, cursor, r, take_unterminated);
                                 }
                               })) {
    e.read_inflight = true;  // until the redo runs: no second read of the same bytes
    return;
  }
  // numberOfSamples (§3.1): counted with the dataset's own cursor, reported when it changes.
  DatasetRecord rec = e.record;
  rec.cursor = cursor;
  bool more = false;
  if (!r.ok()) {
    NoteReadProblem(e, r.message());
  } else if (!r->missing) {
    if (!e.last_read_problem.empty()) {
      spdlog::info("Dataset {}: {} is readable again", e.name(), e.src.local_path);
      e.last_read_problem.clear();
    }
    // Logged here only: the jobs read the same lines with cursors of their own.
    if (r->skipped_lines > 0) {
      spdlog::error("Dataset {}: {}: {}", e.name(), e.src.local_path,
                    dataset::SkippedLinesMessage(*r, ctx_.cfg.max_index_line_bytes));
    }
    more = r->bytes_read >= kIngestSliceBytes || r->checking;  // a check over holes reads less
    if (r->rewritten) {
      spdlog::log(r->rewrite == dataset::Rewrite::kSkippedByCount ? spdlog::level::warn
                                                                  : spdlog::level::info,
                  "Dataset {}: {}: {}; {} new sample(s) in this read{}", e.name(), e.src.local_path,
                  dataset::RewriteMessage(*r), r->new_samples, more ? ", the rest follows" : "");
    }
    const int64_t n = rec.cursor.samples;
    std::vector<std::string> frames;
    if (n != rec.reported && StatusMaySend(e)) {
      frames.push_back(json::EncodeFrame({e.ds.meta.ns, "Dataset", e.ds.meta.name, "status"},
                                         json::EncodeDatasetStatus(n)));
      rec.reported = n;
    }
    if (frames.empty() && rec.cursor.offset == e.record.cursor.offset &&
        rec.cursor.ino == e.record.cursor.ino &&
        rec.cursor.prefix_digest == e.record.cursor.prefix_digest) {
      e.record = rec;  // only in-memory bookkeeping (tail size) changed
    } else {
      Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
        if (Status st = tx.PutState(kScopeDataset, e.src.key, EncodeDatasetRecord(rec)); !st.ok())
          return st;
        for (const auto& f : frames) {
          if (Status st = Outbox::Append(tx, f); !st.ok()) return st;
        }
        return Status::Ok();
      });
      if (s.ok()) {
        e.record = rec;
        if (!frames.empty()) e.last_status = std::chrono::steady_clock::now();
        outbox_.Pump();
      } else {
        spdlog::error("Dataset {}: persisting count: {}", e.name(), s.message());
      }
    }
  }
  hooks_.read(e.src, take_unterminated);
  if (more || e.read_again) {
    const bool take = e.read_again_take || (more && take_unterminated);
    e.read_again = e.read_again_take = false;
    PostRead(e, take);
  }
}

// At most one numberOfSamples per Dataset per --dataset-status-interval-ms (each is an API-server
// write in Sedna); a count that must wait is sent by a read when the interval has passed, so the
// last value always goes out.
bool DatasetRegistry::StatusMaySend(Entry& e) {
  const auto interval = std::chrono::milliseconds(ctx_.cfg.dataset_status_interval_ms);
  const auto now = std::chrono::steady_clock::now();
  if (interval.count() == 0 || now - e.last_status >= interval) return true;
  if (!e.status_due) {
    e.status_due = true;
    if (!e.status_timer) e.status_timer = std::make_unique<asio::steady_timer>(ctx_.io);
    e.status_timer->expires_at(e.last_status + interval);
    e.status_timer->async_wait([this, key = e.src.key](const boost::system::error_code& ec) {
      if (ec || ctx_.stopped) return;
      auto it = datasets_.find(key);
      if (it == datasets_.end()) return;
      it->second->status_due = false;
      PostRead(*it->second, false);
    });
  }
  return false;
}

void DatasetRegistry::Stop() {
  for (auto& [k, d] : datasets_) {
    if (d->poll_timer) d->poll_timer->cancel();
    if (d->status_timer) d->status_timer->cancel();
  }
  watcher_.reset();
}

}  // namespace sedna::app
