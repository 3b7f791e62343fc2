// The report intake: journal and batches (report_intake.h).
#include "app/cluster/intake/report_intake.h"

#include <boost/asio/post.hpp>
#include "adapters/log/log.h"

#include <charconv>

namespace sedna::app {

namespace asio = boost::asio;

namespace {

// A batch whose commit failed is tried again after this long.
constexpr std::chrono::milliseconds kReportRetry{1000};
constexpr const char* kAppliedKey = "applied";

}  // namespace

Status ReportIntake::Open(const Recover& recover) {
  const Config& cfg = ctx_.cfg;
  if (ctx_.store->identity() == 0) return Status::Ok();  // read-only
  const std::string path = cfg.db_path + "-intake";
  auto j = store::IntakeJournal::Open(path, ctx_.store->identity());
  if (!j.ok()) return j.status();
  auto applied_text = ctx_.store->GetState(kScopeIntake, kAppliedKey);
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
  journal_ = std::move(*j);
  std::vector<store::IntakeEntry> recovered = journal_->Recover(applied);
  if (!recovered.empty()) {
    spdlog::info("worker reports: committing {} acknowledged before the last stop",
                 recovered.size());
  }
  for (auto& r : recovered) {
    std::string why;
    PendingReport p = recover(r.worker, r.body, &why);
    p.seq = r.seq;
    if (p.job_key.empty()) {
      // Accepted for a job that was deleted while the LC was down (or unreadable, which only a
      // different build could cause): nothing to step. Its number is committed with the batch.
      spdlog::warn("worker {}: report acknowledged before the last stop dropped: {}", r.worker,
                   why);
    }
    pending_.push_back(std::move(p));
  }
  if (!Flush(true)) {
    return Status::Error("intake journal " + path + ": cannot commit the " +
                         std::to_string(recovered.size()) + " report(s) it holds");
  }
  if (cfg.report_batch_ms == 0 || cfg.db_sync_full) journal_.reset();  // each report commits alone
  return Status::Ok();
}

bool ReportIntake::Accept(PendingReport report, std::string_view worker, std::string_view body) {
  if (!journal_) return StepAloneNow(std::move(report));
  if (inbound_.waiting() > 0) {
    // Events wait behind a batch that cannot commit; a report taken now would be committed with
    // that batch, ahead of them. The worker retries (500), as when a commit fails.
    spdlog::warn("worker {}: report refused: earlier reports and events wait for the database",
                 worker);
    return false;
  }
  auto seq = journal_->Append(worker, body);
  if (!seq.ok()) {
    inbound_.Kick();  // commits the batch, so the journal starts over
    if (!settled()) return false;
    seq = journal_->Append(worker, body);
    // Full (an entry larger than the whole journal) is no fault of the volume.
    const bool full = !seq.ok() && store::IntakeJournal::IsFull(seq.status());
    if (!full) NoteJournal(seq.ok() ? Status::Ok() : seq.status());
    if (!seq.ok()) {  // larger than the whole journal: the batch is empty, order is kept
      return StepAloneNow(std::move(report));
    }
  }
  if (!ctx_.health.journal_error.empty()) NoteJournal(Status::Ok());
  report.seq = *seq;
  pending_.push_back(std::move(report));
  if (pending_.size() >= kReportBatch) {
    if (!flush_posted_) {
      flush_posted_ = true;  // after the current handler: the worker's reply goes out first
      asio::post(ctx_.io, [this] {
        flush_posted_ = false;
        if (!ctx_.stopped) inbound_.Kick();
      });
    }
  } else if (!timer_armed_) {
    ScheduleFlush(std::chrono::milliseconds(ctx_.cfg.report_batch_ms));
  }
  return true;
}

// A journal that cannot be written (a failing or read-only volume) is logged once and makes the
// LC not ready; reports then commit one by one, if the database still can.
void ReportIntake::NoteJournal(const Status& s) {
  const std::string now = s.ok() ? "" : s.message();
  if (now == ctx_.health.journal_error) return;
  if (now.empty()) {
    spdlog::info("intake journal writable again");
  } else {
    spdlog::error("{}; worker reports are committed one by one meanwhile", now);
  }
  ctx_.health.journal_error = now;
}

void ReportIntake::ScheduleFlush(std::chrono::milliseconds after) {
  if (!timer_) timer_ = std::make_unique<asio::steady_timer>(ctx_.io);
  timer_armed_ = true;
  timer_->expires_after(after);
  timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    timer_armed_ = false;
    due_ = true;
    if (!ctx_.stopped) inbound_.Kick();
  });
}

bool ReportIntake::StepAloneNow(PendingReport report) {
  bool stepped = false;
  if (!inbound_.RunNow([&] { stepped = step_alone_(std::move(report)); })) return false;
  return stepped;
}

bool ReportIntake::Commit() {
  const bool retry = due_;
  due_ = false;
  return Flush(retry);
}

bool ReportIntake::Flush(bool retry) {
  if (pending_.empty()) return true;
  if (failing_ && !retry) return false;  // each attempt may wait out the busy timeout
  ctx_.trim.Schedule();
  const uint64_t through = pending_.back().seq;
  auto committed = commit_(pending_, [through](store::Store::Tx& tx) {
    return tx.PutState(kScopeIntake, kAppliedKey, std::to_string(through));
  });
  if (!committed.ok()) {
    spdlog::error(
        "worker reports: committing {} acknowledged report(s): {}; they stay in the intake "
        "journal, next try in {} ms; events for jobs wait behind them",
        pending_.size(), committed.message(), kReportRetry.count());
    failing_ = true;
    due_ = false;
    if (!ctx_.stopped) {
      if (timer_armed_) timer_->cancel();
      ScheduleFlush(kReportRetry);
    }
    return false;
  }
  if (failing_) spdlog::info("worker reports: the delayed batch is committed");
  failing_ = false;
  pending_.clear();
  if (journal_) journal_->Reset();
  (*committed)();
  return true;
}

void ReportIntake::Stop() {
  if (timer_) timer_->cancel();
  if (ctx_.store) Flush(true);  // what fails stays in the intake journal for the next start
}

}  // namespace sedna::app
