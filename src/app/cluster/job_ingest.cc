// The job runner, ingest (job_runner.h): the samples appended to a job's dataset index are
// streamed into its train and eval spools by its Dataset's pass (dataset_registry.h), split by
// running totals, then the cursor and the counts are committed with the step that sees them. A
// failed ingest is retried.
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

// Its samples come from its Dataset's pass (dataset_registry.h): the registry reads, and calls
// JoinPass as the pass starts.
void JobRunner::Ingest(JobEntry& e, const DatasetSource& ds, bool take_unterminated) {
  if (e.ingest_inflight) {
    e.ingest_again = true;
    e.ingest_again_take |= take_unterminated;
    return;
  }
  datasets_.Ingest(ds.ns, ds.name, take_unterminated);
}

std::vector<IngestShare> JobRunner::JoinPass(const DatasetSource& ds) {
  std::vector<IngestShare> shares;
  for (auto& [k, j] : jobs_) {
    if (!j->uses(ds.ns, ds.name)) continue;
    if (j->ingest_inflight) {  // in another Dataset's pass (it moved): once that one is back
      j->ingest_again = true;
      continue;
    }
    shares.push_back(Share(*j, ds));
  }
  return shares;
}

// One job's share: its samples streamed into its train and eval spools (split by running
// totals) on the pool, flushed there, then its step back here.
IngestShare JobRunner::Share(JobEntry& e, const DatasetSource& ds) {
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
  // One ingest in flight per job: only the pass appends to its spools until it is back.
  e.ingest_inflight = true;
  auto done = std::make_shared<IngestDone>();
  done->seen = e.samples_seen();
  done->path = ds.local_path;
  IngestShare share;
  share.member.cursor = std::move(cursor);
  share.member.on_sample = [done, p = e.train_prob(), train = e.train_spool,
                            eval = e.eval_spool](std::string_view line) -> Status {
    IngestDone& d = *done;
    ++d.seen;
    if (core::IsTrainSample(p, d.seen)) {
      ++d.train_added;
      return train->Append(line);
    }
    ++d.eval_added;
    return eval->Append(line);
  };
  share.finish = [done, train = e.train_spool, eval = e.eval_spool](dataset::PassMember& m) {
    IngestDone& d = *done;
    d.cursor = m.cursor;
    d.status = m.status;
    d.result = m.result;
    if (d.status.ok() && d.train_added + d.eval_added > 0) {
      Status a = train->Flush();
      Status b = eval->Flush();
      d.status = !a.ok() ? a : b;
    }
    d.train_end = train->size();
    d.eval_end = eval->size();
  };
  share.apply = [this, key = e.key, inc = e.incarnation, done](const dataset::PassMember&,
                                                               bool take_unterminated) {
    OnIngested(key, inc, *done, take_unterminated);
  };
  return share;
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
  if (r.missing) {
    if (cursor.path != e.cursor.path) Step(e, core::il::JobChanged{}, {}, &cursor);
    return;
  }
  // (A read that filled its slice is followed by the pass's next one, for every job of it.)
  if (train_added + eval_added == 0) {
    if (cursor.path != e.cursor.path) {
      Step(e, core::il::JobChanged{}, {}, &cursor);  // persist the new source
    } else {
      e.cursor = cursor;  // header/tail bookkeeping only (or an over-long line being skipped)
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
