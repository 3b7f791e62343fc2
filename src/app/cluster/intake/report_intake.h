// The report intake: worker reports for IL/LL jobs are acknowledged once they are in the intake
// journal (`<db>-intake`, kill -9 safe like a commit under synchronous=NORMAL) and committed with
// the steps that consume them in batches: at most --report-batch-ms after the first arrived, after
// kReportBatch reports, or before the inbound queue hands out any other event, whichever comes
// first (docs/durability.md, "Worker reports").
//
// Owns: the journal, the reports acknowledged and not committed, the batch timer, and whether the
//   last batch commit failed (and when it is tried again).
// Calls: the store (the journal's applied mark) and CommitBatch / StepAlone, given by the
//   composition root (the job runner steps the jobs); the inbound queue (Kick when a batch is
//   due; waiting before it takes a report; RunNow for a report stepped alone).
// Called by: the worker endpoint (Accept); the inbound queue (Commit, pending: the ordering
//   contract, inbound_queue.h); the composition root (Open at start-up, Stop).
//
// A new report is refused while events wait in the inbound queue behind a batch that cannot
// commit: taken now, it would be committed ahead of them.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/json/upstream_codec.h"
#include "adapters/store/intake_journal.h"
#include "app/cluster/context.h"
#include "app/cluster/inbound_queue.h"
#include "core/report.h"

namespace sedna::app {

// A worker report for a job. Its metrics (json::ReportMetrics::kDeferred) and the frame forwarded
// upstream for it (§P3.5) are made by the batch that commits it, not before the worker's answer.
struct PendingReport {
  uint64_t seq = 0;  // its intake-journal entry
  std::string job_key;
  uint64_t incarnation = 0;  // a job deleted and created again under its name is another job
  json::WorkerMessage message;
};

class ReportIntake {
 public:
  // Steps each report's job in order, from the job's current state, and commits every step and
  // `also` in one transaction. On success, returns what to run now that they are committed (the
  // steps' actions); on failure, the jobs' states are as before and the error is returned.
  // Reports whose job is gone are skipped. It may use each report while it runs but leaves it as
  // it was (a batch that fails is committed again).
  using CommitBatch = std::function<Result<std::function<void()>>(
      std::vector<PendingReport>& reports, const std::function<Status(store::Store::Tx&)>& also)>;
  // Steps one report's job in a transaction of its own (no journal); false if it did not commit.
  using StepAlone = std::function<bool(PendingReport report)>;
  // A journal entry recovered at start-up as a report for its job; job_key empty when its job is
  // gone or the body unreadable (`why` says which).
  using Recover = std::function<PendingReport(const std::string& worker, const std::string& body,
                                              std::string* why)>;

  // `inbound` must outlive the intake.
  ReportIntake(Context& ctx, InboundQueue& inbound, CommitBatch commit, StepAlone step_alone)
      : ctx_(ctx),
        inbound_(inbound),
        commit_(std::move(commit)),
        step_alone_(std::move(step_alone)) {}
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

  // Commits the pending reports now (the inbound queue asks, before it hands out an event). False
  // when they could not be committed: they stay pending and a retry is scheduled; until that
  // retry is due, calls return false at once (each attempt may wait out the busy timeout).
  bool Commit();
  bool settled() const { return pending_.empty(); }
  size_t pending() const { return pending_.size(); }

  // Cancels the batch timer and commits what is pending (what fails stays in the journal).
  void Stop();

 private:
  bool Flush(bool retry);
  // Steps the report alone, as an event of the inbound queue; false when it could not be now.
  bool StepAloneNow(PendingReport report);
  void ScheduleFlush(std::chrono::milliseconds after);
  void NoteJournal(const Status& s);

  Context& ctx_;
  InboundQueue& inbound_;
  CommitBatch commit_;
  StepAlone step_alone_;
  std::unique_ptr<store::IntakeJournal> journal_;  // null: each report commits alone
  std::vector<PendingReport> pending_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
  bool timer_armed_ = false;
  bool flush_posted_ = false;
  bool failing_ = false;  // the last batch commit failed; only its retry tries again
  bool due_ = false;      // the batch timer fired: the next Commit is the retry
};

}  // namespace sedna::app
