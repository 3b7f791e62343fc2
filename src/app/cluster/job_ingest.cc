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
  dataset::IndexCursor cursor = e.cursor;
  if (cursor.path != ds.local_path) {
    // [P:B26]/B28: the Dataset now names another index (url changed, or deleted and re-created
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
  // One ingest in flight per job, on the pool: the index read and the spool appends never hold
  // the loop; the step that commits them runs back here.
  if (e.ingest_inflight) {
    e.ingest_again = true;
    e.ingest_again_take |= take_unterminated;
    return;
  }
  e.ingest_inflight = true;
  auto done = std::make_shared<IngestDone>();
  done->cursor = std::move(cursor);
  done->seen = e.samples_seen();
  done->path = ds.local_path;
  const dataset::ReadOptions options{take_unterminated, kIngestSliceBytes,
                                     ctx_.cfg.max_index_line_bytes};
  asio::post(ctx_.pool, [this, key = e.key, inc = e.incarnation, done, format = ds.format, options,
                         p = e.train_prob(), train = e.train_spool, eval = e.eval_spool] {
    IngestDone& d = *done;
    auto r = dataset::ReadNewSamples(d.path, format, d.cursor, options,
                                     [&](std::string_view line) -> Status {
                                       ++d.seen;
                                       if (core::IsTrainSample(p, d.seen)) {
                                         ++d.train_added;
                                         return train->Append(line);
                                       }
                                       ++d.eval_added;
                                       return eval->Append(line);
                                     });
    d.status = r.ok() ? Status::Ok() : r.status();
    if (r.ok()) d.result = *r;
    if (d.status.ok() && d.train_added + d.eval_added > 0) {
      Status a = train->Flush();
      Status b = eval->Flush();
      d.status = !a.ok() ? a : b;
    }
    d.train_end = train->size();
    d.eval_end = eval->size();
    inbound_.Post({"", key + " ingest", [this, key, inc, done, take = options.take_unterminated] {
                     OnIngested(key, inc, *done, take);
                   }});
  });
}

void JobRunner::OnIngested(const std::string& key, uint64_t incarnation, const IngestDone& d,
                           bool take_unterminated) {
  JobEntry* found = Find(key, incarnation);
  if (!found) return;  // deleted meanwhile: its spools went with it
  JobEntry& e = *found;
  e.ingest_inflight = false;
  if (ctx_.stopped) return;
  const bool again = e.ingest_again;
  const bool again_take = e.ingest_again_take;
  e.ingest_again = e.ingest_again_take = false;
  ApplyIngest(e, d, take_unterminated);
  if (again) PostIngest(e, again_take);
}

void JobRunner::ApplyIngest(JobEntry& e, const IngestDone& d, bool take_unterminated) {
  const int64_t train_added = d.train_added, eval_added = d.eval_added;
  dataset::IndexCursor cursor = d.cursor;
  if (!d.status.ok()) {
    spdlog::error("{} {}: ingesting {}: {}; retrying in {} s", e.object_kind(), e.name(), d.path,
                  d.status.message(), kIngestRetry.count());
    ResetSpools(e);
    ScheduleIngestRetry(e);
    return;
  }
  const dataset::ReadResult& r = d.result;
  ctx_.metrics.index_bytes_read += r.bytes_read;
  if (r.missing) {
    if (cursor.path != e.cursor.path) Step(e, core::il::JobChanged{}, {}, &cursor);
    return;
  }
  const bool more = r.bytes_read >= kIngestSliceBytes || r.checking;
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
  core::il::SamplesIngested ev{d.seen, train_added, d.train_end, eval_added, d.eval_end};
  if (!Step(e, ev, {}, &cursor)) {
    ResetSpools(e);
    return;
  }
  if (more) PostIngest(e, take_unterminated);
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
  if (e.ingest_retry_pending) return;
  e.ingest_retry_pending = true;
  if (!e.ingest_retry_timer) e.ingest_retry_timer = std::make_unique<asio::steady_timer>(ctx_.io);
  e.ingest_retry_timer->expires_after(kIngestRetry);
  const std::string key = e.key;
  const uint64_t inc = e.incarnation;
  e.ingest_retry_timer->async_wait([this, key, inc](const boost::system::error_code& ec) {
    if (ec || ctx_.stopped) return;
    inbound_.Add({"", key + " ingest retry", [this, key, inc] {
                    if (JobEntry* j = Find(key, inc)) j->ingest_retry_pending = false;
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
  auto ts = dataset::Spool::Open(SpoolPath(e, "train"), e.train_committed());
  auto es = dataset::Spool::Open(SpoolPath(e, "eval"), e.eval_committed());
  if (ts.ok()) e.train_spool = std::move(*ts);
  if (es.ok()) e.eval_spool = std::move(*es);
}

}  // namespace sedna::app
