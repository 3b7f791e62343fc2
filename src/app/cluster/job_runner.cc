// The job runner (job_runner.h): upsert and delete, start-up catch-up, the tick timer, the
// registries' hooks and the status views. Ingest is in job_ingest.cc, worker reports in
// job_reports.cc, one step and its actions in job_steps.cc.
#include "app/cluster/job_runner.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>

#include "adapters/fs/confined.h"
#include "adapters/fs/files.h"
#include "adapters/s3/s3_client.h"
#include "adapters/storage/hot_update.h"
#include "app/cluster/job_entry.h"
#include "core/split.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

constexpr int64_t kDefaultPollSeconds = 60;

Status ValidateCommon(const std::string& dataset, double train_prob,
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

}  // namespace

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

Status JobRunner::Validate(JobEntry& probe, core::Trigger& train, core::Trigger& deploy) {
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

void JobRunner::UpsertIl(json::Decoded<core::IlJob> d, bool persist) {
  JobEntry e;
  e.kind = JobKind::kIl;
  e.il = std::move(d);
  Upsert(std::move(e), persist);
}

void JobRunner::UpsertLl(json::Decoded<core::LlJob> d, bool persist) {
  JobEntry e;
  e.kind = JobKind::kLl;
  e.ll = std::move(d);
  Upsert(std::move(e), persist);
}

// A fresh entry resumes from its stored record, if any.
void JobRunner::Load(JobEntry& e, const std::string& who) {
  auto rec = ctx_.store->GetState(ScopeOf(e.kind), e.key);
  if (!rec.ok() || !rec->has_value()) return;
  if (e.is_il()) {
    auto r = DecodeIlRecord(**rec);
    if (r.ok()) {
      e.il_state = r->state;
      e.ledger.cursor = r->cursor;
      spdlog::info("{}: resumed at round {} ({} samples seen, work {})", who, r->state.round,
                   r->state.samples_seen, core::il::WorkName(r->state.work));
    } else {
      spdlog::error("{}: stored state unreadable ({}); starting fresh", who, r.message());
    }
  } else {
    auto r = DecodeLlRecord(**rec);
    if (r.ok()) {
      e.ll_state = r->state;
      e.ledger.cursor = r->cursor;
      spdlog::info("{}: resumed at version {} phase {} ({} samples seen)", who, r->state.version,
                   core::ll::PhaseName(r->state.phase), r->state.samples_seen);
    } else {
      spdlog::error("{}: stored state unreadable ({}); starting fresh", who, r.message());
    }
  }
}

// Output directories exist before any Ready is sent (§P4.5), also after the GM changes
// spec.outputDir; S3 has no directories. A failure is tried again at the next update.
void JobRunner::MakeOutputDirs(JobEntry& e, const std::string& who) {
  if (e.dirs_made_for == e.output_dir()) return;
  if (fs::IsS3Url(e.output_dir())) {
    e.dirs_made_for = e.output_dir();
    return;
  }
  // The root opened once (host links resolved as the host would, never above the rootfs); the
  // subdirectories beneath it made with no link followed: a link a worker planted there is an
  // error for this job, logged, never followed.
  const std::string out = core::il::OutputRoot(e.output_dir());
  auto root = fs::Dir::OpenHost(ctx_.cfg.rootfs, out, true);
  if (!root.ok()) {
    spdlog::error("{}: spec.outputDir: {}", who, root.message());
    return;
  }
  std::vector<std::string> subs = {"data/train", "data/eval", "train", "eval"};
  if (!e.is_il()) subs.push_back("deploy");
  bool made = true;
  for (const auto& sub : subs) {
    if (auto d = root->Sub(sub, true); !d.ok()) {
      spdlog::error("{}: spec.outputDir: {}", who, d.message());
      made = false;
    }
  }
  if (made) e.dirs_made_for = e.output_dir();
}

void JobRunner::Upsert(JobEntry incoming, bool persist) {
  const std::string kind_lower = incoming.is_il() ? core::kKindIlJob : core::kKindLlJob;
  const std::string key = core::ResourceKey(incoming.meta().ns, kind_lower, incoming.meta().name);
  const std::string who = std::string(incoming.object_kind()) + " " + incoming.name();
  core::Trigger train, deploy;
  auto creds =
      CredentialsOf(incoming.is_il() ? incoming.il.credential_json : incoming.ll.credential_json);
  if (Status s = creds.ok() ? Validate(incoming, train, deploy) : creds.status(); !s.ok()) {
    spdlog::error("{}: rejected: {}; {}", who, s.message(),
                  jobs_.count(key) ? "keeping its previous version" : "job not started");
    ctx_.metrics.rejected_objects++;
    return;
  }
  auto& slot = jobs_[key];
  const bool fresh = !slot;
  if (fresh) {
    slot = std::make_unique<JobEntry>();
    slot->kind = incoming.kind;
    slot->key = key;
    slot->incarnation = next_incarnation_++;
    Load(*slot, who);
  } else if (slot->kind != incoming.kind) {
    spdlog::error("{}: rejected: kind changed", who);
    return;
  }
  JobEntry& e = *slot;
  e.train_trigger = train;
  e.deploy_trigger = deploy;
  if (*creds || persist) e.creds = *creds;  // stored objects carry none ([P:B23])
  if (e.is_il()) {
    e.il = std::move(incoming.il);
  } else {
    e.ll = std::move(incoming.ll);
  }
  if (persist) e.received_ms = core::UnixMs(ctx_.clock);  // from the GM, not reloaded
  MakeOutputDirs(e, who);
  if (fresh) {
    if (Status s = e.ledger.Open(SpoolPath(e, "train"), SpoolPath(e, "eval"), e.train_committed(),
                                 e.eval_committed());
        !s.ok()) {
      spdlog::error("{}: spool: {}", who, s.message());
      jobs_.erase(key);
      return;
    }
    if (e.is_il()) {
      spdlog::info("{}: loaded (train trigger: {}; deploy trigger: {})", who, train.text,
                   deploy.text);
    } else {
      spdlog::info("{}: loaded (train trigger: {})", who, train.text);
    }
  }
  if (persist) e.seen_epoch = ctx_.gm_epoch;
  if (persist) {
    const std::string type_meta = e.is_il() ? e.il.type_meta_json : e.ll.type_meta_json;
    const std::string object_meta = e.is_il() ? e.il.object_meta_json : e.ll.object_meta_json;
    const std::string spec = e.is_il() ? e.il.spec_json : e.ll.spec_json;
    const std::string status = e.is_il() ? e.il.status_json : e.ll.status_json;
    Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
      if (Status st = tx.UpsertResource({key, type_meta, object_meta, spec}); !st.ok()) return st;
      if (Status st = tx.PutState(kScopeStatus, key, status); !st.ok()) return st;
      return tx.PutState(ScopeOf(e.kind), key, e.EncodeRecord(e.ledger.cursor));
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
    // v0.7.0 removes the job's model hot-update directory on every delete (§H4.1); here only what
    // this LC wrote in the job's own directory (derived from its namespace and name, recorded
    // in the LC's ledger) is removed, whatever the annotation says.
    if (e.is_il()) {
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
    if (!j->is_il()) continue;
    const auto& sp = j->il.object.spec;
    if (j->meta().ns == ns && (sp.initial_model_name == name || sp.deploy_model_name == name)) {
      Step(*j, core::il::JobChanged{});
    }
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
    if (e->is_il()) {
      FillIlView(e->il_state, static_cast<int64_t>(e->conditions().size()) - 1, v);
    } else {
      FillLlView(e->ll_state, v);
    }
    views.push_back(std::move(v));
  }
  return views;
}

void JobRunner::Stop() {
  for (auto& [k, e] : jobs_) {
    if (e->tick_timer) e->tick_timer->cancel();
    if (e->retry_timer) e->retry_timer->cancel();
    e->ledger.CancelTimers();
  }
}

}  // namespace sedna::app
