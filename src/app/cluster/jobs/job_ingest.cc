// The job runner, ingest (job_runner.h): the samples appended to a job's dataset index are
// streamed into its train and eval spools by its Dataset's pass (dataset_registry.h), split by
// running totals, then the cursor and the counts are committed with the step that sees them. A
// failed ingest is retried.
#include <boost/asio/io_context.hpp>
#include "adapters/log/log.h"

#include <chrono>

#include "adapters/dataset/index_reader.h"
#include "app/cluster/jobs/job_entry.h"
#include "app/cluster/jobs/job_runner.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

// A failed ingest (e.g. the spool's disk is full) is tried again after this long, whether or not
// the index changes (as a failed sample-file write is: core::il OnFileWritten).
constexpr std::chrono::milliseconds kIngestRetry{10000};

}  // namespace

// Its samples come from its Dataset's pass (dataset_registry.h): the registry reads, and calls
// JoinPass as the pass starts.
void JobRunner::Ingest(JobEntry& e, const DatasetSource& ds, bool take_unterminated) {
  if (e.ledger.in_flight()) {
    e.ledger.Defer(take_unterminated);
    return;
  }
  datasets_.Ingest(ds.ns, ds.name, take_unterminated);
}

// One job's share: its samples streamed into its train and eval spools (split by running
// totals) on the pool, flushed there, then its step back here.
std::vector<IngestShare> JobRunner::JoinPass(const DatasetSource& ds) {
  std::vector<IngestShare> shares;
  for (auto& [k, j] : jobs_) {
    if (!j->uses(ds.ns, ds.name)) continue;
    if (j->ledger.in_flight()) {  // in another Dataset's pass (it moved): once that one is back
      j->ledger.Defer(false);
      continue;
    }
    JobEntry& e = *j;
    shares.push_back(e.ledger.Share(ds, std::string(e.object_kind()) + " " + e.name(),
                                    e.samples_seen(), e.train_prob(),
                                    [this, key = e.key, inc = e.incarnation](
                                        const SampleLedger::IngestDone& d, bool take_unterminated) {
                                      OnIngested(key, inc, d, take_unterminated);
                                    }));
  }
  return shares;
}

void JobRunner::OnIngested(const std::string& key, uint64_t incarnation,
                           const SampleLedger::IngestDone& d, bool take_unterminated) {
  JobEntry* found = Find(key, incarnation);
  if (!found) return;  // deleted meanwhile: its spools went with it
  JobEntry& e = *found;
  const SampleLedger::Again again = e.ledger.Landed();
  if (ctx_.stopped) return;
  ApplyIngest(e, d, take_unterminated);
  if (again.again) PostIngest(e, again.take_unterminated);
}

void JobRunner::ApplyIngest(JobEntry& e, const SampleLedger::IngestDone& d,
                            bool take_unterminated) {
  const int64_t train_added = d.train_added, eval_added = d.eval_added;
  dataset::IndexCursor cursor = d.cursor;
  if (!d.status.ok()) {
    spdlog::error("{} {}: ingesting {}: {}; retrying in {} s", e.object_kind(), e.name(), d.path,
                  d.status.message(), kIngestRetry.count() / 1000);
    ResetSpools(e);
    ScheduleIngestRetry(e);
    return;
  }
  const dataset::ReadResult& r = d.result;
  if (r.missing) {
    if (cursor.path != e.ledger.cursor.path) Step(e, core::il::JobChanged{}, {}, &cursor);
    return;
  }
  // (A read that filled its slice is followed by the pass's next one, for every job of it.)
  if (train_added + eval_added == 0) {
    if (cursor.path != e.ledger.cursor.path) {
      Step(e, core::il::JobChanged{}, {}, &cursor);  // persist the new source
    } else {
      e.ledger.cursor =
          cursor;  // header/tail bookkeeping only (or an over-long line being skipped)
    }
    return;
  }
  ctx_.metrics.samples_ingested += train_added + eval_added;
  core::il::SamplesIngested ev{d.seen, train_added, d.train_end, eval_added, d.eval_end};
  if (!Step(e, ev, {}, &cursor)) ResetSpools(e);
}

// The next slice after the current handler, once per job (the first one asked for is queued; it
// reads the job's dataset as it is when it runs).
void JobRunner::PostIngest(JobEntry& e, bool take_unterminated) {
  inbound_.Defer({"ingest:" + e.key + "#" + std::to_string(e.incarnation), e.key + " ingest",
                  [this, key = e.key, inc = e.incarnation, take_unterminated] {
                    IngestAgain(key, inc, take_unterminated);
                  }});
}

void JobRunner::ScheduleIngestRetry(JobEntry& e) {
  e.ledger.ScheduleRetry(ctx_.io, kIngestRetry, [this, key = e.key, inc = e.incarnation] {
    if (ctx_.stopped) return;
    inbound_.Add({"", key + " ingest retry", [this, key, inc] {
                    if (JobEntry* j = Find(key, inc)) j->ledger.RetryFired();
                    IngestAgain(key, inc, false);
                  }});
  });
}

void JobRunner::IngestAgain(const std::string& key, uint64_t incarnation, bool take_unterminated) {
  JobEntry* j = Find(key, incarnation);
  if (!j) return;
  if (const DatasetSource* d = datasets_.Source(j->meta().ns, j->dataset_name())) {
    Ingest(*j, *d, take_unterminated);
  }
}

// Drops spool bytes that were appended but not committed.
void JobRunner::ResetSpools(JobEntry& e) {
  e.ledger.ResetSpools(e.train_committed(), e.eval_committed());
}

}  // namespace sedna::app
