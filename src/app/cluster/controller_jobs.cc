// Controller::Impl, IL and LL jobs: validation and upsert/delete, ingesting the dataset index into
// the job's spools, and the job's timers (tick, ingest retry). Stepping a job is in
// controller_steps.cc.
#include "app/cluster/controller_impl.h"

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <ctime>
#include <variant>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/spool.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/s3_client.h"
#include "adapters/storage/storage.h"
#include "core/il_job.h"
#include "core/ll_job.h"
#include "core/split.h"
#include "core/trigger.h"

namespace sedna::app {

namespace asio = boost::asio;
using core::il::Action;
using core::il::Event;

namespace {

// A failed ingest (e.g. the spool's disk is full) is tried again after this long, whether or not
// the index changes (as a failed sample-file write is: core::il OnFileWritten).
constexpr std::chrono::seconds kIngestRetry{10};

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

std::string Controller::Impl::JobFrame(const JobEntry& e, const std::string& content) {
  return json::EncodeFrame({e.meta().ns, e.object_kind(), e.meta().name, "status"}, content);
}

storage::Context Controller::Impl::StorageContext(const JobEntry& e) const {
  storage::Context c;
  c.rootfs = cfg.rootfs;
  c.staging_dir = cfg.spool_dir + "/staging";
  c.credentials = e.creds;
  c.s3_options = S3Options();
  return c;
}

// ---------------------------------------------------------------- upsert / delete

Status Controller::Impl::ValidateJob(JobEntry& probe, core::Trigger& train, core::Trigger& deploy) {
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

std::string Controller::Impl::SpoolPath(const JobEntry& e, const char* which) {
  return cfg.spool_dir + "/" + SanitizeKey(e.key) + "." + which;
}

void Controller::Impl::UpsertJob(JobEntry incoming, bool persist) {
  // Reports that arrived before this change step under the spec they came for.
  if (!reports_pending.empty() &&
      !UpdateAfterReports(std::string(incoming.object_kind()) + " " + incoming.name() + " update",
                          incoming, persist, &Impl::UpsertJob)) {
    return;
  }
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
  if (e.dirs_made_for != e.output_dir()) {
    // Output directories exist before any Ready is sent (§4.5), also after the GM changes
    // spec.outputDir; S3 has no directories. A failure is tried again at the next update.
    const std::string out = fs::JoinRootfs(cfg.rootfs, core::il::OutputRoot(e.output_dir()));
    std::vector<std::string> subs;
    if (!fs::IsS3Url(e.output_dir())) subs = {"", "/data/train", "/data/eval", "/train", "/eval"};
    if (!subs.empty() && !e.is_il()) subs.push_back("/deploy");
    bool made = true;
    for (const auto& sub : subs) {
      if (Status s = fs::MakeDirs(out + sub); !s.ok()) {
        spdlog::error("{}: spec.outputDir: {}", who, s.message());
        made = false;
      }
    }
    if (made) e.dirs_made_for = e.output_dir();
  }
  if (fresh) {
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
  if (reloading) {
    reloaded_jobs.push_back(key);  // Start() runs the rest after the intake journal's reports
    return;
  }
  CatchUpJob(e);
}

void Controller::Impl::CatchUpJob(JobEntry& e) {
  if (DatasetEntry* ds = FindDataset(e.meta().ns, e.dataset_name())) {
    SchedulePoll(*ds);
    Ingest(e, *ds, false);
  }
  StepJob(e, core::il::JobChanged{});
}

// A tick already due within the period stays as it is, so that the GM's re-sends of the job do
// not keep postponing it.
void Controller::Impl::ScheduleTick(JobEntry& e) {
  const auto now = asio::steady_timer::clock_type::now();
  const auto due = now + std::chrono::seconds(e.train_trigger.check_period_seconds);
  if (!e.tick_timer) e.tick_timer = std::make_unique<asio::steady_timer>(io);
  if (e.tick_timer->expiry() > now && e.tick_timer->expiry() <= due) return;
  e.tick_timer->expires_at(due);
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

JobEntry* Controller::Impl::FindJob(const std::string& key, uint64_t incarnation) {
  auto it = jobs.find(key);
  if (it == jobs.end() || it->second->incarnation != incarnation) return nullptr;
  return it->second.get();
}

void Controller::Impl::DeleteJob(const std::string& key, JobKind kind) {
  if (!ReportsFirst(key + " delete", [this, key, kind] { DeleteJob(key, kind); })) return;
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

// ---------------------------------------------------------------- ingest

void Controller::Impl::Ingest(JobEntry& e, DatasetEntry& ds, bool take_unterminated) {
  if (OutboxFull()) return;
  // A read that waits behind reports is queued once per job; it reads the job's dataset as it is
  // when it runs (an update queued before it may have changed it).
  if (!reports_pending.empty() && reads_waiting.count("ingest:" + e.key)) return;
  if (!reports_pending.empty() &&
      !ReportsFirst(e.name() + " ingest",
                    [this, key = e.key, inc = e.incarnation, take_unterminated] {
                      reads_waiting.erase("ingest:" + key);
                      JobEntry* j = FindJob(key, inc);
                      DatasetEntry* d = j ? FindDataset(j->meta().ns, j->dataset_name()) : nullptr;
                      if (d) Ingest(*j, *d, take_unterminated);
                    })) {
    reads_waiting.insert("ingest:" + e.key);
    return;
  }
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

void Controller::Impl::ScheduleIngestRetry(JobEntry& e) {
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

void Controller::Impl::ResetSpools(JobEntry& e) {
  auto ts = dataset::Spool::Open(SpoolPath(e, "train"), e.train_committed());
  auto es = dataset::Spool::Open(SpoolPath(e, "eval"), e.eval_committed());
  if (ts.ok()) e.train_spool = std::move(*ts);
  if (es.ok()) e.eval_spool = std::move(*es);
}

}  // namespace sedna::app
