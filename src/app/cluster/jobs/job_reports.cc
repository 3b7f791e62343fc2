// The job runner, worker reports (job_runner.h): a report becomes a PendingReport for its job
// (with its forwarded frame), and the report intake's batches step the jobs through here.
#include "adapters/log/log.h"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/fs/confined.h"
#include "adapters/fs/files.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/jobs/job_entry.h"
#include "app/cluster/jobs/job_runner.h"
#include "core/ascii.h"

namespace sedna::app {

bool JobEntry::AllowReportLog() {
  const auto now = LogBudget::Clock::now();
  if (!report_log.Allow(now)) return false;
  LogBudget::Clock::time_point since;
  if (const int64_t n = report_log.TakeSuppressed(&since); n > 0) {
    spdlog::warn(
        "{} {}: {} log lines about worker reports suppressed in the last {:.1f} s (over {} at "
        "once or {} a second); the reports themselves were processed",
        object_kind(), name(), n, std::chrono::duration<double>(now - since).count(),
        kReportLogBurst, kReportLogPerSecond);
  }
  return true;
}

Result<std::optional<PendingReport>> JobRunner::PrepareReport(json::WorkerMessage& m) {
  const auto& rep = m.report;
  auto it = jobs_.find(core::ResourceKeyInto(key_, rep.ns, rep.owner_kind, rep.owner_name));
  if (it == jobs_.end()) return std::optional<PendingReport>();
  JobEntry& e = *it->second;
  if (Status s = CheckReport(e, rep); !s.ok()) {
    if (e.AllowReportLog()) {
      spdlog::warn("{} {}: worker {} report refused: {}", e.object_kind(), e.name(),
                   rep.worker_name, s.message());
    }
    // The round must still end: a G1 GM never asks for the deploy decision (§P4.3).
    if (e.runner->RefusalEndsRound(core::AsciiLowered(rep.kind))) {
      executor_.Add({e.key, e.incarnation},
                    core::il::EvalReportRefused{rep.worker_name, s.message()});
    }
    return s;
  }
  if (e.AllowReportLog()) {
    spdlog::info("{} {}: worker {} reported {} {}", e.object_kind(), e.name(), rep.worker_name,
                 rep.kind, rep.status);
  }
  return std::optional<PendingReport>(PendingReport{0, e.key, e.incarnation, std::move(m)});
}

// Sedna names train and eval pods' workers "train-worker-xxxxx" and "eval-worker-xxxxx"
// (docs/protocol.md §P4.4); that, the job and the models are all a report can be checked by: the
// protocol has no authentication (docs/security.md).
Status JobRunner::CheckReport(const JobEntry& e, const core::WorkerReport& r) const {
  using core::EqualsIgnoreCase;
  const std::string_view kind = EqualsIgnoreCase(r.kind, "train")  ? "train"
                                : EqualsIgnoreCase(r.kind, "eval") ? "eval"
                                                                   : "";
  if (kind.empty()) return Status::Ok();
  const std::string_view prefix = kind == "train" ? "train-worker-" : "eval-worker-";
  if (r.worker_name.compare(0, prefix.size(), prefix) != 0) {
    return Status::Error("name: \"" + r.worker_name + "\" is not a " + std::string(kind) +
                         " worker's name (Sedna names them " + std::string(prefix) + "<suffix>)");
  }
  if (!EqualsIgnoreCase(r.status, "completed")) return Status::Ok();
  if (!r.results_error.empty()) return Status::Error(r.results_error);
  if (r.results.empty()) return Status::Error("results: empty");
  const core::ReportScope scope = e.runner->ScopeOfReport(World(e), std::string(kind));
  if (!scope.awaited) return Status::Ok();  // not this LC's stage: forwarded only
  for (size_t i = 0; i < r.results.size(); ++i) {
    const std::string& url = r.results[i].url;
    const std::string field = "results[" + std::to_string(i) + "].url";
    if (url.empty()) return Status::Error(field + ": empty");
    // On the loop: lexical and bounded only, no filesystem access (a 2,000-component URL is a
    // 400, not a deep resolution). The pool opens a model confined beneath the job's root when it
    // copies it (storage::CopyModelWith), so a link planted in the output is refused there.
    if (Status s = fs::CheckPathBounds(url, field); !s.ok()) return s;
    bool ok = false;
    for (const std::string& x : scope.exact) ok |= fs::CleanPath(x) == fs::CleanPath(url);
    for (const std::string& dir : scope.dirs) {
      if (ok) break;
      ok = LexicallyInside(url, dir, field).ok();
    }
    if (!ok) {
      std::string allowed;
      for (const auto& d : scope.dirs) allowed += (allowed.empty() ? "" : ", ") + d + "/";
      for (const auto& x : scope.exact) allowed += (allowed.empty() ? "" : ", ") + x;
      return Status::Error(field + ": \"" + url + "\" is not " + scope.what + " (" + allowed + ")");
    }
  }
  return Status::Ok();
}

PendingReport JobRunner::RecoverReport(const std::string& worker, const std::string& body,
                                       std::string* why) {
  auto m = json::DecodeWorkerMessage(body, json::ReportMetrics::kDeferred);
  if (!m.ok()) {
    *why = m.message();
    return {};
  }
  const auto& rep = m->report;
  auto it = jobs_.find(core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name));
  if (it == jobs_.end()) {
    *why = "its job is gone";
    return {};
  }
  JobEntry& e = *it->second;
  return {0, e.key, e.incarnation, std::move(*m)};
}

Result<std::function<void()>> JobRunner::CommitReports(
    std::vector<PendingReport>& reports, const std::function<Status(store::Store::Tx&)>& also) {
  struct Saved {
    JobEntry* e;
    KindState state;
  };
  std::vector<Saved> saved;  // each touched job's state before the batch, to undo a failed commit
  auto steps = std::make_shared<std::vector<PlannedStep>>();
  steps->reserve(reports.size());
  for (PendingReport& r : reports) {
    JobEntry* found = Find(r.job_key, r.incarnation);
    if (!found) {
      // Only a report recovered at start for a job that is gone (a Delete is an inbound event,
      // handed out once the batch is committed).
      spdlog::warn("worker report (journal entry {}): its job {} is gone; dropped", r.seq,
                   r.job_key.empty() ? std::string("(unknown)") : r.job_key);
      continue;
    }
    JobEntry& e = *found;
    bool seen = false;
    for (const Saved& s : saved) seen |= s.e == &e;
    if (!seen) saved.push_back({&e, e.runner->Snapshot()});
    // The event borrows the report (no copy) and gives it back as it was, its metrics not decoded
    // (kDeferred): a batch that fails to commit stays pending and is stepped again. Freed now,
    // the metrics' dozen small blocks go back to the allocator's per-thread cache for the next
    // report instead of staying live through the batch (which cost more than the copy).
    std::string frame = ForwardedFrame(e, r.message);  // reads the report: before it is lent
    json::DecodeReportMetrics(r.message.results, r.message.report);
    core::il::Event event{core::il::WorkerReported{std::move(r.message.report)}};
    steps->push_back(Plan(e, event, {std::move(frame)}, nullptr));
    r.message.report = std::move(std::get<core::il::WorkerReported>(event).report);
    json::DropReportMetrics(r.message.report);
    Adopt(steps->back());  // the next report of this job steps from here
  }
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
    for (const PlannedStep& p : *steps) {
      if (Status w = Write(tx, p); !w.ok()) return w;
    }
    return also(tx);
  });
  if (!s.ok()) {
    for (const Saved& v : saved) {
      v.e->runner->Restore(v.state);
    }
    return s;
  }
  return std::function<void()>([this, steps] {
    for (PlannedStep& p : *steps) ActOn(p);
  });
}

bool JobRunner::StepReport(PendingReport r) {
  JobEntry* e = Find(r.job_key, r.incarnation);
  if (!e) return true;  // deleted since it was prepared: nothing to step
  std::string frame = ForwardedFrame(*e, r.message);
  json::DecodeReportMetrics(r.message.results, r.message.report);
  return Step(*e, core::il::WorkerReported{std::move(r.message.report)}, {std::move(frame)});
}

std::string JobRunner::ForwardedFrame(const JobEntry& e, const json::WorkerMessage& m) const {
  return JobFrame(e, json::EncodeForwardedWorkerMessage(m));
}

}  // namespace sedna::app
