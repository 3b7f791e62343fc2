#include "app/controller.h"

#include <nlohmann/json.hpp>

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/index_watcher.h"
#include "adapters/dataset/spool.h"
#include "adapters/fs/files.h"
#include "adapters/gm/gm_link.h"
#include "adapters/http/http_server.h"
#include "adapters/http/worker_api.h"
#include "adapters/json/envelope.h"
#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/index_mirror.h"
#include "adapters/s3/s3_client.h"
#include "adapters/storage/storage.h"
#include "adapters/store/store.h"
#include "app/il_record.h"
#include "app/status_view.h"
#include "core/il_job.h"
#include "core/ll_job.h"
#include "core/split.h"
#include "core/trigger.h"

namespace sedna::app {

namespace asio = boost::asio;
using core::il::Action;
using core::il::Event;

namespace {

constexpr const char* kScopeIl = "il";
constexpr const char* kScopeLl = "ll";
constexpr const char* kScopeDataset = "dataset";
constexpr const char* kScopeStatus = "status";
constexpr int64_t kIngestSliceBytes = 4 << 20;
constexpr int64_t kDefaultPollSeconds = 60;
// A failed ingest (e.g. the spool's disk is full) is tried again after this long, whether or not
// the index changes (as a failed sample-file write is: core::il OnFileWritten).
constexpr std::chrono::seconds kIngestRetry{10};
constexpr size_t kOutboxBatch = 64;

core::il::Now MakeNow() {
  using namespace std::chrono;
  core::il::Now n;
  n.unix_ms = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  std::time_t t = static_cast<std::time_t>(n.unix_ms / 1000);
  std::tm lt{}, ut{};
  localtime_r(&t, &lt);
  gmtime_r(&t, &ut);
  n.minute_of_day = lt.tm_hour * 60 + lt.tm_min;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &ut);
  n.rfc3339 = buf;
  return n;
}

std::string SanitizeKey(const std::string& key) {
  std::string s;
  for (char c : key)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return s;
}

std::string Dirname(const std::string& p) {
  auto pos = p.rfind('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return p.substr(0, pos);
}

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

// Parses an object's sedna.io/credential annotation (§2.5); nullopt when there is none.
Result<std::optional<s3::Credentials>> CredentialsOf(const std::optional<std::string>& json) {
  if (!json) return std::optional<s3::Credentials>();
  auto c = s3::ParseCredentialAnnotation(*json);
  if (!c.ok()) {
    return Status::Error(std::string("metadata.annotations[") + core::kCredentialAnnotation +
                         "]: " + c.message());
  }
  return std::optional<s3::Credentials>(*c);
}

}  // namespace

class GmLinkSink : public UpstreamSink {
 public:
  explicit GmLinkSink(gm::GmLink& link) : link_(link) {}
  bool connected() const override { return link_.connected(); }
  bool Send(std::string frame, std::function<void(bool)> done) override {
    return link_.Send(std::move(frame), std::move(done));
  }

 private:
  gm::GmLink& link_;
};

struct DatasetEntry {
  std::string key;
  core::Dataset ds;
  json::Decoded<core::Dataset> decoded;
  dataset::IndexFormat format = dataset::IndexFormat::kTxt;
  std::string local_path;  // the index file read; for an S3 index, its local mirror
  DatasetRecord record;
  bool s3 = false;  // spec.url is s3://bucket/key, polled at checkPeriodSeconds into local_path
  s3::S3Url s3_url;
  std::optional<s3::Credentials> creds;  // sedna.io/credential, in memory only (B23)
  bool sync_inflight = false;
  std::string last_sync_problem;  // logged once until it changes
  bool watching = false;
  bool read_posted = false;
  bool poll_pending_unterminated = false;
  std::unique_ptr<asio::steady_timer> poll_timer;
};

enum class JobKind { kIl, kLl };

// One IL or LL job: the last received object, its compiled triggers, the core state and the
// job's read cursor over its dataset index (persisted together as one record).
struct JobEntry {
  JobKind kind = JobKind::kIl;
  std::string key;
  uint64_t incarnation = 0;
  json::Decoded<core::IlJob> il;
  json::Decoded<core::LlJob> ll;
  core::Trigger train_trigger;
  core::Trigger deploy_trigger;          // IL only
  std::optional<s3::Credentials> creds;  // sedna.io/credential, in memory only (B23)
  core::il::State il_state;
  core::ll::State ll_state;
  dataset::IndexCursor cursor;
  std::unique_ptr<dataset::Spool> train_spool;
  std::unique_ptr<dataset::Spool> eval_spool;
  std::unique_ptr<asio::steady_timer> tick_timer;
  std::unique_ptr<asio::steady_timer> retry_timer;
  int64_t retry_scheduled_at = 0;
  std::unique_ptr<asio::steady_timer> ingest_retry_timer;
  bool ingest_retry_pending = false;
  bool ingest_posted = false;

  bool is_il() const { return kind == JobKind::kIl; }
  const core::ObjectMeta& meta() const { return is_il() ? il.object.meta : ll.object.meta; }
  const std::string& dataset_name() const {
    return is_il() ? il.object.spec.dataset_name : ll.object.spec.dataset_name;
  }
  double train_prob() const {
    return is_il() ? il.object.spec.train_prob : ll.object.spec.train_prob;
  }
  const std::string& output_dir() const {
    return is_il() ? il.object.spec.output_dir : ll.object.spec.output_dir;
  }
  const std::vector<core::JobCondition>& conditions() const {
    return is_il() ? il.object.conditions : ll.object.conditions;
  }
  const char* object_kind() const {
    return is_il() ? "IncrementalLearningJob" : "LifelongLearningJob";
  }
  std::string name() const { return meta().ns + "/" + meta().name; }
  int64_t samples_seen() const { return is_il() ? il_state.samples_seen : ll_state.samples_seen; }
  int64_t train_committed() const {
    return is_il() ? il_state.train_pending.end : ll_state.train_pending.end;
  }
  int64_t eval_committed() const {
    return is_il() ? il_state.eval_open.end : ll_state.eval_open.end;
  }
  std::string EncodeRecord(const dataset::IndexCursor& c) const {
    return is_il() ? EncodeIlRecord({il_state, c}) : EncodeLlRecord({ll_state, c});
  }
};

struct Controller::Impl {
  asio::io_context& io;
  Config cfg;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<http::HttpServer> worker_server;
  std::unique_ptr<http::HttpServer> status_server;
  std::unique_ptr<gm::GmLink> gm;
  // Cluster mode wraps the GM link; standalone mode sets its local manager.
  std::unique_ptr<UpstreamSink> gm_sink;
  UpstreamSink* sink = nullptr;
  std::unique_ptr<dataset::IndexWatcher> watcher;
  asio::thread_pool pool{2};
  std::map<std::string, std::unique_ptr<DatasetEntry>> datasets;
  std::map<std::string, json::Decoded<core::Model>> models;
  std::map<std::string, std::unique_ptr<JobEntry>> jobs;
  std::set<std::string> warned_kinds;
  std::set<std::string> passthrough;  // JI/FL resource keys
  uint64_t next_incarnation = 1;
  bool outbox_inflight = false;
  bool outbox_full = false;
  std::deque<store::OutboxEntry> outbox_queue;  // read ahead from SQLite, not yet written
  int64_t outbox_queued_through = 0;
  bool stopped = false;
  int lock_fd = -1;
  Metrics metrics;

  Impl(asio::io_context& io_, Config c) : io(io_), cfg(std::move(c)) {}

  // ---------------------------------------------------------------- persistence helpers

  std::string JobFrame(const JobEntry& e, const std::string& content) {
    return json::EncodeFrame({e.meta().ns, e.object_kind(), e.meta().name, "status"}, content);
  }

  // ---------------------------------------------------------------- outbox

  // The outbox bound (docs/durability.md): above it, sources that can wait are paused.
  bool OutboxFull() {
    auto st = store->GetOutboxStats();
    const bool full = st.ok() && st->bytes > cfg.outbox_max_bytes;
    if (full != outbox_full) {
      outbox_full = full;
      if (full) {
        spdlog::warn(
            "outbox full ({} bytes > --outbox-max-bytes {}): sample ingestion paused, "
            "worker reports answered 503 until the GM link drains it",
            st->bytes, cfg.outbox_max_bytes);
      } else {
        spdlog::info("outbox below its limit again: ingestion resumed");
        for (auto& [k, d] : datasets) PostRead(*d, false);
      }
    }
    return full;
  }

  // Sends the outbox in id order, one frame in flight. Frames are read from SQLite in batches; a
  // written frame is deleted at once (docs/durability.md: the at-least-once window is that one
  // delete; a kill right after the GM got a frame can re-send it).
  void PumpOutbox() {
    if (stopped || !sink || !sink->connected() || outbox_inflight) return;
    if (outbox_queue.empty()) {
      auto peek = store->OutboxPeek(kOutboxBatch, outbox_queued_through);
      if (!peek.ok()) {
        spdlog::error("outbox: {}", peek.message());
        return;
      }
      if (peek->empty()) return;
      outbox_queued_through = peek->back().id;
      for (auto& e : *peek) outbox_queue.push_back(std::move(e));
    }
    const int64_t id = outbox_queue.front().id;
    outbox_inflight = true;
    bool sent = sink->Send(std::move(outbox_queue.front().frame), [this, id](bool written) {
      outbox_inflight = false;
      if (!written) {
        RequeueOutbox();
        return;  // the link calls PumpOutbox again when it reconnects
      }
      outbox_queue.pop_front();
      store->OutboxAck(id);
      metrics.frames_sent++;
      FlushAcks();
      PumpOutbox();
    });
    if (!sent) {
      outbox_inflight = false;
      RequeueOutbox();
    }
  }

  // Unsent frames are read again from SQLite, from the first unacknowledged one.
  void RequeueOutbox() {
    outbox_queue.clear();
    outbox_queued_through = store->OutboxAckedThrough();
  }

  void FlushAcks() {
    if (Status s = store->OutboxFlushAcks(); !s.ok()) spdlog::error("outbox: {}", s.message());
    if (outbox_full) OutboxFull();
  }

  // ---------------------------------------------------------------- datasets

  DatasetEntry* FindDataset(const std::string& ns, const std::string& name) {
    auto it = datasets.find(core::ResourceKey(ns, core::kKindDataset, name));
    return it == datasets.end() ? nullptr : it->second.get();
  }

  void UpsertDataset(json::Decoded<core::Dataset> d, bool persist) {
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
      spdlog::error("{}: spec.url: \"{}\": unsupported scheme (host paths and s3:// only)", who,
                    ds.spec.url);
      return;
    }
    auto& slot = datasets[key];
    const bool fresh = !slot;
    if (fresh) {
      slot = std::make_unique<DatasetEntry>();
      slot->key = key;
      if (auto rec = store->GetState(kScopeDataset, key); rec.ok() && rec->has_value()) {
        auto r = DecodeDatasetRecord(**rec);
        if (r.ok()) slot->record = *r;
      }
    }
    DatasetEntry& e = *slot;
    const std::string new_path =
        is_s3 ? MirrorPath(key, ds.spec.url) : fs::JoinRootfs(cfg.rootfs, ds.spec.url);
    if (!fresh && new_path != e.local_path) {
      // B26: a changed spec.url is followed; counting restarts on the new index.
      if (e.watching) watcher->Unwatch(e.local_path);
      if (e.s3) RemoveMirror(e.local_path);
      e.watching = false;
      e.record = DatasetRecord{};
    }
    e.s3 = is_s3;
    e.s3_url = s3_url;
    // Stored objects carry no credential (B23): keep what the GM sent until it sends again.
    if (creds || persist) e.creds = creds;
    e.ds = ds;
    e.format = *fmt;
    e.local_path = new_path;
    if (persist) {
      Status s = store->Transact([&](store::Store::Tx& tx) {
        return tx.UpsertResource({key, d.type_meta_json, d.object_meta_json, d.spec_json});
      });
      if (!s.ok()) spdlog::error("{}: persisting: {}", who, s.message());
    }
    e.decoded = std::move(d);  // `ds` refers into `d`: use e.ds below
    if (fresh) {
      if (e.s3) {
        spdlog::info("{}: polling {} every {} s (mirrored in {})", who, e.ds.spec.url,
                     PollSeconds(e), e.local_path);
      } else {
        spdlog::info("{}: watching {}", who, e.local_path);
      }
    }
    EnsureWatch(e);
    SchedulePoll(e);
    if (e.s3) {
      SyncS3(e);
    } else {
      PostRead(e, false);
    }
    for (auto& [k, j] : jobs) {
      if (j->meta().ns == e.ds.meta.ns && j->dataset_name() == e.ds.meta.name) {
        StepJob(*j, core::il::JobChanged{});
      }
    }
  }

  std::string MirrorPath(const std::string& key, const std::string& url) const {
    return cfg.spool_dir + "/s3-index/" + SanitizeKey(key) + "-" + UrlHash(url) + ".index";
  }

  void EnsureWatch(DatasetEntry& e) {
    if (e.watching || e.s3) return;
    Status s = watcher->Watch(e.local_path);
    if (s.ok()) {
      e.watching = true;
    } else {
      spdlog::warn("Dataset {}: {} (polling every {} s until it appears)", e.key, s.message(),
                   PollSeconds(e));
    }
  }

  int64_t PollSeconds(const DatasetEntry& e) {
    int64_t p = kDefaultPollSeconds;
    for (auto& [k, j] : jobs) {
      if (j->meta().ns == e.ds.meta.ns && j->dataset_name() == e.ds.meta.name) {
        p = std::min(p, j->train_trigger.check_period_seconds);
      }
    }
    return std::max<int64_t>(p, 1);
  }

  // Fallback poll at the trigger's checkPeriodSeconds; also takes an unterminated last line that
  // stayed unchanged for one period.
  void SchedulePoll(DatasetEntry& e) {
    if (!e.poll_timer) e.poll_timer = std::make_unique<asio::steady_timer>(io);
    e.poll_timer->expires_after(std::chrono::seconds(PollSeconds(e)));
    const std::string key = e.key;
    e.poll_timer->async_wait([this, key](const boost::system::error_code& ec) {
      if (ec || stopped) return;
      auto it = datasets.find(key);
      if (it == datasets.end()) return;
      if (it->second->s3) {
        SyncS3(*it->second);
      } else {
        EnsureWatch(*it->second);
        ReadDataset(*it->second, true);
      }
      SchedulePoll(*it->second);
    });
  }

  void PostRead(DatasetEntry& e, bool take_unterminated) {
    if (e.read_posted) return;
    e.read_posted = true;
    const std::string key = e.key;
    asio::post(io, [this, key, take_unterminated] {
      auto it = datasets.find(key);
      if (it == datasets.end() || stopped) return;
      it->second->read_posted = false;
      ReadDataset(*it->second, take_unterminated);
    });
  }

  // An S3 index: one HEAD (and a ranged GET of the new bytes, if any) on the pool, then the mirror
  // is read like a host index. An unchanged poll also takes an unterminated last line.
  void SyncS3(DatasetEntry& e) {
    if (e.sync_inflight) return;
    if (!e.creds) {
      NoteSyncProblem(e, "spec.url is on S3 but no " + std::string(core::kCredentialAnnotation) +
                             " annotation was received (spec.credentialName unset, or the GM "
                             "has not re-sent the Dataset since this LC started); not polled yet");
      return;
    }
    if (Status s = fs::MakeDirs(cfg.spool_dir + "/s3-index"); !s.ok()) {
      NoteSyncProblem(e, s.message());
      return;
    }
    e.sync_inflight = true;
    asio::post(pool, [this, key = e.key, creds = *e.creds, url = e.s3_url, mirror = e.local_path] {
      s3::Client client(creds, S3Options());
      auto r = s3::SyncIndexMirror(client, url, mirror);
      asio::post(io, [this, key, mirror, r = std::move(r)] { OnS3Synced(key, mirror, r); });
    });
  }

  void OnS3Synced(const std::string& key, const std::string& mirror,
                  const Result<s3::MirrorSync>& r) {
    auto it = datasets.find(key);
    if (it == datasets.end() || it->second->local_path != mirror) {
      RemoveMirror(mirror);  // deleted, or moved to another URL, while syncing
      if (it != datasets.end()) it->second->sync_inflight = false;
      return;
    }
    DatasetEntry& e = *it->second;
    e.sync_inflight = false;
    if (stopped) return;
    metrics.s3_index_polls++;
    if (!r.ok()) {
      NoteSyncProblem(e, r.message() + "; retrying every " + std::to_string(PollSeconds(e)) + " s");
      return;
    }
    metrics.s3_index_requests += r->requests;
    metrics.s3_index_bytes += r->bytes_fetched;
    if (r->missing) {
      NoteSyncProblem(e, "s3://" + e.s3_url.bucket + "/" + e.s3_url.key +
                             ": no such object (or bucket); polled again every " +
                             std::to_string(PollSeconds(e)) + " s");
      return;
    }
    if (!e.last_sync_problem.empty()) {
      spdlog::info("Dataset {}: S3 index readable again", e.key);
      e.last_sync_problem.clear();
    }
    if (r->rewritten) spdlog::info("Dataset {}: S3 index object was replaced", e.key);
    ReadDataset(e, !r->changed);
  }

  void NoteSyncProblem(DatasetEntry& e, const std::string& problem) {
    if (problem == e.last_sync_problem) return;
    e.last_sync_problem = problem;
    spdlog::error("Dataset {}: {}", e.key, problem);
  }

  s3::ClientOptions S3Options() const {
    s3::ClientOptions o;
    o.timeout = std::chrono::milliseconds(cfg.s3_timeout_ms);
    o.retries = cfg.s3_retries;
    return o;
  }

  storage::Context StorageContext(const JobEntry& e) const {
    storage::Context c;
    c.rootfs = cfg.rootfs;
    c.staging_dir = cfg.spool_dir + "/staging";
    c.credentials = e.creds;
    c.s3_options = S3Options();
    return c;
  }

  void OnIndexChanged(const std::string& path) {
    for (auto& [k, e] : datasets) {
      if (e->local_path == path) PostRead(*e, false);
    }
  }

  void ReadDataset(DatasetEntry& e, bool take_unterminated) {
    if (OutboxFull()) return;  // resumed when the outbox drains
    // numberOfSamples (§3.1): counted with the dataset's own cursor, reported when it changes.
    DatasetRecord rec = e.record;
    bool more = false;
    auto r =
        dataset::ReadNewSamples(e.local_path, e.format, rec.cursor, take_unterminated,
                                kIngestSliceBytes, [](std::string_view) { return Status::Ok(); });
    if (!r.ok()) {
      spdlog::error("Dataset {}: reading {}: {}", e.key, e.local_path, r.message());
    } else if (!r->missing) {
      more = r->bytes_read >= kIngestSliceBytes;
      if (r->rewritten) spdlog::info("Dataset {}: index was replaced or rewritten", e.key);
      const int64_t n = rec.cursor.samples;
      std::vector<std::string> frames;
      if (n != rec.reported) {
        frames.push_back(json::EncodeFrame({e.ds.meta.ns, "Dataset", e.ds.meta.name, "status"},
                                           json::EncodeDatasetStatus(n)));
        rec.reported = n;
      }
      if (frames.empty() && rec.cursor.offset == e.record.cursor.offset &&
          rec.cursor.ino == e.record.cursor.ino) {
        e.record = rec;  // only in-memory bookkeeping (tail size) changed
      } else {
        Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
          if (Status st = tx.PutState(kScopeDataset, e.key, EncodeDatasetRecord(rec)); !st.ok())
            return st;
          for (const auto& f : frames) {
            if (auto id = tx.OutboxAppend(f); !id.ok()) return id.status();
          }
          return Status::Ok();
        });
        if (s.ok()) {
          e.record = rec;
          PumpOutbox();
        } else {
          spdlog::error("Dataset {}: persisting count: {}", e.key, s.message());
        }
      }
    }
    for (auto& [k, j] : jobs) {
      if (j->meta().ns == e.ds.meta.ns && j->dataset_name() == e.ds.meta.name) {
        Ingest(*j, e, take_unterminated);
      }
    }
    if (more) PostRead(e, take_unterminated);
  }

  // ---------------------------------------------------------------- models

  void UpsertModel(json::Decoded<core::Model> d, bool persist) {
    const auto& m = d.object;
    const std::string key = core::ResourceKey(m.meta.ns, core::kKindModel, m.meta.name);
    if (persist) {
      Status s = store->Transact([&](store::Store::Tx& tx) {
        return tx.UpsertResource({key, d.type_meta_json, d.object_meta_json, d.spec_json});
      });
      if (!s.ok()) spdlog::error("Model {}: persisting: {}", key, s.message());
    }
    const std::string ns = m.meta.ns, name = m.meta.name;
    models[key] = std::move(d);
    for (auto& [k, j] : jobs) {
      if (!j->is_il()) continue;
      const auto& sp = j->il.object.spec;
      if (j->meta().ns == ns && (sp.initial_model_name == name || sp.deploy_model_name == name)) {
        StepJob(*j, core::il::JobChanged{});
      }
    }
  }

  std::optional<core::ModelRef> ModelRefFor(const std::string& ns, const std::string& name) {
    auto it = models.find(core::ResourceKey(ns, core::kKindModel, name));
    if (it == models.end()) return std::nullopt;
    return core::ModelRef{it->second.object.spec.format, it->second.object.spec.url, {}};
  }

  // ---------------------------------------------------------------- IL and LL jobs

  static Status ValidateCommon(const std::string& dataset, double train_prob,
                               const std::string& output_dir) {
    if (Status s = core::ValidateTrainProb(train_prob); !s.ok()) {
      return Status::Error("spec.dataset." + s.message());
    }
    if (dataset.empty()) return Status::Error("spec.dataset.name: empty");
    if (output_dir.empty()) return Status::Error("spec.outputDir: empty");
    if (fs::IsS3Url(output_dir)) {
      auto u = s3::ParseS3Url(output_dir);
      if (!u.ok()) return Status::Error("spec.outputDir: \"" + output_dir + "\": " + u.message());
      return Status::Ok();
    }
    if (output_dir.find("://") != std::string::npos) {
      return Status::Error("spec.outputDir: \"" + output_dir +
                           "\": unsupported scheme (host paths and s3:// only)");
    }
    if (output_dir[0] != '/') {
      return Status::Error("spec.outputDir: \"" + output_dir + "\" is not absolute");
    }
    return Status::Ok();
  }

  Status ValidateJob(JobEntry& probe, core::Trigger& train, core::Trigger& deploy) {
    if (probe.is_il()) {
      const auto& job = probe.il.object;
      auto t = core::CompileTrigger(job.spec.train_trigger);
      if (!t.ok()) return Status::Error("spec.trainSpec.trigger." + t.message());
      auto d = core::CompileTrigger(job.spec.deploy_trigger);
      if (!d.ok()) return Status::Error("spec.deploySpec.trigger." + d.message());
      train = *t;
      deploy = *d;
      return ValidateCommon(job.spec.dataset_name, job.spec.train_prob, job.spec.output_dir);
    }
    const auto& job = probe.ll.object;
    auto t = core::CompileTrigger(job.spec.train_trigger);
    if (!t.ok()) return Status::Error("spec.trainSpec.trigger." + t.message());
    train = *t;
    return ValidateCommon(job.spec.dataset_name, job.spec.train_prob, job.spec.output_dir);
  }

  std::string SpoolPath(const JobEntry& e, const char* which) {
    return cfg.spool_dir + "/" + SanitizeKey(e.key) + "." + which;
  }

  const char* ScopeOf(JobKind k) { return k == JobKind::kIl ? kScopeIl : kScopeLl; }

  // Inserts or updates an IL or LL job. An invalid object is rejected with a message naming the
  // field; a previous good version keeps running.
  void UpsertJob(JobEntry incoming, bool persist) {
    const std::string kind_lower = incoming.is_il() ? core::kKindIlJob : core::kKindLlJob;
    const std::string key = core::ResourceKey(incoming.meta().ns, kind_lower, incoming.meta().name);
    const std::string who = std::string(incoming.object_kind()) + " " + incoming.name();
    core::Trigger train, deploy;
    auto creds =
        CredentialsOf(incoming.is_il() ? incoming.il.credential_json : incoming.ll.credential_json);
    if (Status s = creds.ok() ? ValidateJob(incoming, train, deploy) : creds.status(); !s.ok()) {
      spdlog::error("{}: rejected: {}; {}", who, s.message(),
                    jobs.count(key) ? "keeping its previous version" : "job not started");
      metrics.rejected_objects++;
      return;
    }
    auto& slot = jobs[key];
    const bool fresh = !slot;
    if (fresh) {
      slot = std::make_unique<JobEntry>();
      slot->kind = incoming.kind;
      slot->key = key;
      slot->incarnation = next_incarnation++;
      if (auto rec = store->GetState(ScopeOf(slot->kind), key); rec.ok() && rec->has_value()) {
        if (slot->is_il()) {
          auto r = DecodeIlRecord(**rec);
          if (r.ok()) {
            slot->il_state = r->state;
            slot->cursor = r->cursor;
            spdlog::info("{}: resumed at round {} ({} samples seen, work {})", who, r->state.round,
                         r->state.samples_seen, core::il::WorkName(r->state.work));
          } else {
            spdlog::error("{}: stored state unreadable ({}); starting fresh", who, r.message());
          }
        } else {
          auto r = DecodeLlRecord(**rec);
          if (r.ok()) {
            slot->ll_state = r->state;
            slot->cursor = r->cursor;
            spdlog::info("{}: resumed at version {} phase {} ({} samples seen)", who,
                         r->state.version, core::ll::PhaseName(r->state.phase),
                         r->state.samples_seen);
          } else {
            spdlog::error("{}: stored state unreadable ({}); starting fresh", who, r.message());
          }
        }
      }
    } else if (slot->kind != incoming.kind) {
      spdlog::error("{}: rejected: kind changed", who);
      return;
    }
    JobEntry& e = *slot;
    e.train_trigger = train;
    e.deploy_trigger = deploy;
    if (*creds || persist) e.creds = *creds;  // stored objects carry none (B23)
    if (e.is_il()) {
      e.il = std::move(incoming.il);
    } else {
      e.ll = std::move(incoming.ll);
    }
    if (fresh) {
      // Output directories exist before any Ready is sent (§4.5); S3 has no directories.
      const std::string out = fs::JoinRootfs(cfg.rootfs, core::il::OutputRoot(e.output_dir()));
      std::vector<std::string> subs;
      if (!fs::IsS3Url(e.output_dir())) subs = {"", "/data/train", "/data/eval", "/train", "/eval"};
      if (!subs.empty() && !e.is_il()) subs.push_back("/deploy");
      for (const auto& sub : subs) {
        if (Status s = fs::MakeDirs(out + sub); !s.ok()) spdlog::error("{}: {}", who, s.message());
      }
      auto ts = dataset::Spool::Open(SpoolPath(e, "train"), e.train_committed());
      auto es = dataset::Spool::Open(SpoolPath(e, "eval"), e.eval_committed());
      if (!ts.ok() || !es.ok()) {
        spdlog::error("{}: spool: {}{}", who, ts.message(), es.message());
        jobs.erase(key);
        return;
      }
      e.train_spool = std::move(*ts);
      e.eval_spool = std::move(*es);
      if (e.is_il()) {
        spdlog::info("{}: loaded (train trigger: {}; deploy trigger: {})", who, train.text,
                     deploy.text);
      } else {
        spdlog::info("{}: loaded (train trigger: {})", who, train.text);
      }
    }
    if (persist) {
      const std::string type_meta = e.is_il() ? e.il.type_meta_json : e.ll.type_meta_json;
      const std::string object_meta = e.is_il() ? e.il.object_meta_json : e.ll.object_meta_json;
      const std::string spec = e.is_il() ? e.il.spec_json : e.ll.spec_json;
      const std::string status = e.is_il() ? e.il.status_json : e.ll.status_json;
      Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
        if (Status st = tx.UpsertResource({key, type_meta, object_meta, spec}); !st.ok()) return st;
        if (Status st = tx.PutState(kScopeStatus, key, status); !st.ok()) return st;
        return tx.PutState(ScopeOf(e.kind), key, e.EncodeRecord(e.cursor));
      });
      if (!s.ok()) spdlog::error("{}: persisting: {}", who, s.message());
    }
    ScheduleTick(e);
    if (fresh) StepJob(e, core::il::Resume{});
    if (DatasetEntry* ds = FindDataset(e.meta().ns, e.dataset_name())) {
      SchedulePoll(*ds);
      Ingest(e, *ds, false);
    }
    StepJob(e, core::il::JobChanged{});
  }

  void ScheduleTick(JobEntry& e) {
    if (!e.tick_timer) e.tick_timer = std::make_unique<asio::steady_timer>(io);
    e.tick_timer->expires_after(std::chrono::seconds(e.train_trigger.check_period_seconds));
    const std::string key = e.key;
    const uint64_t inc = e.incarnation;
    e.tick_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
      if (ec || stopped) return;
      JobEntry* j = FindJob(key, inc);
      if (!j) return;
      if (DatasetEntry* ds = FindDataset(j->meta().ns, j->dataset_name())) {
        Ingest(*j, *ds, false);
      }
      StepJob(*j, core::il::Tick{});
      ScheduleTick(*j);
    });
  }

  JobEntry* FindJob(const std::string& key, uint64_t incarnation) {
    auto it = jobs.find(key);
    if (it == jobs.end() || it->second->incarnation != incarnation) return nullptr;
    return it->second.get();
  }

  void DeleteJob(const std::string& key, JobKind kind) {
    auto it = jobs.find(key);
    if (it != jobs.end()) {
      JobEntry& e = *it->second;
      if (e.tick_timer) e.tick_timer->cancel();
      if (e.retry_timer) e.retry_timer->cancel();
      if (e.ingest_retry_timer) e.ingest_retry_timer->cancel();
      ::unlink(SpoolPath(e, "train").c_str());
      ::unlink(SpoolPath(e, "eval").c_str());
      jobs.erase(it);
    }
    Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
      if (Status st = tx.DeleteResource(key); !st.ok()) return st;
      if (Status st = tx.DeleteState(kScopeStatus, key); !st.ok()) return st;
      return tx.DeleteState(ScopeOf(kind), key);
    });
    if (!s.ok()) spdlog::error("{}: deleting: {}", key, s.message());
    spdlog::info("{}: deleted", key);
  }

  // Streams the samples appended to the job's dataset index into its spools, split by running
  // totals, then commits the cursor and counts with the step that sees them.
  void Ingest(JobEntry& e, DatasetEntry& ds, bool take_unterminated) {
    if (OutboxFull()) return;
    const double p = e.train_prob();
    dataset::IndexCursor cursor = e.cursor;
    if (cursor.path != ds.local_path) {
      // B26/B28: the Dataset now names another index (url changed, or deleted and re-created
      // elsewhere). It is a new source: read it from its start; the split's running total
      // (samples_seen) continues.
      if (!cursor.path.empty()) {
        spdlog::info(
            "{} {}: dataset index changed from {} to {}; reading the new index from "
            "its start",
            e.object_kind(), e.name(), cursor.path, ds.local_path);
      }
      std::string header = cursor.header;
      cursor = dataset::IndexCursor{};
      cursor.path = ds.local_path;
      cursor.header = header;  // kept for csv files until the new header is read
    }
    int64_t seen = e.samples_seen(), train_added = 0, eval_added = 0;
    auto r = dataset::ReadNewSamples(ds.local_path, ds.format, cursor, take_unterminated,
                                     kIngestSliceBytes, [&](std::string_view line) -> Status {
                                       ++seen;
                                       if (core::IsTrainSample(p, seen)) {
                                         ++train_added;
                                         return e.train_spool->Append(line);
                                       }
                                       ++eval_added;
                                       return e.eval_spool->Append(line);
                                     });
    Status st = r.ok() ? Status::Ok() : r.status();
    if (st.ok() && train_added + eval_added > 0) {
      Status a = e.train_spool->Flush();
      Status b = e.eval_spool->Flush();
      st = !a.ok() ? a : b;
    }
    if (!st.ok()) {
      spdlog::error("{} {}: ingesting {}: {}; retrying in {} s", e.object_kind(), e.name(),
                    ds.local_path, st.message(), kIngestRetry.count());
      ResetSpools(e);
      ScheduleIngestRetry(e);
      return;
    }
    if (r->missing) {
      if (cursor.path != e.cursor.path) StepJob(e, core::il::JobChanged{}, {}, &cursor);
      return;
    }
    if (train_added + eval_added == 0) {
      if (cursor.path != e.cursor.path) {
        StepJob(e, core::il::JobChanged{}, {}, &cursor);  // persist the new source
      } else {
        e.cursor = cursor;  // header/tail bookkeeping only
      }
      return;
    }
    metrics.samples_ingested += train_added + eval_added;
    core::il::SamplesIngested ev{seen, train_added, e.train_spool->size(), eval_added,
                                 e.eval_spool->size()};
    if (!StepJob(e, ev, {}, &cursor)) {
      ResetSpools(e);
      return;
    }
    if (r->bytes_read >= kIngestSliceBytes && !e.ingest_posted) {
      e.ingest_posted = true;
      const std::string key = e.key;
      const uint64_t inc = e.incarnation;
      asio::post(io, [this, key, inc, take_unterminated] {
        JobEntry* j = FindJob(key, inc);
        if (!j) return;
        j->ingest_posted = false;
        if (DatasetEntry* d = FindDataset(j->meta().ns, j->dataset_name())) {
          Ingest(*j, *d, take_unterminated);
        }
      });
    }
  }

  // Ingests again after kIngestRetry: a failed ingest must not wait for the next index change or
  // the job's checkPeriodSeconds tick.
  void ScheduleIngestRetry(JobEntry& e) {
    if (e.ingest_retry_pending) return;
    e.ingest_retry_pending = true;
    if (!e.ingest_retry_timer) e.ingest_retry_timer = std::make_unique<asio::steady_timer>(io);
    e.ingest_retry_timer->expires_after(kIngestRetry);
    const std::string key = e.key;
    const uint64_t inc = e.incarnation;
    e.ingest_retry_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
      if (ec || stopped) return;
      JobEntry* j = FindJob(key, inc);
      if (!j) return;
      j->ingest_retry_pending = false;
      if (DatasetEntry* d = FindDataset(j->meta().ns, j->dataset_name())) Ingest(*j, *d, false);
    });
  }

  // Drops spool bytes that were appended but not committed.
  void ResetSpools(JobEntry& e) {
    auto ts = dataset::Spool::Open(SpoolPath(e, "train"), e.train_committed());
    auto es = dataset::Spool::Open(SpoolPath(e, "eval"), e.eval_committed());
    if (ts.ok()) e.train_spool = std::move(*ts);
    if (es.ok()) e.eval_spool = std::move(*es);
  }

  core::il::Spec MakeIlSpec(const JobEntry& e) {
    core::il::Spec spec;
    spec.job = &e.il.object;
    spec.train_trigger = &e.train_trigger;
    spec.deploy_trigger = &e.deploy_trigger;
    spec.initial_model = ModelRefFor(e.meta().ns, e.il.object.spec.initial_model_name);
    spec.deploy_model = ModelRefFor(e.meta().ns, e.il.object.spec.deploy_model_name);
    DatasetEntry* ds = FindDataset(e.meta().ns, e.dataset_name());
    spec.dataset_known = ds != nullptr;
    spec.csv = ds && ds->format == dataset::IndexFormat::kCsv;
    spec.dataset_s3 = ds && ds->s3;
    return spec;
  }

  core::ll::Spec MakeLlSpec(const JobEntry& e) {
    core::ll::Spec spec;
    spec.job = &e.ll.object;
    spec.train_trigger = &e.train_trigger;
    DatasetEntry* ds = FindDataset(e.meta().ns, e.dataset_name());
    spec.dataset_known = ds != nullptr;
    spec.csv = ds && ds->format == dataset::IndexFormat::kCsv;
    spec.dataset_s3 = ds && ds->s3;
    return spec;
  }

  // Steps the job; commits the new state, `pre_frames` and the reports in one transaction; then
  // runs the actions. Returns false (state unchanged) when the commit failed.
  bool StepJob(JobEntry& e, const Event& ev, std::vector<std::string> pre_frames = {},
               const dataset::IndexCursor* new_cursor = nullptr) {
    const core::il::Now now = MakeNow();
    std::vector<Action> actions;
    bool state_changed = false;
    core::il::State il_next;
    core::ll::State ll_next;
    if (e.is_il()) {
      core::il::Output out = core::il::Step(MakeIlSpec(e), e.il_state, ev, now);
      state_changed = !(out.state == e.il_state);
      il_next = std::move(out.state);
      actions = std::move(out.actions);
    } else {
      core::ll::Output out = core::ll::Step(MakeLlSpec(e), e.ll_state, ev, now);
      state_changed = !(out.state == e.ll_state);
      ll_next = std::move(out.state);
      actions = std::move(out.actions);
    }
    std::vector<std::string> frames = std::move(pre_frames);
    for (const Action& a : actions) {
      if (auto* r = std::get_if<core::il::SendReport>(&a)) {
        frames.push_back(JobFrame(e, json::EncodeStatusReport(r->report)));
      }
    }
    const dataset::IndexCursor& cursor = new_cursor ? *new_cursor : e.cursor;
    if (state_changed || new_cursor || !frames.empty()) {
      const bool write_record = state_changed || new_cursor;  // a forward alone needs no record
      const std::string rec = !write_record ? std::string()
                              : e.is_il()   ? EncodeIlRecord({il_next, cursor})
                                            : EncodeLlRecord({ll_next, cursor});
      Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
        for (const auto& f : frames) {
          if (auto id = tx.OutboxAppend(f); !id.ok()) return id.status();
        }
        return write_record ? tx.PutState(ScopeOf(e.kind), e.key, rec) : Status::Ok();
      });
      if (!s.ok()) {
        spdlog::error("{} {}: committing state: {}; event dropped", e.object_kind(), e.name(),
                      s.message());
        return false;
      }
    }
    if (e.is_il()) {
      e.il_state = std::move(il_next);
    } else {
      e.ll_state = std::move(ll_next);
    }
    if (new_cursor) e.cursor = *new_cursor;
    for (const Action& a : actions) RunAction(e, a);
    if (!frames.empty()) PumpOutbox();
    ScheduleRetry(e, now.unix_ms);
    return true;
  }

  // A step that deferred work (retry_after_ms) gets a Tick at that time, not only at the next
  // checkPeriodSeconds.
  void ScheduleRetry(JobEntry& e, int64_t now_ms) {
    const int64_t at = e.is_il() ? e.il_state.retry_after_ms : e.ll_state.retry_after_ms;
    if (at <= now_ms || at == e.retry_scheduled_at) return;
    e.retry_scheduled_at = at;
    if (!e.retry_timer) e.retry_timer = std::make_unique<asio::steady_timer>(io);
    e.retry_timer->expires_after(std::chrono::milliseconds(at - now_ms + 5));
    const std::string key = e.key;
    const uint64_t inc = e.incarnation;
    e.retry_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
      if (ec || stopped) return;
      if (JobEntry* j = FindJob(key, inc)) {
        j->retry_scheduled_at = 0;
        StepJob(*j, core::il::Tick{});
      }
    });
  }

  void RunAction(JobEntry& e, const Action& a) {
    const std::string key = e.key;
    const std::string who = std::string(e.object_kind()) + " " + e.name();
    const uint64_t inc = e.incarnation;
    if (auto* log = std::get_if<core::il::Log>(&a)) {
      switch (log->level) {
        case core::il::Log::Level::kInfo:
          spdlog::info("{}: {}", who, log->text);
          break;
        case core::il::Log::Level::kWarn:
          spdlog::warn("{}: {}", who, log->text);
          break;
        case core::il::Log::Level::kError:
          spdlog::error("{}: {}", who, log->text);
          break;
      }
    } else if (auto* r = std::get_if<core::il::SendReport>(&a)) {
      spdlog::info("{}: reported {} {}", who, r->report.phase, r->report.status);
    } else if (auto* w = std::get_if<core::il::WriteSamples>(&a)) {
      std::vector<fs::FileRange> ranges;
      const std::string spool =
          SpoolPath(e, w->spool == core::il::SpoolKind::kTrain ? "train" : "eval");
      for (const auto& r : w->ranges) ranges.push_back({spool, r.begin, r.end});
      storage::SampleFile file;
      file.url = w->url;
      if (w->csv_header) file.prefix = e.cursor.header + "\n";
      file.ranges = std::move(ranges);
      file.index_url = w->index_url;
      if (const DatasetEntry* ds = FindDataset(e.meta().ns, e.dataset_name())) {
        file.index_prefix = storage::UrlPrefix(ds->ds.spec.url);
      }
      const core::il::Work work = w->stage == core::Stage::kTrain ? core::il::Work::kWriteTrain
                                                                  : core::il::Work::kWriteEval;
      const int64_t round = w->round;
      asio::post(pool,
                 [this, key, inc, ctx = StorageContext(e), file = std::move(file), work, round] {
                   Status s = storage::WriteSampleFile(ctx, file);
                   asio::post(io, [this, key, inc, work, round, s] {
                     if (JobEntry* j = FindJob(key, inc)) {
                       StepJob(*j, core::il::FileWritten{work, round, s.ok(), s.message()});
                     }
                   });
                 });
    } else if (auto* c = std::get_if<core::il::CopyModel>(&a)) {
      asio::post(pool,
                 [this, key, inc, ctx = StorageContext(e), src = c->src_url, dst = c->dst_url] {
                   Status s = storage::CopyModel(ctx, src, dst);
                   asio::post(io, [this, key, inc, s] {
                     if (JobEntry* j = FindJob(key, inc)) {
                       StepJob(*j, core::il::ModelCopied{s.ok(), s.message()});
                     }
                   });
                 });
    }
  }

  // ---------------------------------------------------------------- GM frames

  void WarnKindOnce(const std::string& kind, const std::string& text) {
    if (warned_kinds.insert(kind).second) spdlog::warn("{}", text);
  }

  void OnGmFrame(const std::string& text) {
    metrics.frames_received++;
    auto f = json::DecodeFrame(text);
    if (!f.ok()) {
      spdlog::warn("GM frame {}skipped: {}", FrameObjectName(text), f.message());
      metrics.rejected_frames++;
      return;
    }
    const auto& h = f->header;
    const std::string& kind = h.resource_kind;
    const std::string key = core::ResourceKey(h.ns, kind, h.resource_name);
    if (h.operation == "delete") {
      if (kind == core::kKindIlJob) {
        DeleteJob(key, JobKind::kIl);
      } else if (kind == core::kKindLlJob) {
        DeleteJob(key, JobKind::kLl);
      } else if (kind == core::kKindDataset) {
        auto it = datasets.find(key);
        if (it != datasets.end()) {
          if (it->second->watching) watcher->Unwatch(it->second->local_path);
          if (it->second->poll_timer) it->second->poll_timer->cancel();
          if (it->second->s3 && !it->second->sync_inflight) RemoveMirror(it->second->local_path);
          datasets.erase(it);
        }
        (void)store->Transact([&](store::Store::Tx& tx) -> Status {
          if (Status st = tx.DeleteResource(key); !st.ok()) return st;
          return tx.DeleteState(kScopeDataset, key);
        });
        spdlog::info("Dataset {}: deleted", key);
      } else if (kind == core::kKindJointInference || kind == core::kKindFederated) {
        passthrough.erase(key);
        (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
        spdlog::info("{}: deleted", key);
      } else if (kind == core::kKindModel) {
        models.erase(key);
        (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
      }
      return;
    }
    if (h.operation != "insert" && h.operation != "update") {
      spdlog::warn("GM frame for {} skipped: header.operation: unknown \"{}\"", key, h.operation);
      metrics.rejected_frames++;
      return;
    }
    if (kind == core::kKindDataset) {
      auto d = json::DecodeDataset(f->content);
      if (!d.ok()) return Reject(key, d.message());
      UpsertDataset(std::move(*d), true);
    } else if (kind == core::kKindModel) {
      auto d = json::DecodeModel(f->content);
      if (!d.ok()) return Reject(key, d.message());
      UpsertModel(std::move(*d), true);
    } else if (kind == core::kKindIlJob) {
      auto d = json::DecodeIlJob(f->content);
      if (!d.ok()) return Reject(key, d.message());
      JobEntry e;
      e.kind = JobKind::kIl;
      e.il = std::move(*d);
      UpsertJob(std::move(e), true);
    } else if (kind == core::kKindLlJob) {
      auto d = json::DecodeLlJob(f->content);
      if (!d.ok()) return Reject(key, d.message());
      JobEntry e;
      e.kind = JobKind::kLl;
      e.ll = std::move(*d);
      UpsertJob(std::move(e), true);
    } else if (kind == core::kKindJointInference || kind == core::kKindFederated) {
      UpsertPassthrough(key, f->content);
    } else {
      WarnKindOnce(kind, "resource kind \"" + kind + "\" is unknown; ignored");
    }
  }

  // Joint-inference services and federated-learning jobs: the LC only stores them and forwards
  // their workers' messages (§3.5).
  void UpsertPassthrough(const std::string& key, const std::string& content) {
    auto j = nlohmann::json::parse(content, nullptr, false);
    if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object()) {
      return Reject(key, "expected an object with metadata");
    }
    nlohmann::json type_meta{{"kind", j.value("kind", "")},
                             {"apiVersion", j.value("apiVersion", "")}};
    nlohmann::json meta = j["metadata"];
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      meta["annotations"].erase(core::kCredentialAnnotation);  // B23: never persisted
    }
    const std::string spec = j.contains("spec") ? j["spec"].dump() : "{}";
    Status s = store->Transact([&](store::Store::Tx& tx) {
      return tx.UpsertResource({key, type_meta.dump(), meta.dump(), spec});
    });
    if (!s.ok()) spdlog::error("{}: persisting: {}", key, s.message());
    if (passthrough.insert(key).second) spdlog::info("{}: stored (worker messages forwarded)", key);
  }

  void Reject(const std::string& key, const std::string& msg) {
    spdlog::error("GM object {} rejected: {}", key, msg);
    metrics.rejected_objects++;
  }

  // "<ns>/<kind>/<name> " from a frame's header when it is readable, for error messages.
  static std::string FrameObjectName(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("header") || !j["header"].is_object()) return "";
    const auto& h = j["header"];
    auto str = [&](const char* k) {
      return h.contains(k) && h[k].is_string() ? h[k].get<std::string>() : std::string();
    };
    return core::ResourceKey(str("namespace"), str("resourceKind"), str("resourceName")) + " ";
  }

  // ---------------------------------------------------------------- worker API

  http::HttpResponse OnWorkerMessage(std::string_view path_name, std::string_view body) {
    metrics.worker_posts++;
    auto m = json::DecodeWorkerMessage(body);
    const std::string body_name = m.ok() ? m->report.worker_name : "";
    if (!m.ok() || body_name != path_name) {
      std::string msg = "worker name(name=" + std::string(path_name) +
                        ") in the api is different from that(name=" + body_name +
                        ") in the message body";
      if (!m.ok()) {
        spdlog::warn("worker {}: message rejected: {}", path_name, m.message());
        msg += ": " + m.message();
      } else {
        spdlog::warn("worker {}: message rejected: {}", path_name, msg);
      }
      return {400, "application/json", json::EncodeWorkerApiReply(400, msg), {}};
    }
    const auto& rep = m->report;
    if (OutboxFull()) {
      spdlog::warn("worker {}: report refused with 503: the outbox is full (GM unreachable?)",
                   rep.worker_name);
      return {503,
              "application/json",
              json::EncodeWorkerApiReply(503, "the LC's outbox is full; retry later"),
              {}};
    }
    if (rep.owner_kind == core::kKindIlJob || rep.owner_kind == core::kKindLlJob) {
      const std::string key = core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name);
      auto it = jobs.find(key);
      if (it == jobs.end()) {
        spdlog::warn("worker {}: message for unknown {} {}/{} dropped", rep.worker_name,
                     rep.owner_kind, rep.ns, rep.owner_name);
      } else {
        JobEntry& e = *it->second;
        std::string fwd = JobFrame(e, json::EncodeForwardedWorkerMessage(*m));
        spdlog::info("{} {}: worker {} reported {} {}", e.object_kind(), e.name(), rep.worker_name,
                     rep.kind, rep.status);
        if (!StepJob(e, core::il::WorkerReported{rep}, {fwd})) {
          return {500,
                  "application/json",
                  json::EncodeWorkerApiReply(500, "could not persist the message; retry"),
                  {}};
        }
      }
    } else if (rep.owner_kind == core::kKindJointInference ||
               rep.owner_kind == core::kKindFederated) {
      const std::string key = core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name);
      if (!passthrough.count(key)) {
        spdlog::warn("worker {}: message for unknown {} dropped", rep.worker_name, key);
      } else {
        std::string fwd = json::EncodeFrame({rep.ns, rep.owner_kind, rep.owner_name, "status"},
                                            json::EncodeForwardedWorkerMessage(*m));
        Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
          auto id = tx.OutboxAppend(fwd);
          return id.ok() ? Status::Ok() : id.status();
        });
        if (!s.ok()) {
          spdlog::error("{}: forwarding worker {}: {}", key, rep.worker_name, s.message());
          return {500,
                  "application/json",
                  json::EncodeWorkerApiReply(500, "could not persist the message; retry"),
                  {}};
        }
        PumpOutbox();
      }
    } else {
      WarnKindOnce("worker:" + rep.owner_kind,
                   "worker messages for ownerKind \"" + rep.owner_kind +
                       "\" are not handled by this build; accepted and dropped");
    }
    return {200, "application/json", json::EncodeWorkerApiReply(200, "OK"), {}};
  }

  // ---------------------------------------------------------------- status server

  http::HttpResponse OnStatusRequest(const http::HttpRequest& req) {
    std::string path = req.target.substr(0, req.target.find('?'));
    if (path == "/healthz") return {200, "text/plain", "ok\n", {}};
    if (path == "/readyz") return {200, "text/plain", "ready\n", {}};
    if (path == "/metrics") {
      auto ob = store->GetOutboxStats();
      metrics.outbox_count = ob.ok() ? ob->count : -1;
      metrics.outbox_bytes = ob.ok() ? ob->bytes : -1;
      metrics.gm_connected = sink && sink->connected();
      metrics.jobs = static_cast<int64_t>(jobs.size());
      return {200, "text/plain; version=0.0.4", RenderMetrics(metrics), {}};
    }
    if (path == "/status") return {200, "application/json", RenderStatus(), {}};
    return {404, "text/plain", "404: Page Not Found", {}};
  }

  std::string RenderStatus() {
    std::vector<JobView> views;
    for (auto& [k, e] : jobs) views.push_back(ViewOf(*e));
    return EncodeStatusJson(views);
  }

  JobView ViewOf(const JobEntry& e) {
    JobView v;
    v.kind = e.object_kind();
    v.ns = e.meta().ns;
    v.name = e.meta().name;
    if (!e.conditions().empty()) {
      const auto& c = e.conditions().back();
      v.stage = std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
    }
    if (e.is_il()) {
      FillIlView(e.il_state, v);
    } else {
      FillLlView(e.ll_state, v);
    }
    return v;
  }

  // ---------------------------------------------------------------- start / stop

  Status Start() {
    if (!cfg.timezone.empty()) {
      ::setenv("TZ", cfg.timezone.c_str(), 1);
      ::tzset();
    }
    // One daemon per database: a second one would answer the same jobs twice.
    if (Status s = fs::MakeDirs(Dirname(cfg.db_path)); !s.ok()) return s.With("database directory");
    lock_fd = ::open((cfg.db_path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      return Status::Error("database " + cfg.db_path + " is in use by another sedna-lc (lock " +
                           cfg.db_path + ".lock): " + std::strerror(errno));
    }
    store::StoreOptions so;
    so.synchronous_full = cfg.db_sync_full;
    auto st = store::Store::Open(cfg.db_path, so);
    if (!st.ok()) return st.status();
    store = std::move(*st);
    if (Status s = fs::MakeDirs(cfg.spool_dir); !s.ok()) return s.With("spool directory");
    watcher = std::make_unique<dataset::IndexWatcher>(
        io, [this](const std::string& path) { OnIndexChanged(path); });
    if (Status s = Reload(); !s.ok()) return s;

    http::HttpServerOptions wo;
    wo.address = cfg.bind_address;
    wo.port = cfg.bind_port;
    wo.on_rejected = [](int status, const std::string& target) {
      spdlog::warn("worker API: request {} rejected with {} (body over the limit or malformed)",
                   target.empty() ? std::string("(unparsed)") : target, status);
    };
    auto ws = http::HttpServer::Start(io, wo, [this](const http::HttpRequest& req) {
      http::HttpResponse r =
          http::RouteWorkerApi(req, [this](std::string_view name, std::string_view body) {
            return OnWorkerMessage(name, body);
          });
      if (r.status == 404 || r.status == 405 || r.status == 406 || r.status == 415) {
        auto ct = req.headers.find("content-type");
        spdlog::warn("worker API: {} {} rejected with {} (Content-Type: {})", req.method,
                     req.target, r.status, ct == req.headers.end() ? "-" : ct->second);
      }
      return r;
    });
    if (!ws.ok()) return ws.status().With("worker API (BIND_PORT)");
    worker_server = std::move(*ws);
    if (cfg.status_port != 0) {
      http::HttpServerOptions so2;
      so2.address = cfg.status_address;
      so2.port = cfg.status_port;
      auto ss = http::HttpServer::Start(
          io, so2, [this](const http::HttpRequest& req) { return OnStatusRequest(req); });
      if (!ss.ok()) return ss.status().With("status server (--status-port)");
      status_server = std::move(*ss);
    }
    if (sink) {
      // standalone: the local manager is the upstream
    } else if (!cfg.gm_address.empty()) {
      gm::GmLinkOptions go;
      go.address = cfg.gm_address;
      go.node_name = cfg.node_name;
      go.first_frame = json::EncodeBareHeader({});
      go.ping_interval = std::chrono::milliseconds(cfg.ping_interval_ms);
      go.ping_timeout = std::chrono::milliseconds(cfg.ping_timeout_ms);
      go.backoff_max = std::chrono::milliseconds(cfg.backoff_max_ms);
      gm::GmLinkCallbacks cb;
      cb.on_connected = [this] {
        spdlog::info("GM {}: connected as node {}", cfg.gm_address, cfg.node_name);
        metrics.gm_connects++;
        PumpOutbox();
      };
      cb.on_frame = [this](std::string t) { OnGmFrame(t); };
      cb.on_disconnected = [this](std::string why) {
        outbox_inflight = false;
        spdlog::warn("GM {}: disconnected: {}", cfg.gm_address, why);
      };
      gm = std::make_unique<gm::GmLink>(io, go, cb);
      gm_sink = std::make_unique<GmLinkSink>(*gm);
      sink = gm_sink.get();
      gm->Start();
    } else {
      spdlog::warn(
          "GM_ADDRESS is not set: not connecting to a GM (upstream messages are kept "
          "in the outbox)");
    }
    spdlog::info("sedna-lc started: node {}, worker API :{}, status :{}, database {}",
                 cfg.node_name, worker_server->port(), status_server ? status_server->port() : 0,
                 cfg.db_path);
    return Status::Ok();
  }

  // Rebuilds datasets, models and jobs from SQLite alone (no GM resync needed).
  Status Reload() {
    auto rows = store->LoadResources();
    if (!rows.ok()) return rows.status();
    std::vector<const store::ResourceRow*> ds, ms, job_rows;
    for (const auto& r : *rows) {
      if (r.name.find("/dataset/") != std::string::npos)
        ds.push_back(&r);
      else if (r.name.find("/model/") != std::string::npos)
        ms.push_back(&r);
      else if (r.name.find("/jointinferenceservice/") != std::string::npos ||
               r.name.find("/federatedlearningjob/") != std::string::npos)
        passthrough.insert(r.name);
      else if (r.name.find("/incrementallearningjob/") != std::string::npos ||
               r.name.find("/lifelonglearningjob/") != std::string::npos)
        job_rows.push_back(&r);
    }
    for (auto* r : ds) {
      auto d = json::DecodeDataset(
          json::AssembleObject(r->type_meta, r->object_meta, r->spec, "", std::nullopt));
      if (d.ok())
        UpsertDataset(std::move(*d), false);
      else
        spdlog::error("stored {}: {}", r->name, d.message());
    }
    for (auto* r : ms) {
      auto d = json::DecodeModel(
          json::AssembleObject(r->type_meta, r->object_meta, r->spec, "", std::nullopt));
      if (d.ok())
        UpsertModel(std::move(*d), false);
      else
        spdlog::error("stored {}: {}", r->name, d.message());
    }
    for (auto* r : job_rows) {
      std::string status;
      if (auto s = store->GetState(kScopeStatus, r->name); s.ok() && s->has_value()) status = **s;
      const std::string obj =
          json::AssembleObject(r->type_meta, r->object_meta, r->spec, status, std::nullopt);
      JobEntry e;
      if (r->name.find("/incrementallearningjob/") != std::string::npos) {
        auto d = json::DecodeIlJob(obj);
        if (!d.ok()) {
          spdlog::error("stored {}: {}", r->name, d.message());
          continue;
        }
        e.kind = JobKind::kIl;
        e.il = std::move(*d);
      } else {
        auto d = json::DecodeLlJob(obj);
        if (!d.ok()) {
          spdlog::error("stored {}: {}", r->name, d.message());
          continue;
        }
        e.kind = JobKind::kLl;
        e.ll = std::move(*d);
      }
      UpsertJob(std::move(e), false);
    }
    if (!rows->empty()) {
      spdlog::info("reloaded {} datasets, {} models, {} jobs from {}", ds.size(), ms.size(),
                   job_rows.size(), cfg.db_path);
    }
    return Status::Ok();
  }

  void Stop() {
    if (stopped) return;
    stopped = true;
    if (gm) gm->Stop();
    if (worker_server) worker_server->Stop();
    if (status_server) status_server->Stop();
    if (store) FlushAcks();
    for (auto& [k, e] : jobs) {
      if (e->tick_timer) e->tick_timer->cancel();
      if (e->retry_timer) e->retry_timer->cancel();
      if (e->ingest_retry_timer) e->ingest_retry_timer->cancel();
    }
    for (auto& [k, d] : datasets) {
      if (d->poll_timer) d->poll_timer->cancel();
    }
    watcher.reset();
    pool.join();
    if (lock_fd >= 0) ::close(lock_fd);
    lock_fd = -1;
  }
};

Controller::Controller(asio::io_context& io, Config config)
    : impl_(std::make_unique<Impl>(io, std::move(config))) {}
Controller::~Controller() = default;
Status Controller::Start() { return impl_->Start(); }
void Controller::Stop() { impl_->Stop(); }
uint16_t Controller::worker_port() const {
  return impl_->worker_server ? impl_->worker_server->port() : 0;
}
uint16_t Controller::status_port() const {
  return impl_->status_server ? impl_->status_server->port() : 0;
}
void Controller::OnGmFrame(const std::string& text) { impl_->OnGmFrame(text); }
void Controller::SetUpstreamSink(UpstreamSink* sink) { impl_->sink = sink; }
void Controller::PumpOutbox() { impl_->PumpOutbox(); }

}  // namespace sedna::app
