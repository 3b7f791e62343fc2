// Internal to src/app/cluster/controller*.cc: Controller::Impl, the state of the one loop thread
// (every dataset, model and job), and the entries it keeps. Its member functions are defined by
// area:
//   controller.cc           start-up (Reload), Stop, GM frame dispatch, pass-through objects
//   controller_datasets.cc  datasets (host watch, S3 index polling, numberOfSamples) and models
//   controller_jobs.cc      IL/LL jobs: upsert/delete, ingest, timers (tick, ingest retry)
//   controller_steps.cc     one job step: Plan/Write/Adopt/ActOnStep, StepJob, actions, retry timer
//   controller_outbox.cc    the outbox pump, acknowledgements and its bound
//   controller_reports.cc   worker reports: the intake journal and batched commits
//   controller_api.cc       the worker API and the status server
// Not to be included outside src/app/cluster/controller*.cc.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/spool.h"
#include "adapters/json/resource_codec.h"
#include "adapters/s3/index_mirror.h"
#include "adapters/s3/s3_client.h"
#include "adapters/storage/storage.h"
#include "adapters/store/intake_journal.h"
#include "adapters/store/store.h"
#include "app/cluster/config.h"
#include "app/cluster/controller.h"
#include "app/cluster/il_record.h"
#include "app/cluster/status_view.h"
#include "app/cluster/upstream_sink.h"
#include "core/il_job.h"
#include "core/ll_job.h"
#include "core/resources.h"
#include "core/status.h"
#include "core/trigger.h"

namespace sedna::dataset {
class IndexWatcher;
}  // namespace sedna::dataset
namespace sedna::gm {
class GmLink;
}  // namespace sedna::gm
namespace sedna::http {
class HttpServer;
struct HttpRequest;
struct HttpResponse;
}  // namespace sedna::http

namespace sedna::app {

// lc_state scopes.
constexpr const char* kScopeIl = "il";
constexpr const char* kScopeLl = "ll";
constexpr const char* kScopeDataset = "dataset";
constexpr const char* kScopeStatus = "status";
// ("intake", "applied"): the sequence number of the last intake-journal entry committed.
constexpr const char* kScopeIntake = "intake";
// At most this many index bytes are read per pass (a dataset count or a job's ingest); more is
// read in a later posted pass.
constexpr int64_t kIngestSliceBytes = 4 << 20;

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
  std::string last_sync_problem;  // ProblemShape of the one logged; logged once until it changes
  bool watching = false;

  // "<ns>/<name>", as log lines name a Dataset ("Dataset default/d1: ...").
  std::string name() const { return ds.meta.ns + "/" + ds.meta.name; }
  bool read_posted = false;
  std::unique_ptr<boost::asio::steady_timer> poll_timer;
};

enum class JobKind { kIl, kLl };

// The lc_state scope of a job's record.
inline const char* ScopeOf(JobKind k) { return k == JobKind::kIl ? kScopeIl : kScopeLl; }

// One IL or LL job: the last received object, its compiled triggers, the core state and the
// job's read cursor over its dataset index (persisted together as one record).
struct JobEntry {
  JobKind kind = JobKind::kIl;
  std::string key;
  uint64_t incarnation = 0;
  std::string dirs_made_for;  // the spec.outputDir whose directories exist (§4.5)
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
  std::unique_ptr<boost::asio::steady_timer> tick_timer;
  std::unique_ptr<boost::asio::steady_timer> retry_timer;
  int64_t retry_scheduled_at = 0;
  std::unique_ptr<boost::asio::steady_timer> ingest_retry_timer;
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

// One job step, computed (PlanStep) and not yet committed (WriteStep) or acted on.
struct PlannedStep {
  JobEntry* e = nullptr;
  core::il::State il_next;
  core::ll::State ll_next;
  std::vector<core::il::Action> actions;
  std::vector<std::string> frames;  // upstream, in order: the pre-frames, then the step's reports
  bool write_record = false;        // the state or the cursor changed
  std::string record;
  std::optional<dataset::IndexCursor> new_cursor;
  int64_t now_ms = 0;
};

// A worker report acknowledged (200) and in the intake journal, not yet committed.
struct PendingReport {
  uint64_t seq = 0;
  std::string job_key;
  uint64_t incarnation = 0;  // a job deleted and created again under its name is another job
  core::WorkerReport report;
  std::string frame;  // the forwarded message (§3.5), as it goes upstream
};

struct Controller::Impl {
  boost::asio::io_context& io;
  Config cfg;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<http::HttpServer> worker_server;
  std::unique_ptr<http::HttpServer> status_server;
  std::unique_ptr<gm::GmLink> gm;
  // Cluster mode wraps the GM link; standalone mode sets its local manager.
  std::unique_ptr<UpstreamSink> gm_sink;
  UpstreamSink* sink = nullptr;
  std::unique_ptr<dataset::IndexWatcher> watcher;
  boost::asio::thread_pool pool{2};
  std::map<std::string, std::unique_ptr<DatasetEntry>> datasets;
  std::map<std::string, json::Decoded<core::Model>> models;
  std::map<std::string, std::unique_ptr<JobEntry>> jobs;
  std::set<std::string> warned_kinds;
  std::set<std::string> passthrough;  // JI/FL resource keys
  uint64_t next_incarnation = 1;
  bool outbox_inflight = false;
  bool pump_posted = false;                                    // a PumpOutbox is queued on io
  std::unique_ptr<boost::asio::steady_timer> ack_flush_timer;  // armed while acks wait deletion
  std::unique_ptr<boost::asio::steady_timer> trim_timer;       // see ScheduleTrim
  bool trim_armed = false;
  bool outbox_full = false;
  std::deque<store::OutboxEntry> outbox_queue;  // read ahead from SQLite, not yet written
  int64_t outbox_queued_through = 0;
  // Worker reports (controller_reports.cc). `intake` is null when reports are committed before
  // their reply (--report-batch-ms 0, --db-sync-full).
  std::unique_ptr<store::IntakeJournal> intake;
  std::vector<PendingReport> reports_pending;
  std::unique_ptr<boost::asio::steady_timer> report_timer;
  bool report_timer_armed = false;
  bool report_flush_posted = false;
  bool reports_failing = false;  // the last batch commit failed; only its retry tries again
  // Events that came while a batch could not commit, in arrival order: run once it has.
  std::vector<std::function<void()>> after_reports;
  std::set<std::string> reads_waiting;     // "ingest:<job>" / "read:<dataset>" queued there
  bool reloading = false;                  // inside Reload() at start
  std::vector<std::string> reloaded_jobs;  // keys loaded by Reload(), for CatchUpJob
  bool stopped = false;
  int lock_fd = -1;
  Metrics metrics;

  // Both in controller.cc, where the adapters held by pointer are complete types.
  Impl(boost::asio::io_context& io_, Config c);
  ~Impl();

  // Parses an object's sedna.io/credential annotation (§2.5); nullopt when there is none.
  static Result<std::optional<s3::Credentials>> CredentialsOf(
      const std::optional<std::string>& json);
  // A resource key as a file name (spool files, S3 index mirrors).
  static std::string SanitizeKey(const std::string& key);

  // ---------------------------------------------------------------- start / stop (controller.cc)

  Status Start();
  // Rebuilds datasets, models and jobs from SQLite alone (no GM resync needed).
  Status Reload();
  void Stop();

  // ---------------------------------------------------------------- GM frames (controller.cc)

  void OnGmFrame(const std::string& text);
  void WarnKindOnce(const std::string& kind, const std::string& text);
  // Joint-inference services and federated-learning jobs: the LC only stores them and forwards
  // their workers' messages (§3.5).
  void UpsertPassthrough(const std::string& key, const std::string& content);
  void Reject(const std::string& key, const std::string& msg);

  // ---------------------------------------------------------------- outbox (controller_outbox.cc)

  // The outbox bound (docs/durability.md): above it, sources that can wait are paused.
  bool OutboxFull();
  // Sends the outbox in id order, one frame in flight. Frames are read from SQLite in batches; a
  // written frame is deleted at once (docs/durability.md: the at-least-once window is that one
  // delete; a kill right after the GM got a frame can re-send it).
  void PumpOutbox();
  // Unsent frames are read again from SQLite, from the first unacknowledged one.
  void RequeueOutbox();
  void FlushAcks();
  void ScheduleAckFlush();
  // Returns the heap pages a burst of work freed (start-up, GM frames, steps) to the OS
  // (malloc_trim) a few seconds after the burst began. Armed by events only, so an idle LC never
  // wakes for it.
  void ScheduleTrim();
  // PumpOutbox after the current handler (a worker's HTTP reply goes out first); coalesced.
  void PostPump();

  // ---------------------------------------------------------------- worker reports
  // (controller_reports.cc)

  // Opens `<db>-intake` and commits the reports a previous run acknowledged and did not commit
  // (in their order, before any other event). Then, unless batching is off, keeps the journal.
  Status OpenIntake();
  // Takes a decoded report for job `e`: into the intake journal and the pending batch, or, with
  // batching off (or a body too large for the journal), straight through StepJob. Returns false
  // when it could not be persisted, or events wait behind a batch that cannot commit (the caller
  // answers 500).
  bool AcceptReport(JobEntry& e, std::string_view worker, std::string_view body,
                    core::WorkerReport report, std::string frame);
  // Commits every pending report in one transaction: each one's step (WorkerReported, its frame
  // first), in arrival order, and the journal's applied mark; then runs their actions, then the
  // events queued in after_reports. On a failed commit the jobs' states are restored, the reports
  // stay pending (and in the journal), a retry is scheduled and false is returned; until that
  // retry (`retry` true) succeeds, calls return false at once. Every other event that steps a job,
  // changes a job, Dataset or Model, or appends to the outbox goes through ReportsFirst, so the
  // outbox keeps arrival order.
  bool FlushReports(bool retry = false);
  // True when no report is pending (after committing them). Otherwise `redo` (the caller's event,
  // again) is queued behind the pending reports and false returned: the caller stops.
  // `what` names the event in the debug log line.
  bool ReportsFirst(const std::string& what, std::function<void()> redo);
  // ReportsFirst for an update of a job, Dataset or Model (`apply(update, persist)`): true when it
  // may be applied now (`update` intact). Otherwise it waits, moved into the queued redo that
  // calls `apply` again, and false is returned: the caller stops.
  template <class T>
  bool UpdateAfterReports(const std::string& what, T& update, bool persist,
                          void (Impl::*apply)(T, bool)) {
    if (reports_pending.empty()) return true;
    auto held = std::make_shared<T>(std::move(update));
    if (!ReportsFirst(
            what, [this, held, persist, apply] { (this->*apply)(std::move(*held), persist); })) {
      return false;
    }
    update = std::move(*held);
    return true;
  }
  void ScheduleReportFlush(std::chrono::milliseconds after);

  // ---------------------------------------------------------------- datasets and models
  // (controller_datasets.cc)

  DatasetEntry* FindDataset(const std::string& ns, const std::string& name);
  void UpsertDataset(json::Decoded<core::Dataset> d, bool persist);
  void DeleteDataset(const std::string& key);
  std::string MirrorPath(const std::string& key, const std::string& url) const;
  void EnsureWatch(DatasetEntry& e);
  int64_t PollSeconds(const DatasetEntry& e);
  // Fallback poll at the trigger's checkPeriodSeconds; also takes an unterminated last line that
  // stayed unchanged for one period.
  void SchedulePoll(DatasetEntry& e);
  void PostRead(DatasetEntry& e, bool take_unterminated);
  // An S3 index: one HEAD (and a ranged GET of the new bytes, if any) on the pool, then the mirror
  // is read like a host index. An unchanged poll also takes an unterminated last line.
  void SyncS3(DatasetEntry& e);
  void OnS3Synced(const std::string& key, const std::string& mirror,
                  const Result<s3::MirrorSync>& r);
  void NoteSyncProblem(DatasetEntry& e, const std::string& problem);
  s3::ClientOptions S3Options() const;
  void OnIndexChanged(const std::string& path);
  void ReadDataset(DatasetEntry& e, bool take_unterminated);
  void UpsertModel(json::Decoded<core::Model> d, bool persist);
  void DeleteModel(const std::string& key);
  std::optional<core::ModelRef> ModelRefFor(const std::string& ns, const std::string& name);

  // ---------------------------------------------------------------- IL and LL jobs
  // (controller_jobs.cc)

  std::string JobFrame(const JobEntry& e, const std::string& content);
  storage::Context StorageContext(const JobEntry& e) const;
  Status ValidateJob(JobEntry& probe, core::Trigger& train, core::Trigger& deploy);
  std::string SpoolPath(const JobEntry& e, const char* which);
  // Inserts or updates an IL or LL job. An invalid object is rejected with a message naming the
  // field; a previous good version keeps running. While `reloading`, a job is loaded and resumed
  // (its work in flight re-issued) only; CatchUpJob follows once the intake journal's reports are
  // committed.
  void UpsertJob(JobEntry incoming, bool persist);
  // Reads what its dataset index gained and steps the job with the object as it now is.
  void CatchUpJob(JobEntry& e);
  void ScheduleTick(JobEntry& e);
  JobEntry* FindJob(const std::string& key, uint64_t incarnation);
  void DeleteJob(const std::string& key, JobKind kind);
  // Streams the samples appended to the job's dataset index into its spools, split by running
  // totals, then commits the cursor and counts with the step that sees them.
  void Ingest(JobEntry& e, DatasetEntry& ds, bool take_unterminated);
  // Ingests again after kIngestRetry: a failed ingest must not wait for the next index change or
  // the job's checkPeriodSeconds tick.
  void ScheduleIngestRetry(JobEntry& e);
  // Drops spool bytes that were appended but not committed.
  void ResetSpools(JobEntry& e);

  // ---------------------------------------------------------------- one job step
  // (controller_steps.cc)

  core::il::Spec MakeIlSpec(const JobEntry& e);
  core::ll::Spec MakeLlSpec(const JobEntry& e);
  // Steps the job; commits the new state, `pre_frames` and the reports in one transaction; then
  // runs the actions. Returns false (state unchanged) when the commit failed. Pending worker
  // reports are committed first (FlushReports).
  bool StepJob(JobEntry& e, const core::il::Event& ev, std::vector<std::string> pre_frames = {},
               const dataset::IndexCursor* new_cursor = nullptr);
  // StepJob's parts: compute the step from the job's current state; write its frames and record;
  // move the new state (and cursor) into the job; run its actions and schedule its retry.
  PlannedStep PlanStep(JobEntry& e, const core::il::Event& ev, std::vector<std::string> pre_frames,
                       const dataset::IndexCursor* new_cursor);
  Status WriteStep(store::Store::Tx& tx, const PlannedStep& p);
  void AdoptStep(PlannedStep& p);
  void ActOnStep(PlannedStep& p);
  // A step that deferred work (retry_after_ms) gets a Tick at that time, not only at the next
  // checkPeriodSeconds.
  void ScheduleRetry(JobEntry& e, int64_t now_ms);
  void RunAction(JobEntry& e, const core::il::Action& a);

  // ---------------------------------------------------------------- worker API and status server
  // (controller_api.cc)

  // Starts the worker API and, unless --status-port is 0, the status server.
  Status StartServers();
  http::HttpResponse OnWorkerMessage(std::string_view path_name, std::string_view body);
  http::HttpResponse OnStatusRequest(const http::HttpRequest& req);
  std::string RenderStatus();
  JobView ViewOf(const JobEntry& e);
};

}  // namespace sedna::app
