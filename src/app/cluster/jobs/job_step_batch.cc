// The job runner, steps of several jobs in one commit (job_runner.h): between BeginSteps and
// EndSteps each step is planned and adopted at once (the job's next step plans from it), all are
// written in one transaction at the outer EndSteps and act only after it; a failed commit puts
// every job back as it was before its first step of the batch and drops each event, as Step does
// for one.
#include "adapters/log/log.h"

#include <memory>
#include <utility>

#include "app/cluster/jobs/job_entry.h"
#include "app/cluster/jobs/job_runner.h"

namespace sedna::app {

void JobRunner::BeginSteps() {
  if (step_batch_depth_++ == 0) step_batch_ = std::make_unique<StepBatch>();
}

void JobRunner::EndSteps() {
  if (step_batch_depth_ == 0 || --step_batch_depth_ > 0) return;
  std::unique_ptr<StepBatch> b = std::move(step_batch_);
  if (!b || b->steps.empty()) return;
  bool writes = false;
  for (const PlannedStep& p : b->steps) writes |= p.write_record || !p.frames.empty();
  Status s = Status::Ok();
  if (writes) {
    s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
      for (const PlannedStep& p : b->steps) {
        if (Status w = Write(tx, p); !w.ok()) return w;
      }
      return Status::Ok();
    });
  }
  if (!s.ok()) {
    for (auto it = b->before.rbegin(); it != b->before.rend(); ++it) {
      it->e->runner->Restore(std::move(it->state));
      it->e->ledger.cursor = std::move(it->cursor);
      // What the pass spooled for it is dropped with its step (ApplyIngest's rule). Only then: a
      // job stepped otherwise may have a pass appending to its spools right now.
      if (it->ingested) ResetSpools(*it->e);
    }
    for (const PlannedStep& p : b->steps) {
      spdlog::error("{} {}: committing state: {}; event dropped", p.e->object_kind(), p.e->name(),
                    s.message());
    }
    return;
  }
  for (PlannedStep& p : b->steps) ActOn(p);
}

}  // namespace sedna::app
