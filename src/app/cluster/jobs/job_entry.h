// Internal to the job runner (job_runner.cc, job_ingest.cc, job_steps.cc, job_reports.cc): one
// job's entry and one planned step. Not to be included elsewhere: other parts reach jobs through
// job_runner.h.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/log/log_budget.h"
#include "adapters/s3/s3_client.h"
#include "adapters/storage/storage.h"
#include "app/cluster/jobs/job_runner.h"
#include "app/cluster/jobs/kind_runner.h"
#include "app/cluster/jobs/sample_ledger.h"
#include "core/il_job.h"
#include "core/resources.h"
#include "core/trigger.h"

namespace sedna::app {

// The lc_state scope of a job's record.
inline const char* ScopeOf(JobKind k) { return k == JobKind::kIl ? kScopeIl : kScopeLl; }

// One IL or LL job: its kind runner (the object, the core state: kind_runner.h), its compiled
// train trigger, its sample ledger (the runner's state and the ledger's cursor are persisted
// together as one record), its timers.
struct JobEntry {
  std::string key;
  uint64_t incarnation = 0;
  std::unique_ptr<KindRunner> runner;  // never null
  std::string dirs_made_for;           // the spec.outputDir whose directories exist (§P4.5)
  std::string dirs_asked_for;          // the spec.outputDir whose directories are being made
  std::string dirs_error;              // why the last attempt failed ("" after a success)
  core::Trigger train_trigger;
  std::optional<s3::Credentials> creds;  // sedna.io/credential, in memory only ([P:B23])
  int64_t received_ms = 0;  // when the GM last sent the job object (unix ms); 0: not since start
  SampleLedger ledger;      // the cursor, the spools and the ingest bookkeeping (sample_ledger.h)
  std::unique_ptr<boost::asio::steady_timer> tick_timer;
  std::unique_ptr<boost::asio::steady_timer> retry_timer;
  int64_t retry_scheduled_at = 0;
  // Context::gm_epoch when the job object last came from the GM (~0: only reloaded from the
  // store since start): its conditions are current only on the same epoch.
  uint64_t seen_epoch = ~uint64_t{0};
  // The lines that worker reports make the LC write about this job (a report's own line, a
  // refusal) and the Log actions of all its steps share this budget (log_budget.h): far above
  // what a round says, it bounds what a worker repeating a report can make the LC write.
  LogBudget report_log{kReportLogBurst, kReportLogPerSecond};
  static constexpr int kReportLogBurst = 50;
  static constexpr double kReportLogPerSecond = 10;

  // True when a line of report_log's may be written now; the first one after suppressed lines is
  // preceded by a warning that counts them (job_reports.cc).
  bool AllowReportLog();

  JobKind kind() const { return runner->kind(); }
  const core::ObjectMeta& meta() const { return runner->meta(); }
  const std::string& dataset_name() const { return runner->dataset_name(); }
  bool uses(const std::string& ns, const std::string& dataset) const {
    return meta().ns == ns && dataset_name() == dataset;
  }
  double train_prob() const { return runner->train_prob(); }
  const std::string& output_dir() const { return runner->output_dir(); }
  const std::vector<core::JobCondition>& conditions() const { return runner->conditions(); }
  const char* object_kind() const { return runner->object_kind(); }
  std::string name() const { return meta().ns + "/" + meta().name; }
  int64_t samples_seen() const { return runner->samples_seen(); }
  int64_t train_committed() const { return runner->train_committed(); }
  int64_t eval_committed() const { return runner->eval_committed(); }
  std::string EncodeRecord(const dataset::IndexCursor& c) const { return runner->EncodeRecord(c); }
};

// What the storage functions are given for the job: its root (spec.outputDir), the rootfs, its
// credentials, the LC's staging and hot-update directories (job_output.cc).
storage::Context StorageContextOf(const Context& ctx, const JobEntry& e);

// One job step, computed (Plan) and not yet committed (Write) or acted on.
struct PlannedStep {
  JobEntry* e = nullptr;
  std::vector<core::il::Action> actions;
  std::vector<core::Fact> facts;    // the step's, for the round history
  std::vector<std::string> frames;  // upstream, in order: the pre-frames, then the step's reports
  // Per frame, whether it is informational (json::IsInformationalFrame), where Plan knows it
  // without reading the frame: a forwarded report by its kind and status; a status report never
  // is. nullopt: the store asks.
  std::vector<std::optional<bool>> informational;
  bool write_record = false;  // the state or the cursor changed
  std::string record;
  std::optional<dataset::IndexCursor> new_cursor;
  int64_t now_ms = 0;
  int64_t next_wake_ms = 0;  // KindStep::next_wake_ms
  // The step recorded a forwarded eval report: once its frame (the last one) is written
  // upstream, the job gets EvalForwardWritten (the deploy wait starts there, §H3.2).
  bool watch_forward = false;
  mutable int64_t last_frame_id = 0;  // outbox id of the last frame, set by Write
};

// Steps planned and adopted, waiting for their one commit (JobRunner::EndSteps), with each stepped
// job as it was before them (to undo a failed one).
struct StepBatch {
  struct Before {
    JobEntry* e = nullptr;
    KindState state;
    dataset::IndexCursor cursor;
    bool ingested = false;  // a step moved its cursor: what the pass spooled goes if it fails
  };
  std::vector<Before> before;
  std::vector<PlannedStep> steps;
};

}  // namespace sedna::app
