// The dataset registry (dataset_registry.h): Datasets in and out, the host watch and the polls.
// Index reads and counts are in dataset_reads.cc, S3 indexes in dataset_s3.cc.
#include "app/cluster/datasets/dataset_registry.h"

#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include "adapters/log/log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "adapters/dataset/index_watcher.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/s3_client.h"
#include "app/cluster/datasets/dataset_entry.h"
#include "app/cluster/datasets/problem_shape.h"
#include "app/cluster/jobs/il_record.h"

namespace sedna::app {

dataset::ReadOptions IndexReadOptions(const DatasetSource& src, const std::string& rootfs,
                                      bool take_unterminated, int64_t max_bytes,
                                      int64_t max_line_bytes) {
  dataset::ReadOptions o{take_unterminated, max_bytes, max_line_bytes};
  // As fs::JoinRootfs names it (src.local_path): under a rootfs a relative url is taken from the
  // host's "/"; with none, a relative url (standalone) is the operator's path, opened as it is.
  if (src.s3) return o;
  if (!rootfs.empty()) {
    o.rootfs = rootfs;
    o.host_path = fs::CleanPath("/" + src.url);
  } else if (!src.url.empty() && src.url[0] == '/') {
    o.host_path = fs::CleanPath(src.url);
  }
  return o;
}

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

}  // namespace

DatasetRegistry::DatasetRegistry(Context& ctx, Outbox& outbox, InboundQueue& inbound, Hooks hooks)
    : ctx_(ctx), outbox_(outbox), inbound_(inbound), hooks_(std::move(hooks)) {}
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
  auto it = datasets_.find(core::ResourceKeyInto(key_, ns, core::kKindDataset, name));
  return it == datasets_.end() ? nullptr : &it->second->src;
}

void DatasetRegistry::Upsert(json::Decoded<core::Dataset> d, bool persist) {
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
    // [P:B26]: a changed spec.url is followed; counting restarts on the new index.
    if (e.watching) watcher_->Unwatch(e.src.local_path);
    if (e.src.s3) RemoveMirror(e.src.local_path);
    e.watching = false;
    e.record = DatasetRecord{};
  }
  e.src.s3 = is_s3;
  e.s3_url = s3_url;
  // Stored objects carry no credential ([P:B23]): keep what the GM sent until it sends again.
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
    inbound_.Add({"", key + " poll", [this, key] {
                    auto it = datasets_.find(key);
                    if (it == datasets_.end()) return;
                    if (it->second->src.s3) {
                      SyncS3(*it->second);
                    } else {
                      EnsureWatch(*it->second);
                      Read(*it->second, true);
                    }
                    SchedulePoll(*it->second);
                  }});
  });
}

// A read after the current handler, once per Dataset (the first one asked for is queued; it reads
// the Dataset as it is when it runs).
void DatasetRegistry::PostRead(Entry& e, bool take_unterminated) {
  const std::string key = e.src.key;
  inbound_.Defer({"read:" + key, key + " index read", [this, key, take_unterminated] {
                    auto it = datasets_.find(key);
                    if (it == datasets_.end() || ctx_.stopped) return;
                    Read(*it->second, take_unterminated);
                  }});
}

void DatasetRegistry::Ingest(const std::string& ns, const std::string& name,
                             bool take_unterminated) {
  if (Entry* e = Find(ns, name)) Read(*e, take_unterminated);
}

void DatasetRegistry::ReadAll() {
  for (auto& [k, d] : datasets_) PostRead(*d, false);
}

void DatasetRegistry::OnIndexChanged(const std::string& path) {
  for (auto& [k, e] : datasets_) {
    if (e->src.local_path == path) PostRead(*e, false);
  }
}

void DatasetRegistry::Stop() {
  for (auto& [k, d] : datasets_) {
    if (d->poll_timer) d->poll_timer->cancel();
    if (d->status_timer) d->status_timer->cancel();
  }
  watcher_.reset();
}

}  // namespace sedna::app
