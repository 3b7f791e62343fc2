// The job runner: every IL and LL job, each with its kind's runner (kind_runner.h: the object and
// the core state machine, core::il / core::ll Step), its sample ledger (sample_ledger.h: the read
// cursor over its Dataset's index, the train and eval spools), and the actions its steps ask for.
// What both kinds share is here: the transaction of a step, the timers, the ingest, the actions.
//
// Owns: the jobs (each its kind runner: the last received object and the core state; its train
//   trigger; its sample ledger: cursor, spools, ingest bookkeeping; the budget of the log lines
//   its reports cause, log_budget.h), their tick and retry timers, the refill timer of their
//   spare files (fs::SpareFiles, in the context), the open batch of steps (BeginSteps),
//   the action executor (action_executor.h), and the lc_state records "il", "ll" and "status".
// Calls: the store; the outbox (Append inside each step's transaction, then Pump; Full before
//   ingesting); the inbound queue (its timers, the pool's results and the next ingest slice come
//   back as events, so every step runs after the reports acknowledged before it are committed);
//   the dataset registry (Source, Reschedule) and the model registry (RefFor), read-only; the
//   action executor (action_executor.h) for blocking work on the pool (sample files, model
//   deploys, hot updates), whose results come back as FileWritten / ModelCopied /
//   HotUpdateWritten events for the same incarnation of the job; the pool for a job's output
//   directories (job_output.cc, output_dirs.h: the loop never opens spec.outputDir), whose result
//   comes back through the inbound queue; the context's spare files (Want and Drop a job root on
//   the loop; filled on the pool) and file syncs (the sample files' syncs, handed over on the
//   pool).
// Called by: events of the inbound queue (GM frames, the registries' hooks, its own timers and
//   pool results), start-up (reload), the report intake (CommitReports, StepReport) and the worker
//   and status endpoints (PrepareReport, Views).
// Emits: upstream frames only, committed with the step that produced them (docs/durability.md:
//   the new state and its frames in one transaction, before the step's actions run).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/context.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/outbox.h"
#include "app/cluster/intake/report_intake.h"
#include "app/cluster/jobs/action_executor.h"
#include "app/cluster/jobs/kind_runner.h"
#include "app/cluster/jobs/model_registry.h"
#include "app/cluster/jobs/output_dirs.h"
#include "app/cluster/jobs/sample_ledger.h"
#include "app/cluster/observation/round_history.h"
#include "app/cluster/observation/status_view.h"
#include "core/il_job.h"
#include "core/ll_job.h"

namespace sedna::app {

struct JobEntry;
struct PlannedStep;
struct StepBatch;

class JobRunner {
 public:
  JobRunner(Context& ctx, Outbox& outbox, InboundQueue& inbound, DatasetRegistry& datasets,
            const ModelRegistry& models);
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Inserts or updates a job (from the GM: `persist`; from the store at start-up: not). An invalid
  // object is rejected with a message naming the field; a previous good version keeps running.
  void UpsertIl(json::Decoded<core::IlJob> d, bool persist);
  void UpsertLl(json::Decoded<core::LlJob> d, bool persist);
  void Delete(const std::string& key, JobKind kind);

  // Start-up: while reloading, a job is loaded and resumed (its work in flight re-issued) only;
  // CatchUpReloaded then reads what each index gained and steps the jobs under their stored
  // objects (after the intake journal's reports are committed).
  void set_reloading(bool reloading) { reloading_ = reloading; }
  void CatchUpReloaded();

  // Whether the GM on the current connection has shown itself to be the 2021 generation (the
  // GM frames' evidence, wired by the root). Under --gm-protocol auto that turns on the 2021
  // rules (core::il::Spec::g1_rules) and the --deploy-report-delay decision. Unset: never.
  void set_gm_is_g1(std::function<bool()> f) { gm_is_g1_ = std::move(f); }
  // Called with a job's key once the GM's (or the local GM's) object of a job not known before is
  // loaded and stepped (not while reloading): the early reports kept for it are applied then.
  void set_on_arrived(std::function<void(const std::string& key, const std::string& uid)> f) {
    on_arrived_ = std::move(f);
  }
  bool knows(const std::string& key) const { return jobs_.count(key) != 0; }
  // The uid of the job `key` names, nullopt when it is not known.
  std::optional<std::string> uid_of(const std::string& key) const;
  // The uid of the job this LC last deleted under `key` (since it started), "" when none; a
  // job that arrives under the key again clears it.
  std::string deleted_uid(const std::string& key) const;

  // The registries' hooks.
  void OnDatasetChanged(const std::string& ns, const std::string& name);
  // A pass over the Dataset's index starts: the shares of its jobs (dataset_registry.h).
  std::vector<IngestShare> JoinPass(const DatasetSource& src);
  // Steps made between these two calls (on the loop, in one handler: a pass's shares applied, the
  // registry's `applying` / `applied` hooks; pool results gathered by the action executor) are
  // planned and adopted one by one, committed in one transaction at EndSteps, and act only after
  // it: N jobs pay for one commit, not N. When that commit fails, every job stepped is put back as
  // it was before (state, cursor, and the spooled samples of an ingest) and each step's event is
  // dropped, as a step alone's is. Nested calls join the open batch.
  void BeginSteps();
  void EndSteps();
  void OnModelChanged(const std::string& ns, const std::string& name);
  // The shortest checkPeriodSeconds of the jobs that use the Dataset; 60 when none does.
  int64_t PollSecondsFor(const std::string& ns, const std::string& name) const;

  // Worker reports. PrepareReport: the report of an IL/LL job this LC knows, with its forwarded
  // frame; nullopt when the job is unknown; an error (answered 400, nothing forwarded, nothing
  // changes) when a completed train/eval report is malformed, comes from a worker not named as
  // Sedna names that stage's pods, or names a model outside what the job may use
  // (core ScopeOfReport: the round's output directory, or the models this LC sent). RecoverReport:
  // the same for a journal entry at start-up (job_key empty when gone, `why` says why).
  // CommitReports and StepReport are the intake's ReportIntake::CommitBatch and StepAlone.
  // PrepareReport moves m.report into the PendingReport it returns (m is left as it was otherwise).
  Result<std::optional<PendingReport>> PrepareReport(json::WorkerMessage& m);
  PendingReport RecoverReport(const std::string& worker, const std::string& body, std::string* why);
  // CommitReports leaves `reports` as they were (their metrics not decoded, as the intake holds
  // them), also when the batch fails to commit.
  Result<std::function<void()>> CommitReports(std::vector<PendingReport>& reports,
                                              const std::function<Status(store::Store::Tx&)>& also);
  bool StepReport(PendingReport r);

  std::vector<JobView> Views() const;
  size_t size() const { return jobs_.size(); }
  // The jobs' round history (recorded after every step, round_history.h).
  const RoundHistory& history() const { return history_; }

  // Cancels every job's timers.
  void Stop();

 private:
  void Upsert(std::unique_ptr<KindRunner> incoming, bool persist);
  JobEntry* Find(const std::string& key, uint64_t incarnation);
  void SyncSpoolEntries(const JobEntry& e);
  void Load(JobEntry& e, const std::string& who);
  std::string SpoolPath(const JobEntry& e, const char* which) const;
  void CatchUp(JobEntry& e);
  void ScheduleTick(JobEntry& e);
  // job_ingest.cc
  // Asks the registry for a pass over the job's Dataset (or another one after its own).
  void Ingest(JobEntry& e, const DatasetSource& ds, bool take_unterminated);
  void OnIngested(const std::string& key, uint64_t incarnation, const SampleLedger::IngestDone& d,
                  bool take_unterminated);
  void ApplyIngest(JobEntry& e, const SampleLedger::IngestDone& d, bool take_unterminated);
  void ScheduleIngestRetry(JobEntry& e);
  void PostIngest(JobEntry& e, bool take_unterminated);
  // Ingest for the job (key, incarnation) and its Dataset as they are now, if both still exist.
  void IngestAgain(const std::string& key, uint64_t incarnation, bool take_unterminated);
  void ResetSpools(JobEntry& e);
  // job_steps.cc
  // --gm-protocol g1, or auto once this connection's GM evidence says G1.
  bool GmIsG1() const;
  // What the job's kind runner reads besides its own object and state.
  KindWorld World(const JobEntry& e) const;
  bool Step(JobEntry& e, const core::il::Event& ev, std::vector<std::string> pre_frames = {},
            const dataset::IndexCursor* new_cursor = nullptr);
  PlannedStep Plan(JobEntry& e, const core::il::Event& ev, std::vector<std::string> pre_frames,
                   const dataset::IndexCursor* new_cursor);
  Status Write(store::Store::Tx& tx, const PlannedStep& p);
  void Adopt(PlannedStep& p);
  void ActOn(PlannedStep& p);
  // Arms the job's retry timer for `at` (its planned state's wake time; 0 or past: none).
  void ScheduleRetry(JobEntry& e, int64_t now_ms, int64_t at);
  void RunAction(JobEntry& e, const core::il::Action& a);
  void WriteSamples(JobEntry& e, const JobRef& job, const core::il::WriteSamples& w);
  // job_output.cc: the job's output root.
  // Its output directories (output_dirs.h), asked for when the job arrives or its spec.outputDir
  // changes: made on the pool, with the root's spare files (fs::SpareFiles) once they exist;
  // OnOutputDirs records the result on the loop.
  void RequestOutputDirs(JobEntry& e, const std::string& who);
  void OnOutputDirs(const std::string& key, uint64_t incarnation, const std::string& who,
                    const std::string& output_dir, const Status& made);
  // What a storage action of the job makes first: the output directories while the loop has not
  // heard that they exist for its current spec.outputDir (none otherwise, and for S3).
  OutputDirs DirsToMake(const JobEntry& e) const;
  // The job leaves its root (deleted, or moved to another): the spares of the root made or being
  // made are dropped, and the job has no directories made or asked for.
  void ReleaseOutputRoot(JobEntry& e);
  // Refills the spare files of the job's root on the pool after a round's files, once
  // kSpareRefillDelay has passed since the first such request (the inode allocations then do not
  // take the CPUs from the other jobs' round files and Readys of the same burst).
  void FillSparesLater(const JobEntry& e);
  // The spares of the root of `output_dir` are dropped; its spare directory is removed on the pool.
  void DropSpares(const std::string& output_dir);
  static constexpr std::chrono::milliseconds kSpareRefillDelay{250};
  void WriteHotUpdate(JobEntry& e, const JobRef& job, const std::string& who,
                      const core::il::WriteHotUpdate& h);
  void CopyModel(JobEntry& e, const JobRef& job, const std::string& who,
                 const core::il::CopyModel& c);
  std::string JobFrame(const JobEntry& e, const std::string& content) const;
  // The frame a worker report is forwarded upstream in (§P3.5).
  std::string ForwardedFrame(const JobEntry& e, const json::WorkerMessage& m) const;
  // job_reports.cc: the checks of PrepareReport.
  Status CheckReport(const JobEntry& e, const core::WorkerReport& r) const;

  Context& ctx_;
  Outbox& outbox_;
  InboundQueue& inbound_;
  DatasetRegistry& datasets_;
  const ModelRegistry& models_;
  std::map<std::string, std::unique_ptr<JobEntry>> jobs_;
  std::string key_;  // PrepareReport's lookup key (core::ResourceKeyInto)
  uint64_t next_incarnation_ = 1;
  bool reloading_ = false;
  std::function<bool()> gm_is_g1_;
  std::function<void(const std::string& key, const std::string& uid)> on_arrived_;
  // Deleted jobs' uids by key (deleted_uid), the oldest forgotten past kMaxDeletedUids.
  static constexpr size_t kMaxDeletedUids = 1024;
  std::map<std::string, std::string> deleted_uids_;
  std::deque<std::string> deleted_order_;
  std::vector<std::string> reloaded_;  // keys loaded while reloading, for CatchUpReloaded
  // Jobs whose spare files are refilled when spare_timer_ fires (FillSparesLater).
  std::set<std::string> spares_due_;
  std::unique_ptr<boost::asio::steady_timer> spare_timer_;
  // New spools whose directory entries are synced in one batch at the end of this turn of the loop
  // (SyncSpoolEntries).
  std::vector<std::shared_ptr<dataset::Spool>> entry_syncs_due_;
  RoundHistory history_{ctx_};
  // Open between BeginSteps and EndSteps (the outermost pair, `step_batch_depth_` deep).
  std::unique_ptr<StepBatch> step_batch_;
  int step_batch_depth_ = 0;
  // The pool round trip of the actions (action_executor.h); its results step the jobs again.
  ActionExecutor executor_{ctx_.io,
                           ctx_.pool,
                           inbound_,
                           [this](const std::string& key, uint64_t inc) { return Find(key, inc); },
                           [this](JobEntry& e, const core::il::Event& ev) { Step(e, ev); },
                           [this] { BeginSteps(); },
                           [this] { EndSteps(); }};
};

// Whether `url` is `dir` or beneath it, lexically (no filesystem access: it runs on the loop):
// fs::CheckPathBounds, then host paths by fs::RelativeBeneath, S3 URLs by bucket and cleaned key;
// a host path never lies in an S3 dir nor the reverse. The error names `what` and both paths.
// The confined open on the pool (storage::CopyModelWith) is the check that counts for symlinks.
Status LexicallyInside(const std::string& url, const std::string& dir, const std::string& what);

}  // namespace sedna::app
