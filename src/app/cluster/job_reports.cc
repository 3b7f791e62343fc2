// The job runner, worker reports (job_runner.h): a report becomes a PendingReport for its job
// (with its forwarded frame), and the report intake's batches step the jobs through here.
#include <spdlog/spdlog.h>

#include <memory>

#include "adapters/json/upstream_codec.h"
#include "app/cluster/job_entry.h"
#include "app/cluster/job_runner.h"

namespace sedna::app {

std::optional<PendingReport> JobRunner::PrepareReport(const json::WorkerMessage& m) {
  const auto& rep = m.report;
  auto it = jobs_.find(core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name));
  if (it == jobs_.end()) return std::nullopt;
  JobEntry& e = *it->second;
  spdlog::info("{} {}: worker {} reported {} {}", e.object_kind(), e.name(), rep.worker_name,
               rep.kind, rep.status);
  return PendingReport{0, e.key, e.incarnation, rep,
                       JobFrame(e, json::EncodeForwardedWorkerMessage(m))};
}

PendingReport JobRunner::RecoverReport(const std::string& worker, const std::string& body,
                                       std::string* why) {
  auto m = json::DecodeWorkerMessage(body);
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
  return {0, e.key, e.incarnation, rep, JobFrame(e, json::EncodeForwardedWorkerMessage(*m))};
}

Result<std::function<void()>> JobRunner::CommitReports(
    const std::vector<PendingReport>& reports,
    const std::function<Status(store::Store::Tx&)>& also) {
  struct Saved {
    JobEntry* e;
    core::il::State il;
    core::ll::State ll;
  };
  std::vector<Saved> saved;  // each touched job's state before the batch, to undo a failed commit
  auto steps = std::make_shared<std::vector<PlannedStep>>();
  steps->reserve(reports.size());
  for (const PendingReport& r : reports) {
    JobEntry* found = Find(r.job_key, r.incarnation);
    if (!found) {
      // Only a report recovered at start for a job that is gone (Delete waits for the batch).
      spdlog::warn("worker report (journal entry {}): its job {} is gone; dropped", r.seq,
                   r.job_key.empty() ? std::string("(unknown)") : r.job_key);
      continue;
    }
    JobEntry& e = *found;
    bool seen = false;
    for (const Saved& s : saved) seen |= s.e == &e;
    if (!seen) saved.push_back({&e, e.il_state, e.ll_state});
    steps->push_back(Plan(e, core::il::WorkerReported{r.report}, {r.frame}, nullptr));
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
      v.e->il_state = v.il;
      v.e->ll_state = v.ll;
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
  return Step(*e, core::il::WorkerReported{std::move(r.report)}, {std::move(r.frame)});
}

}  // namespace sedna::app
