// The job runner, ingest (job_runner.h): the samples appended to a job's dataset index are
// streamed into its train and eval spools, split by running totals, then the cursor and the
// counts are committed with the step that sees them. A failed ingest is retried.
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/spool.h"
#include "app/cluster/job_entry.h"
#include "app/cluster/job_runner.h"
#include "core/split.h"

namespace sedna::app {

namespace asio = boost::asio;

namespace {

// A failed ingest (e.g. the spool's disk is full) is tried again after this long, whether or not
// the index changes (as a failed sample-file write is: core::il OnFileWritten).
constexpr std::chrono::seconds kIngestRetry{10};

}  // namespace

void JobRunner::Ingest(JobEntry& e, const DatasetSource& ds, bool take_unterminated) {
  if (outbox_.Full()) return;
  // A read that waits behind reports is queued once per job; it reads the job's dataset as it is
  // when it runs (an update queued before it may have changed it).
  if (!intake_.RunAfterReportsOnce("ingest:" + e.key, e.name() + " ingest",
                                   [this, key = e.key, inc = e.incarnation, take_unterminated] {
                                     IngestAgain(key, inc, take_unterminated);
                                   })) {
    return;
  }
  const double p = e.train_prob();
  dataset::IndexCursor cursor = e.cursor;
  if (cursor.path != ds.local_path) {
    // B26/B28: the Dataset now names another index (url changed, or deleted and re-created
    // elsewhere). It is a new source: read it from its start; the split's running total
    // (samples_seen) continues.
    if (!cursor.path.empty()) {
      spdlog::info(
          "{} {}: dataset index changed from {} to {}; reading the new index from "
          "its start",
          e.object_kind(), e.name(), cursor.path, ds.local_path);
    }
    std::string header = cursor.header;
    cursor = dataset::IndexCursor{};
    cursor.path = ds.local_path;
    cursor.header = header;  // kept for csv files until the new header is read
  }
  int64_t seen = e.samples_seen(), train_added = 0, eval_added = 0;
  const dataset::ReadOptions options{take_unterminated, kIngestSliceBytes,
                                     ctx_.cfg.max_index_line_bytes};
  auto r = dataset::ReadNewSamples(ds.local_path, ds.format, cursor, options,
                                   [&](std::string_view line) -> Status {
                                     ++seen;
                                     if (core::IsTrainSample(p, seen)) {
                                       ++train_added;
                                       return e.train_spool->Append(line);
                                     }
                                     ++eval_added;
                                     return e.eval_spool->Append(line);
                                   });
  Status st = r.ok() ? Status::Ok() : r.status();
  if (st.ok() && train_added + eval_added > 0) {
    Status a = e.train_spool->Flush();
    Status b = e.eval_spool->Flush();
    st = !a.ok() ? a : b;
  }
  if (!st.ok()) {
    spdlog::error("{} {}: ingesting {}: {}; retrying in {} s", e.object_kind(), e.name(),
                  ds.local_path, st.message(), kIngestRetry.count());
    ResetSpools(e);
    ScheduleIngestRetry(e);
    return;
  }
  if (r->missing) {
    if (cursor.path != e.cursor.path) Step(e, core::il::JobChanged{}, {}, &cursor);
    return;
  }
  const bool more = r->bytes_read >= kIngestSliceBytes || r->checking;
  if (train_added + eval_added == 0) {
    if (cursor.path != e.cursor.path) {
      Step(e, core::il::JobChanged{}, {}, &cursor);  // persist the new source
    } else {
      e.cursor = cursor;  // header/tail bookkeeping only (or an over-long line being skipped)
    }
    if (more) PostIngest(e, take_unterminated);  // a skipped line can fill a slice
    return;
  }
  ctx_.metrics.samples_ingested += train_added + eval_added;
  core::il::SamplesIngested ev{seen, train_added, e.train_spool->size(), eval_added,
                               e.eval_spool->size()};
  if (!Step(e, ev, {}, &cursor)) {
    ResetSpools(e);
    return;
  }
  if (more) PostIngest(e, take_unterminated);
}

// The next slice after the current handler, once per job.
void JobRunner::PostIngest(JobEntry& e, bool take_unterminated) {
  if (e.ingest_posted) return;
  e.ingest_posted = true;
  asio::post(ctx_.io, [this, key = e.key, inc = e.incarnation, take_unterminated] {
    if (JobEntry* j = Find(key, inc)) j->ingest_posted = false;
    IngestAgain(key, inc, take_unterminated);
  });
}

void JobRunner::ScheduleIngestRetry(JobEntry& e) {
  if (e.ingest_retry_pending) return;
  e.ingest_retry_pending = true;
  if (!e.ingest_retry_timer) e.ingest_retry_timer = std::make_unique<asio::steady_timer>(ctx_.io);
  e.ingest_retry_timer->expires_after(kIngestRetry);
  const std::string key = e.key;
  const uint64_t inc = e.incarnation;
  e.ingest_retry_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
    if (ec || ctx_.stopped) return;
    if (JobEntry* j = Find(key, inc)) j->ingest_retry_pending = false;
    IngestAgain(key, inc, false);
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
  auto ts = dataset::Spool::Open(SpoolPath(e, "train"), e.train_committed());
  auto es = dataset::Spool::Open(SpoolPath(e, "eval"), e.eval_committed());
  if (ts.ok()) e.train_spool = std::move(*ts);
  if (es.ok()) e.eval_spool = std::move(*es);
}

}  // namespace sedna::app
