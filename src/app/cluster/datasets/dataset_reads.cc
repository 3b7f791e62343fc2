// The dataset registry, index reads (dataset_registry.h): the one pass over a host index or an S3
// mirror, on the pool, for the count (reported as numberOfSamples, coalesced) and the jobs.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include "adapters/log/log.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/shared_read.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/s3_client.h"
#include "app/cluster/datasets/dataset_entry.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/datasets/problem_shape.h"

namespace sedna::app {

namespace asio = boost::asio;

// A read error is logged once until it changes or clears (a FIFO at the path, say, is read at
// every poll and every change event).
void DatasetRegistry::NoteReadProblem(Entry& e, const std::string& problem) {
  std::string shape = ProblemShape(problem);
  if (shape == e.last_read_problem) return;
  e.last_read_problem = std::move(shape);
  spdlog::error("Dataset {}: {}", e.name(), problem);
}

// One pass in flight: the count's member, the jobs' shares, what the reads did.
struct DatasetRegistry::Pass {
  dataset::PassMember count;
  std::vector<IngestShare> jobs;
  dataset::PassTotals totals;
};

void DatasetRegistry::Read(Entry& e, bool take_unterminated) {
  if (outbox_.Full()) return;  // resumed when the outbox drains
  // One pass in flight per Dataset, on the pool: a slow file never holds the loop.
  if (e.read_inflight) {
    e.read_again = true;
    e.read_again_take |= take_unterminated;
    return;
  }
  e.read_inflight = true;
  auto pass = std::make_shared<Pass>();
  pass->count.cursor = e.record.cursor;
  pass->jobs = hooks_.join(e.src);
  const dataset::ReadOptions options = IndexReadOptions(
      e.src, ctx_.cfg.rootfs, take_unterminated, kIngestSliceBytes, ctx_.cfg.max_index_line_bytes);
  asio::post(ctx_.pool, [this, key = e.src.key, path = e.src.local_path, format = e.src.format,
                         pass, options] {
    std::vector<dataset::PassMember*> members{&pass->count};
    for (auto& j : pass->jobs) members.push_back(&j.member);
    pass->totals = dataset::ReadPass(path, format, members, options);
    // The jobs' spools are written, and where the kernel makes their syncs (AIO) those are
    // started, before the count goes back: posted first, the count woke the loop, which took this
    // thread's CPU for the count's commit and send while the spools, on the way to every job's
    // Ready, waited (~0.2 ms; docs/benchmarks.md, session 37). Now the count's commit runs while
    // the disk syncs the spools. Where this thread would make the syncs itself (no AIO), or there
    // are none, the count goes first: it does not wait for the jobs' spool syncs.
    dataset::Spool::SyncList syncs;
    for (auto& j : pass->jobs) {
      if (j.add_syncs) j.add_syncs(j.member, syncs);
    }
    // The count's event goes before the pass's in any case: a sync batch done before the count is
    // posted (items the kernel refused are synced on this thread) leaves the pass's post to the
    // count's. As events, neither overtakes reports acknowledged meanwhile.
    struct Order {
      std::mutex mu;
      bool count_posted = false;                // guarded by mu
      std::optional<InboundQueue::Event> read;  // guarded by mu: the pass's, held for the count
    };
    auto order = std::make_shared<Order>();
    auto post_count = [this, &key, &path, &pass, &order] {
      std::lock_guard<std::mutex> lock(order->mu);
      inbound_.Post(
          {"", key + " index count", [this, key, path, pass] { OnCount(key, path, *pass); }});
      order->count_posted = true;
      if (order->read) inbound_.Post(std::move(*order->read));
    };
    const bool count_after_submit = ctx_.syncs->async() && !syncs.items.empty();
    if (!count_after_submit) post_count();
    // The spools' syncs are made together by the kernel; their completion comes back on the loop
    // (or here, without AIO), which finishes the jobs' shares and hands the pass back.
    ctx_.syncs->Sync(
        std::move(syncs.items), [this, key, path, pass, order, take = options.take_unterminated](
                                    std::vector<fs::SyncItem>& synced) {
          for (auto& j : pass->jobs) j.finish(j.member, synced);
          InboundQueue::Event read{"", key + " index read", [this, key, path, pass, take] {
                                     OnRead(key, path, *pass, take);
                                   }};
          std::lock_guard<std::mutex> lock(order->mu);
          if (order->count_posted) {
            inbound_.Post(std::move(read));
          } else {
            order->read = std::move(read);
          }
        });
    // From the count's post on, the pool leaves the count member and the totals alone.
    if (count_after_submit) post_count();
  });
}

// A pass's count came back from the pool, ahead of its jobs: it is reported and persisted unless
// the Dataset is gone or moved to another index meanwhile (the count read is then stale).
void DatasetRegistry::OnCount(const std::string& key, const std::string& path, const Pass& pass) {
  if (ctx_.stopped) return;
  auto it = datasets_.find(key);
  if (it != datasets_.end() && it->second->src.local_path == path) CommitCount(*it->second, pass);
}

// The pass came back from the pool, after its count: each job commits what it got
// (dataset_registry.h, "What is committed when"), and the next pass is read if one is due.
void DatasetRegistry::OnRead(const std::string& key, const std::string& path, Pass& pass,
                             bool take_unterminated) {
  ctx_.metrics.index_bytes_read += pass.totals.bytes_read;
  auto it = datasets_.find(key);
  if (it != datasets_.end()) it->second->read_inflight = false;
  if (ctx_.stopped) return;
  // The jobs' results stand even when the Dataset moved meanwhile (each is for its own cursor).
  const bool current = it != datasets_.end() && it->second->src.local_path == path;
  if (hooks_.applying) hooks_.applying();
  for (auto& j : pass.jobs) j.apply(j.member, take_unterminated);
  if (hooks_.applied) hooks_.applied();
  it = datasets_.find(key);  // the jobs' steps may have changed the registry
  if (it == datasets_.end()) return;
  Entry& e = *it->second;
  if (!current) {  // the new index is read whole: a read asked for meanwhile is this one
    const bool take = e.read_again_take;
    e.read_again = e.read_again_take = false;
    PostRead(e, take);
    return;
  }
  const bool more = pass.totals.more;  // a check over holes reads less than a slice
  if (more || e.read_again) {
    const bool take = e.read_again_take || (more && take_unterminated);
    e.read_again = e.read_again_take = false;
    PostRead(e, take);
  }
}

// numberOfSamples (§P3.1): counted with the dataset's own cursor, reported when it changes.
void DatasetRegistry::CommitCount(Entry& e, const Pass& pass) {
  const dataset::PassMember& m = pass.count;
  if (!m.status.ok()) {
    NoteReadProblem(e, m.status.message());
    return;
  }
  const dataset::ReadResult& r = m.result;
  if (r.missing) return;
  DatasetRecord rec = e.record;
  rec.cursor = m.cursor;
  if (!e.last_read_problem.empty()) {
    spdlog::info("Dataset {}: {} is readable again", e.name(), e.src.local_path);
    e.last_read_problem.clear();
  }
  // Logged here only: the jobs read the same lines with cursors of their own.
  if (r.skipped_lines > 0) {
    spdlog::error("Dataset {}: {}: {}", e.name(), e.src.local_path,
                  dataset::SkippedLinesMessage(r, ctx_.cfg.max_index_line_bytes));
  }
  if (r.rewritten) {
    spdlog::log(
        r.rewrite == dataset::Rewrite::kSkippedByCount ? spdlog::level::warn : spdlog::level::info,
        "Dataset {}: {}: {}; {} new sample(s) in this read{}", e.name(), e.src.local_path,
        dataset::RewriteMessage(r), r.new_samples, pass.totals.more ? ", the rest follows" : "");
  }
  const int64_t n = rec.cursor.samples;
  std::vector<std::string> frames;
  if (n != rec.reported && StatusMaySend(e)) {
    frames.push_back(json::EncodeFrame({e.ds.meta.ns, "Dataset", e.ds.meta.name, "status"},
                                       json::EncodeDatasetStatus(n)));
    rec.reported = n;
  }
  if (frames.empty() && rec.cursor.offset == e.record.cursor.offset &&
      rec.cursor.ino == e.record.cursor.ino &&
      rec.cursor.prefix_digest == e.record.cursor.prefix_digest) {
    e.record = rec;  // only in-memory bookkeeping (tail size) changed
    return;
  }
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) -> Status {
    if (Status st = tx.PutState(kScopeDataset, e.src.key, EncodeDatasetRecord(rec)); !st.ok())
      return st;
    for (const auto& f : frames) {
      if (Status st = Outbox::Append(tx, f); !st.ok()) return st;
    }
    return Status::Ok();
  });
  if (s.ok()) {
    e.record = rec;
    if (!frames.empty()) e.last_status = ctx_.clock.Steady();
    outbox_.Pump();
  } else {
    spdlog::error("Dataset {}: persisting count: {}", e.name(), s.message());
  }
}

// At most one numberOfSamples per Dataset per --dataset-status-interval-ms (each is an API-server
// write in Sedna); a count that must wait is sent by a read when the interval has passed, so the
// last value always goes out.
bool DatasetRegistry::StatusMaySend(Entry& e) {
  const auto interval = std::chrono::milliseconds(ctx_.cfg.dataset_status_interval_ms);
  const auto now = ctx_.clock.Steady();
  if (interval.count() == 0 || now - e.last_status >= interval) return true;
  if (!e.status_due) {
    e.status_due = true;
    if (!e.status_timer) e.status_timer = std::make_unique<asio::steady_timer>(ctx_.io);
    e.status_timer->expires_after(e.last_status + interval - now);
    e.status_timer->async_wait([this, key = e.src.key](const boost::system::error_code& ec) {
      if (ec || ctx_.stopped) return;
      auto it = datasets_.find(key);
      if (it == datasets_.end()) return;
      it->second->status_due = false;
      PostRead(*it->second, false);
    });
  }
  return false;
}

}  // namespace sedna::app
