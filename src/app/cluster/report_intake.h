// The report intake: worker reports for IL/LL jobs are acknowledged once they are in the intake
// journal (`<db>-intake`, kill -9 safe like a commit under synchronous=NORMAL) and committed with
// the steps that consume them in batches: at most --report-batch-ms after the first arrived, after
// kReportBatch reports, or before any other event that needs them committed first, whichever
// comes first (docs/durability.md, "Worker reports").
//
// Owns: the journal, the reports acknowledged and not committed, the batch timer, whether the
//   last batch commit failed, and the events that wait behind a batch that cannot commit.
// Calls: the store (the journal's applied mark) and CommitBatch / StepAlone, given by the
//   composition root (the job runner steps the jobs).
// Called by: the worker endpoint (Accept) and every part whose event must not overtake a report
//   (the ordering contract below); the composition root (Open at start-up, Stop).
//
// The ordering contract. An event that steps a job, changes a job, Dataset or Model, or appends to
// the outbox asks RunAfterReports first. When it answers true, no report is pending (they are
// committed) and the caller goes on. When it answers false, the caller stops: its event (`redo`)
// runs once the batch has committed, after every event that was queued before it, in arrival
// order. So the outbox, and each job's steps, keep arrival order across reports and everything
// else, also while the database refuses commits. At Stop, queued events are not kept (their
// sources re-send: docs/durability.md).
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/store/intake_journal.h"
#include "app/cluster/context.h"
#include "core/report.h"

namespace sedna::app {

// A worker report for a job, with the frame forwarded upstream for it (§3.5).
struct PendingReport {
  uint64_t seq = 0;  // its intake-journal entry
  std::string job_key;
  uint64_t incarnation = 0;  // a job deleted and created again under its name is another job
  core::WorkerReport report;
  std::string frame;
};

class ReportIntake {
 public:
  // Steps each report's job in order, from the job's current state, and commits every step and
  // `also` in one transaction. On success, returns what to run now that they are committed (the
  // steps' actions); on failure, the jobs' states are as before and the error is returned.
  // Reports whose job is gone are skipped.
  using CommitBatch = std::function<Result<std::function<void()>>(
      const std::vector<PendingReport>& reports,
      const std::function<Status(store::Store::Tx&)>& also)>;
  // Steps one report's job in a transaction of its own (no journal); false if it did not commit.
  using StepAlone = std::function<bool(PendingReport report)>;
  // A journal entry recovered at start-up as a report for its job; job_key empty when its job is
  // gone or the body unreadable (`why` says which).
  using Recover = std::function<PendingReport(const std::string& worker, const std::string& body,
                                              std::string* why)>;

  ReportIntake(Context& ctx, CommitBatch commit, StepAlone step_alone)
      : ctx_(ctx), commit_(std::move(commit)), step_alone_(std::move(step_alone)) {}
  ReportIntake(const ReportIntake&) = delete;
  ReportIntake& operator=(const ReportIntake&) = delete;

  // Opens the journal and commits the reports a previous run acknowledged and did not commit (in
  // their order, before any other event). Then, unless batching is off (--report-batch-ms 0,
  // --db-sync-full), keeps the journal for new reports.
  Status Open(const Recover& recover);
  // Takes a report: into the journal and the pending batch, or, with batching off (or a body too
  // large for the journal), straight through StepAlone. False when it could not be persisted, or
  // events wait behind a batch that cannot commit: the worker is answered 500 and retries.
  bool Accept(PendingReport report, std::string_view worker, std::string_view body);

  // The ordering contract (above). `what` names the event in a debug log line.
  bool RunAfterReports(const std::string& what, std::function<void()> redo);
  // As RunAfterReports, but an event with the same `tag` already waiting is not queued twice
  // (false is returned; the waiting one reads the state as it is when it runs).
  bool RunAfterReportsOnce(const std::string& tag, const std::string& what,
                           std::function<void()> redo);
  // Commits the pending reports now. False when they could not be committed (they stay pending,
  // a retry is scheduled); until that retry (`retry` true) succeeds, calls return false at once.
  bool Flush(bool retry = false);
  bool settled() const { return pending_.empty(); }
  size_t pending() const { return pending_.size(); }

  // Cancels the batch timer and commits what is pending (what fails stays in the journal).
  void Stop();

 private:
  void ScheduleFlush(std::chrono::milliseconds after);
  void NoteJournal(const Status& s);

  Context& ctx_;
  CommitBatch commit_;
  StepAlone step_alone_;
  std::unique_ptr<store::IntakeJournal> journal_;  // null: each report commits alone
  std::vector<PendingReport> pending_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
  bool timer_armed_ = false;
  bool flush_posted_ = false;
  bool failing_ = false;  // the last batch commit failed; only its retry tries again
  std::vector<std::function<void()>> waiting_;  // in arrival order
  std::set<std::string> waiting_tags_;
};

// RunAfterReports for an update of a job, Dataset or Model: true when it may be applied now
// (`update` intact). Otherwise it waits, moved into the queued event that calls `apply(update)`
// again, and false is returned: the caller stops.
template <class T, class Apply>
bool UpdateAfterReports(ReportIntake& intake, const std::string& what, T& update, Apply apply) {
  if (intake.settled()) return true;
  auto held = std::make_shared<T>(std::move(update));
  if (!intake.RunAfterReports(what, [held, apply] { apply(std::move(*held)); })) return false;
  update = std::move(*held);
  return true;
}

}  // namespace sedna::app
