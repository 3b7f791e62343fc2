// Controller::Impl, worker reports: a report for a known IL/LL job is acknowledged once it is in
// the intake journal (`<db>-intake`, kill -9 safe like a commit under synchronous=NORMAL) and is
// committed with the step that consumes it in batches: at most --report-batch-ms after it arrived,
// after kReportBatch reports, or before any other event that steps a job, changes a job or appends
// to the outbox, whichever comes first. docs/durability.md, "Worker reports".
#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <charconv>

#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/controller_impl.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

// Reports per transaction at most; the batch is committed as soon as it is full.
constexpr size_t kReportBatch = 64;
// A batch whose commit failed is tried again after this long.
constexpr std::chrono::milliseconds kReportRetry{1000};
constexpr const char* kAppliedKey = "applied";

}  // namespace

Status Controller::Impl::OpenIntake() {
  if (store->identity() == 0) return Status::Ok();  // read-only
  const std::string path = cfg.db_path + "-intake";
  auto j = store::IntakeJournal::Open(path, store->identity());
  if (!j.ok()) return j.status();
  auto applied_text = store->GetState(kScopeIntake, kAppliedKey);
  if (!applied_text.ok()) return applied_text.status().With("intake journal");
  uint64_t applied = 0;
  if (applied_text->has_value()) {
    const std::string& t = **applied_text;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), applied);
    if (ec != std::errc() || end != t.data() + t.size()) {
      return Status::Error("intake journal: lc_state intake/applied is not a number: \"" + t +
                           "\"");
    }
  }
  intake = std::move(*j);
  std::vector<store::IntakeEntry> recovered = intake->Recover(applied);
  if (!recovered.empty()) {
    spdlog::info("worker reports: committing {} acknowledged before the last stop",
                 recovered.size());
  }
  for (auto& r : recovered) {
    auto m = json::DecodeWorkerMessage(r.body);
    const core::WorkerReport* rep = m.ok() ? &m->report : nullptr;
    JobEntry* e = nullptr;
    if (rep) {
      auto it = jobs.find(core::ResourceKey(rep->ns, rep->owner_kind, rep->owner_name));
      if (it != jobs.end()) e = it->second.get();
    }
    if (!e) {
      // Accepted for a job that was deleted while the LC was down (or unreadable, which only a
      // different build could cause): nothing to step. Its number is committed with the batch.
      spdlog::warn("worker {}: report acknowledged before the last stop dropped: {}", r.worker,
                   m.ok() ? "its job is gone" : m.message());
      reports_pending.push_back({r.seq, "", 0, {}, ""});  // its number is committed with the batch
      continue;
    }
    reports_pending.push_back({r.seq, e->key, e->incarnation, m->report,
                               JobFrame(*e, json::EncodeForwardedWorkerMessage(*m))});
  }
  if (!FlushReports(true)) {
    return Status::Error("intake journal " + path + ": cannot commit the " +
                         std::to_string(recovered.size()) + " report(s) it holds");
  }
  if (cfg.report_batch_ms == 0 || cfg.db_sync_full) intake.reset();  // each report commits alone
  return Status::Ok();
}

bool Controller::Impl::AcceptReport(JobEntry& e, std::string_view worker, std::string_view body,
                                    core::WorkerReport report, std::string frame) {
  if (!intake) return StepJob(e, core::il::WorkerReported{std::move(report)}, {std::move(frame)});
  if (!after_reports.empty()) {
    // Events wait behind a batch that cannot commit; a report taken now would be committed with
    // that batch, ahead of them. The worker retries (500), as when a commit fails.
    spdlog::warn("worker {}: report refused: earlier reports and events wait for the database",
                 worker);
    return false;
  }
  auto seq = intake->Append(worker, body);
  if (!seq.ok()) {
    if (!FlushReports()) return false;
    seq = intake->Append(worker, body);
    if (!seq.ok()) {  // larger than the whole journal: the batch is empty, order is kept
      return StepJob(e, core::il::WorkerReported{std::move(report)}, {std::move(frame)});
    }
  }
  reports_pending.push_back({*seq, e.key, e.incarnation, std::move(report), std::move(frame)});
  if (reports_pending.size() >= kReportBatch) {
    if (!report_flush_posted) {
      report_flush_posted = true;  // after the current handler: the worker's reply goes out first
      asio::post(io, [this] {
        report_flush_posted = false;
        if (!stopped) FlushReports();
      });
    }
  } else if (!report_timer_armed) {
    ScheduleReportFlush(std::chrono::milliseconds(cfg.report_batch_ms));
  }
  return true;
}

void Controller::Impl::ScheduleReportFlush(std::chrono::milliseconds after) {
  if (!report_timer) report_timer = std::make_unique<asio::steady_timer>(io);
  report_timer_armed = true;
  report_timer->expires_after(after);
  report_timer->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    report_timer_armed = false;
    if (!stopped) FlushReports(true);
  });
}

bool Controller::Impl::ReportsFirst(const std::string& what, std::function<void()> redo) {
  if (FlushReports()) return true;
  spdlog::debug("{}: waits behind {} acknowledged worker report(s) not committed yet", what,
                reports_pending.size());
  after_reports.push_back(std::move(redo));
  return false;
}

bool Controller::Impl::FlushReports(bool retry) {
  if (reports_pending.empty()) return true;
  if (reports_failing && !retry) return false;  // each attempt may wait out the busy timeout
  ScheduleTrim();
  struct Saved {
    JobEntry* e;
    core::il::State il;
    core::ll::State ll;
  };
  std::vector<Saved> saved;  // each touched job's state before the batch, to undo a failed commit
  std::vector<PlannedStep> steps;
  steps.reserve(reports_pending.size());
  for (PendingReport& r : reports_pending) {
    JobEntry* found = FindJob(r.job_key, r.incarnation);
    if (!found) {
      // Only a report recovered at start for a job that is gone (DeleteJob waits for the batch).
      spdlog::warn("worker report (journal entry {}): its job {} is gone; dropped", r.seq,
                   r.job_key.empty() ? std::string("(unknown)") : r.job_key);
      continue;
    }
    JobEntry& e = *found;
    bool seen = false;
    for (const Saved& s : saved) seen |= s.e == &e;
    if (!seen) saved.push_back({&e, e.il_state, e.ll_state});
    steps.push_back(PlanStep(e, core::il::WorkerReported{r.report}, {r.frame}, nullptr));
    AdoptStep(steps.back());  // the next report of this job steps from here
  }
  const uint64_t through = reports_pending.back().seq;
  Status s = store->Transact([&](store::Store::Tx& tx) -> Status {
    for (const PlannedStep& p : steps) {
      if (Status w = WriteStep(tx, p); !w.ok()) return w;
    }
    return tx.PutState(kScopeIntake, kAppliedKey, std::to_string(through));
  });
  if (!s.ok()) {
    for (const Saved& v : saved) {
      v.e->il_state = v.il;
      v.e->ll_state = v.ll;
    }
    spdlog::error(
        "worker reports: committing {} acknowledged report(s): {}; they stay in the intake "
        "journal, next try in {} ms; events for jobs wait behind them",
        reports_pending.size(), s.message(), kReportRetry.count());
    reports_failing = true;
    if (!stopped) {
      if (report_timer_armed) report_timer->cancel();
      ScheduleReportFlush(kReportRetry);
    }
    return false;
  }
  if (reports_failing) spdlog::info("worker reports: the delayed batch is committed");
  reports_failing = false;
  reports_pending.clear();
  if (intake) intake->Reset();
  for (PlannedStep& p : steps) ActOnStep(p);
  // Events that waited behind the batch, in their order (each finds no report pending now).
  std::vector<std::function<void()>> waiting;
  waiting.swap(after_reports);
  if (stopped) return true;  // at Stop: not kept (docs/durability.md)
  for (auto& redo : waiting) redo();
  return true;
}

}  // namespace sedna::app
