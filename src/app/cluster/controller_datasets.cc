// Controller::Impl, datasets and models: a host index is watched (inotify) and polled at the
// trigger's checkPeriodSeconds; an S3 index is polled into a local mirror; each read reports the
// dataset's numberOfSamples and feeds the jobs that use it. Models are stored for the jobs.
#include "app/cluster/controller_impl.h"

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/index_watcher.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/index_mirror.h"
#include "adapters/s3/s3_client.h"
#include "app/cluster/problem_shape.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

constexpr int64_t kDefaultPollSeconds = 60;

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

// ---------------------------------------------------------------- datasets

DatasetEntry* Controller::Impl::FindDataset(const std::string& ns, const std::string& name) {
  auto it = datasets.find(core::ResourceKey(ns, core::kKindDataset, name));
  return it == datasets.end() ? nullptr : it->second.get();
}

void Controller::Impl::UpsertDataset(json::Decoded<core::Dataset> d, bool persist) {
  // Reports that arrived before this change step under the spec they came for.
  if (!reports_pending.empty() &&
      !UpdateAfterReports("Dataset " + d.object.meta.ns + "/" + d.object.meta.name, d, persist,
                          &Impl::UpsertDataset)) {
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
      spdlog::info("{}: polling {} every {} s (mirrored in {})", who, e.ds.spec.url, PollSeconds(e),
                   e.local_path);
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

void Controller::Impl::DeleteDataset(const std::string& key) {
  if (!ReportsFirst(key + " delete", [this, key] { DeleteDataset(key); })) return;
  // "<ns>/dataset/<name>" -> "<ns>/<name>", as the other Dataset log lines name it.
  const std::string name = key.substr(0, key.find('/')) + "/" + key.substr(key.rfind('/') + 1);
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
  spdlog::info("Dataset {}: deleted", name);
}

std::string Controller::Impl::MirrorPath(const std::string& key, const std::string& url) const {
  return cfg.spool_dir + "/s3-index/" + SanitizeKey(key) + "-" + UrlHash(url) + ".index";
}

void Controller::Impl::EnsureWatch(DatasetEntry& e) {
  if (e.watching || e.s3) return;
  Status s = watcher->Watch(e.local_path);
  if (s.ok()) {
    e.watching = true;
  } else {
    spdlog::warn("Dataset {}: {} (polling every {} s until it appears)", e.name(), s.message(),
                 PollSeconds(e));
  }
}

int64_t Controller::Impl::PollSeconds(const DatasetEntry& e) {
  int64_t p = kDefaultPollSeconds;
  for (auto& [k, j] : jobs) {
    if (j->meta().ns == e.ds.meta.ns && j->dataset_name() == e.ds.meta.name) {
      p = std::min(p, j->train_trigger.check_period_seconds);
    }
  }
  return std::max<int64_t>(p, 1);
}

// A poll already due within the period stays as it is: the GM re-sends every Dataset and job
// every 30-60 s, and postponing the poll at each re-send would keep an unterminated last line
// (taken only by a poll) from ever counting.
void Controller::Impl::SchedulePoll(DatasetEntry& e) {
  const auto now = asio::steady_timer::clock_type::now();
  const auto due = now + std::chrono::seconds(PollSeconds(e));
  if (!e.poll_timer) e.poll_timer = std::make_unique<asio::steady_timer>(io);
  if (e.poll_timer->expiry() > now && e.poll_timer->expiry() <= due) return;
  e.poll_timer->expires_at(due);
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

void Controller::Impl::PostRead(DatasetEntry& e, bool take_unterminated) {
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

void Controller::Impl::SyncS3(DatasetEntry& e) {
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

void Controller::Impl::OnS3Synced(const std::string& key, const std::string& mirror,
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
    spdlog::info("Dataset {}: S3 index readable again", e.name());
    e.last_sync_problem.clear();
  }
  if (r->rewritten) spdlog::info("Dataset {}: S3 index object was replaced", e.name());
  ReadDataset(e, !r->changed);
}

void Controller::Impl::NoteSyncProblem(DatasetEntry& e, const std::string& problem) {
  std::string shape = ProblemShape(problem);
  if (shape == e.last_sync_problem) return;
  e.last_sync_problem = std::move(shape);
  spdlog::error("Dataset {}: {}", e.name(), problem);
}

s3::ClientOptions Controller::Impl::S3Options() const {
  s3::ClientOptions o;
  o.timeout = std::chrono::milliseconds(cfg.s3_timeout_ms);
  o.retries = cfg.s3_retries;
  return o;
}

void Controller::Impl::OnIndexChanged(const std::string& path) {
  for (auto& [k, e] : datasets) {
    if (e->local_path == path) PostRead(*e, false);
  }
}

void Controller::Impl::ReadDataset(DatasetEntry& e, bool take_unterminated) {
  if (OutboxFull()) return;  // resumed when the outbox drains
  // The outbox keeps arrival order.
  // Queued once per Dataset while it waits.
  if (!reports_pending.empty() && reads_waiting.count("read:" + e.key)) return;
  if (!reports_pending.empty() &&
      !ReportsFirst(e.name() + " index read", [this, key = e.key, take_unterminated] {
        reads_waiting.erase("read:" + key);
        if (auto it = datasets.find(key); it != datasets.end()) {
          ReadDataset(*it->second, take_unterminated);
        }
      })) {
    reads_waiting.insert("read:" + e.key);
    return;
  }
  // numberOfSamples (§3.1): counted with the dataset's own cursor, reported when it changes.
  DatasetRecord rec = e.record;
  bool more = false;
  auto r =
      dataset::ReadNewSamples(e.local_path, e.format, rec.cursor, take_unterminated,
                              kIngestSliceBytes, [](std::string_view) { return Status::Ok(); });
  if (!r.ok()) {
    spdlog::error("Dataset {}: reading {}: {}", e.name(), e.local_path, r.message());
  } else if (!r->missing) {
    more = r->bytes_read >= kIngestSliceBytes;
    if (r->rewritten) spdlog::info("Dataset {}: index was replaced or rewritten", e.name());
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
        spdlog::error("Dataset {}: persisting count: {}", e.name(), s.message());
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

void Controller::Impl::UpsertModel(json::Decoded<core::Model> d, bool persist) {
  if (!reports_pending.empty() &&
      !UpdateAfterReports("Model " + d.object.meta.ns + "/" + d.object.meta.name, d, persist,
                          &Impl::UpsertModel)) {
    return;
  }
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

void Controller::Impl::DeleteModel(const std::string& key) {
  if (!ReportsFirst(key + " delete", [this, key] { DeleteModel(key); })) return;
  models.erase(key);
  (void)store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
}

std::optional<core::ModelRef> Controller::Impl::ModelRefFor(const std::string& ns,
                                                            const std::string& name) {
  auto it = models.find(core::ResourceKey(ns, core::kKindModel, name));
  if (it == models.end()) return std::nullopt;
  return core::ModelRef{it->second.object.spec.format, it->second.object.spec.url, {}};
}

}  // namespace sedna::app
