// The job runner (job_runner.h): upsert and delete, start-up catch-up, the tick timer, the
// registries' hooks and the status views. Ingest is in job_ingest.cc, worker reports in
// job_reports.cc, one step and its actions in job_steps.cc.
#include "app/cluster/jobs/job_runner.h"

#include "adapters/log/log.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "adapters/fs/confined.h"
#include "adapters/fs/files.h"
#include "adapters/s3/s3_client.h"
#include "adapters/storage/hot_update.h"
#include "app/cluster/jobs/job_entry.h"
#include "core/split.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

constexpr int64_t kDefaultPollSeconds = 60;

}  // namespace

Status ValidateJobCommon(const std::string& dataset, double train_prob,
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

JobRunner::JobRunner(Context& ctx, Outbox& outbox, InboundQueue& inbound, DatasetRegistry& datasets,
                     const ModelRegistry& models)
    : ctx_(ctx), outbox_(outbox), inbound_(inbound), datasets_(datasets), models_(models) {}
JobRunner::~JobRunner() = default;

JobEntry* JobRunner::Find(const std::string& key, uint64_t incarnation) {
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second->incarnation != incarnation) return nullptr;
  return it->second.get();
}

std::string JobRunner::SpoolPath(const JobEntry& e, const char* which) const {
  return ctx_.cfg.spool_dir + "/" + SanitizeKey(e.key) + "." + which;
}

// ---------------------------------------------------------------- upsert / delete

void JobRunner::UpsertIl(json::Decoded<core::IlJob> d, bool persist) {
  Upsert(MakeIlRunner(std::move(d)), persist);
}

void JobRunner::UpsertLl(json::Decoded<core::LlJob> d, bool persist) {
  Upsert(MakeLlRunner(std::move(d)), persist);
}

// A fresh entry resumes from its stored record, if any.
void JobRunner::Load(JobEntry& e, const std::string& who) {
  auto rec = ctx_.store->GetState(ScopeOf(e.kind()), e.key);
  if (!rec.ok() || !rec->has_value()) return;
  auto r = e.runner->LoadRecord(**rec, &e.ledger.cursor);
  if (r.ok()) {
    spdlog::info("{}: {}", who, *r);
  } else {
    spdlog::error("{}: stored state unreadable ({}); starting fresh", who, r.message());
  }
}

// A new job's spool files are created on the loop without a sync of their directory; their
// entries are made durable on the pool, so the loop makes no fsync for a job's creation: the
// spools of the jobs created in one turn of the loop in one batch, each directory once. Should
// the first pass come first (or this sync fail), the pass syncs the directory with the spools'
// data (Spool::PrepareSync), before any size is committed.
void JobRunner::SyncSpoolEntries(const JobEntry& e) {
  std::vector<std::shared_ptr<dataset::Spool>> spools = e.ledger.SpoolsWithEntriesUnsynced();
  if (spools.empty()) return;
  const bool first = entry_syncs_due_.empty();
  entry_syncs_due_.insert(entry_syncs_due_.end(), spools.begin(), spools.end());
  if (!first) return;
  asio::post(ctx_.io, [this] {
    if (ctx_.stopped) return;
    std::vector<std::shared_ptr<dataset::Spool>> due;
    due.swap(entry_syncs_due_);
    // One sync per directory: its fd kept open until it is made, the spools in it told its result.
    struct DirSync {
      std::shared_ptr<fs::UniqueFd> fd;
      std::vector<std::shared_ptr<dataset::Spool>> spools;
    };
    auto dirs = std::make_shared<std::vector<DirSync>>();  // in the order of `items`
    std::map<std::string, size_t> index;
    std::vector<fs::SyncItem> items;
    for (auto& spool : due) {
      auto it = index.find(spool->dir());
      if (it == index.end()) {
        auto fd = spool->OpenDir();
        if (!fd.ok()) continue;  // the pass syncs it, or names the error
        it = index.emplace(spool->dir(), dirs->size()).first;
        dirs->push_back({std::make_shared<fs::UniqueFd>(std::move(*fd)), {}});
        items.push_back({dirs->back().fd->get(), false, 0});
      }
      (*dirs)[it->second].spools.push_back(std::move(spool));
    }
    if (items.empty()) return;
    // On the pool, which tells the spools (thread-safe) and nothing else: no result comes back to
    // the loop.
    asio::post(ctx_.pool, [dirs, items = std::move(items)]() mutable {
      fs::SyncAll(items);
      for (size_t i = 0; i < dirs->size(); ++i) {
        for (const auto& spool : (*dirs)[i].spools) (void)spool->EntrySynced(items[i].error);
      }
    });
  });
}

void JobRunner::Upsert(std::unique_ptr<KindRunner> incoming, bool persist) {
  const core::ObjectMeta& in_meta = incoming->meta();
  const std::string key = core::ResourceKey(in_meta.ns, incoming->resource_kind(), in_meta.name);
  const std::string who =
      std::string(incoming->object_kind()) + " " + in_meta.ns + "/" + in_meta.name;
  core::Trigger train;
  auto creds = CredentialsOf(incoming->credential_json());
  if (Status s = creds.ok() ? incoming->Validate(&train) : creds.status(); !s.ok()) {
    spdlog::error("{}: rejected: {}; {}", who, s.message(),
                  jobs_.count(key) ? "keeping its previous version" : "job not started");
    ctx_.metrics.rejected_objects++;
    return;
  }
  auto& slot = jobs_[key];
  const bool fresh = !slot;
  if (fresh) {
    slot = std::make_unique<JobEntry>();
    slot->key = key;
    slot->incarnation = next_incarnation_++;
    slot->runner = std::move(incoming);  // with its object: Load adds the stored state
    Load(*slot, who);
  } else if (slot->kind() != incoming->kind()) {
    spdlog::error("{}: rejected: kind changed", who);
    return;
  } else {
    slot->runner->TakeObject(*incoming);
  }
  JobEntry& e = *slot;
  e.train_trigger = train;
  if (*creds || persist) e.creds = *creds;                // stored objects carry none ([P:B23])
  if (persist) e.received_ms = core::UnixMs(ctx_.clock);  // from the GM, not reloaded
  RequestOutputDirs(e, who);
  if (fresh) {
    if (Status s = e.ledger.Open(SpoolPath(e, "train"), SpoolPath(e, "eval"), e.train_committed(),
                                 e.eval_committed());
        !s.ok()) {
      spdlog::error("{}: spool: {}", who, s.message());
      jobs_.erase(key);
      return;
    }
    SyncSpoolEntries(e);
    spdlog::info("{}: loaded ({})", who, e.runner->TriggersText(train));
  }
  if (persist) e.seen_epoch = ctx_.gm_epoch;
  const StoredObject o = e.runner->TakeStored();  // not kept: 2-3 KB a job
  if (persist) {
    Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
      if (Status st = tx.UpsertResource({key, o.type_meta, o.object_meta, o.spec}); !st.ok()) {
        return st;
      }
      if (Status st = tx.PutState(kScopeStatus, key, o.status); !st.ok()) return st;
      return tx.PutState(ScopeOf(e.kind()), key, e.EncodeRecord(e.ledger.cursor));
    });
    if (!s.ok()) spdlog::error("{}: persisting: {}", who, s.message());
  }
  ScheduleTick(e);
  if (fresh) Step(e, core::il::Resume{});
  if (reloading_) {
    reloaded_.push_back(key);  // CatchUpReloaded runs the rest after the intake journal's reports
    return;
  }
  CatchUp(e);
  if (fresh) deleted_uids_.erase(key);
  if (fresh && on_arrived_) on_arrived_(key, e.meta().uid);
}

std::optional<std::string> JobRunner::uid_of(const std::string& key) const {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return std::nullopt;
  return it->second->meta().uid;
}

std::string JobRunner::deleted_uid(const std::string& key) const {
  auto it = deleted_uids_.find(key);
  return it == deleted_uids_.end() ? std::string() : it->second;
}

void JobRunner::CatchUpReloaded() {
  std::vector<std::string> keys;
  keys.swap(reloaded_);
  for (const std::string& key : keys) {
    auto it = jobs_.find(key);
    if (it != jobs_.end()) CatchUp(*it->second);
  }
}

// Reads what its dataset index gained and steps the job with the object as it now is.
void JobRunner::CatchUp(JobEntry& e) {
  if (const DatasetSource* ds = datasets_.Source(e.meta().ns, e.dataset_name())) {
    datasets_.Reschedule(e.meta().ns, e.dataset_name());
    Ingest(e, *ds, false);
  }
  Step(e, core::il::JobChanged{});
}

// A tick already due within the period stays as it is, so that the GM's re-sends of the job do
// not keep postponing it.
void JobRunner::ScheduleTick(JobEntry& e) {
  const auto now = asio::steady_timer::clock_type::now();
  const auto due = now + std::chrono::seconds(e.train_trigger.check_period_seconds);
  if (!e.tick_timer) e.tick_timer = std::make_unique<asio::steady_timer>(ctx_.io);
  if (e.tick_timer->expiry() > now && e.tick_timer->expiry() <= due) return;
  e.tick_timer->expires_at(due);
  const std::string key = e.key;
  const uint64_t inc = e.incarnation;
  e.tick_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
    if (ec || ctx_.stopped) return;
    inbound_.Add({"", key + " tick", [this, key, inc] {
                    IngestAgain(key, inc, false);
                    if (JobEntry* j = Find(key, inc)) {
                      Step(*j, core::il::Tick{});
                      ScheduleTick(*j);
                    }
                  }});
  });
}

void JobRunner::Delete(const std::string& key, JobKind kind) {
  auto it = jobs_.find(key);
  if (it != jobs_.end()) {
    JobEntry& e = *it->second;
    if (deleted_uids_.insert_or_assign(key, e.meta().uid).second) {
      deleted_order_.push_back(key);
      if (deleted_order_.size() > kMaxDeletedUids) {
        deleted_uids_.erase(deleted_order_.front());
        deleted_order_.pop_front();
      }
    }
    if (e.tick_timer) e.tick_timer->cancel();
    if (e.retry_timer) e.retry_timer->cancel();
    e.ledger.CancelTimers();
    e.ledger.RemoveFiles();
    // Their last close frees their blocks, which waits for the disk on a filesystem mounted with
    // `discard` (0.1 ms and more a file here): on the pool. A pass in flight holds them until it
    // is back.
    boost::asio::post(ctx_.pool, [spools = e.ledger.TakeSpools()]() mutable { spools.clear(); });
    ReleaseOutputRoot(e);
    // v0.7.0 removes the job's model hot-update directory on every delete (§H4.1); here only what
    // this LC wrote in the job's own directory (derived from its namespace and name, recorded
    // in the LC's ledger) is removed, whatever the annotation says.
    if (e.runner->has_hot_updates()) {
      storage::Context sc;
      sc.rootfs = ctx_.cfg.rootfs;
      sc.staging_dir = ctx_.cfg.spool_dir + "/staging";
      sc.hot_update_dir = ctx_.cfg.hot_update_dir;
      boost::asio::post(ctx_.pool, [sc, ns = e.meta().ns, name = e.meta().name, key] {
        if (Status s = storage::RemoveHotUpdateDir(sc, ns, name); !s.ok()) {
          spdlog::warn("{}: removing the hot-update files: {}", key, s.message());
        } else {
          spdlog::info("{}: removed the hot-update files this LC wrote (if any)", key);
        }
      });
    }
    jobs_.erase(it);
  }
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
    if (Status st = tx.DeleteResource(key); !st.ok()) return st;
    if (Status st = tx.DeleteState(kScopeStatus, key); !st.ok()) return st;
    if (Status st = tx.DeleteState(kScopeHistory, key); !st.ok()) return st;
    return tx.DeleteState(ScopeOf(kind), key);
  });
  history_.Forget(key);
  if (!s.ok()) spdlog::error("{}: deleting: {}", key, s.message());
  spdlog::info("{}: deleted", key);
}

// ---------------------------------------------------------------- the registries' hooks

void JobRunner::OnDatasetChanged(const std::string& ns, const std::string& name) {
  for (auto& [k, j] : jobs_) {
    if (j->uses(ns, name)) Step(*j, core::il::JobChanged{});
  }
}

void JobRunner::OnModelChanged(const std::string& ns, const std::string& name) {
  for (auto& [k, j] : jobs_) {
    if (j->runner->reads_model(ns, name)) Step(*j, core::il::JobChanged{});
  }
}

int64_t JobRunner::PollSecondsFor(const std::string& ns, const std::string& name) const {
  int64_t p = kDefaultPollSeconds;
  for (const auto& [k, j] : jobs_) {
    if (j->uses(ns, name)) p = std::min(p, j->train_trigger.check_period_seconds);
  }
  return p;
}

// ---------------------------------------------------------------- views and stop

std::vector<JobView> JobRunner::Views() const {
  std::vector<JobView> views;
  for (const auto& [k, e] : jobs_) {
    JobView v;
    v.kind = e->object_kind();
    v.ns = e->meta().ns;
    v.name = e->meta().name;
    if (!e->conditions().empty()) {
      const auto& c = e->conditions().back();
      v.stage = std::string(core::StageName(c.stage)) + "/" + core::ConditionTypeName(c.type);
    }
    e->runner->FillView(v);
    if (e->dirs_made_for == e->output_dir()) {
      v.output_dirs = "made";
    } else if (e->dirs_asked_for == e->output_dir()) {
      v.output_dirs = "making";
    } else {
      v.output_dirs = e->dirs_error;
    }
    views.push_back(std::move(v));
  }
  return views;
}

void JobRunner::Stop() {
  if (spare_timer_) spare_timer_->cancel();
  for (auto& [k, e] : jobs_) {
    if (e->tick_timer) e->tick_timer->cancel();
    if (e->retry_timer) e->retry_timer->cancel();
    e->ledger.CancelTimers();
  }
}

}  // namespace sedna::app
