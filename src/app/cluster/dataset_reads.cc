// The dataset registry, index reads (dataset_registry.h): the count of a host index or an S3
// mirror, read on the pool, reported as numberOfSamples (coalesced) and handed to the jobs.
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <memory>

#include "adapters/dataset/index_reader.h"
#include "adapters/fs/files.h"
#include "adapters/json/envelope.h"
#include "adapters/json/upstream_codec.h"
#include "adapters/s3/s3_client.h"
#include "app/cluster/dataset_entry.h"
#include "app/cluster/dataset_registry.h"
#include "app/cluster/problem_shape.h"

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

void DatasetRegistry::Read(Entry& e, bool take_unterminated) {
  if (outbox_.Full()) return;  // resumed when the outbox drains
  // One read in flight per Dataset, on the pool: a slow file never holds the loop.
  if (e.read_inflight) {
    e.read_again = true;
    e.read_again_take |= take_unterminated;
    return;
  }
  e.read_inflight = true;
  const dataset::ReadOptions options{take_unterminated, kIngestSliceBytes,
                                     ctx_.cfg.max_index_line_bytes};
  asio::post(ctx_.pool, [this, key = e.src.key, path = e.src.local_path, format = e.src.format,
                         cursor = e.record.cursor, options]() mutable {
    auto r = std::make_shared<Result<dataset::ReadResult>>(dataset::ReadNewSamples(
        path, format, cursor, options, [](std::string_view) { return Status::Ok(); }));
    // Back as an event: the count frame does not overtake reports acknowledged meanwhile.
    inbound_.Post(
        {"", key + " index read", [this, key, path, cursor, r, take = options.take_unterminated] {
           OnRead(key, path, cursor, *r, take);
         }});
  });
}

// A count read came back from the pool: report and persist it, then let the jobs ingest.
void DatasetRegistry::OnRead(const std::string& key, const std::string& path,
                             const dataset::IndexCursor& cursor,
                             const Result<dataset::ReadResult>& r, bool take_unterminated) {
  auto it = datasets_.find(key);
  if (it == datasets_.end()) return;
  Entry& e = *it->second;
  e.read_inflight = false;
  if (ctx_.stopped) return;
  if (e.src.local_path != path) {  // the Dataset moved to another index meanwhile
    PostRead(e, false);
    return;
  }
  // numberOfSamples (§P3.1): counted with the dataset's own cursor, reported when it changes.
  DatasetRecord rec = e.record;
  rec.cursor = cursor;
  bool more = false;
  if (!r.ok()) {
    NoteReadProblem(e, r.message());
  } else if (!r->missing) {
    if (!e.last_read_problem.empty()) {
      spdlog::info("Dataset {}: {} is readable again", e.name(), e.src.local_path);
      e.last_read_problem.clear();
    }
    // Logged here only: the jobs read the same lines with cursors of their own.
    if (r->skipped_lines > 0) {
      spdlog::error("Dataset {}: {}: {}", e.name(), e.src.local_path,
                    dataset::SkippedLinesMessage(*r, ctx_.cfg.max_index_line_bytes));
    }
    more = r->bytes_read >= kIngestSliceBytes || r->checking;  // a check over holes reads less
    if (r->rewritten) {
      spdlog::log(r->rewrite == dataset::Rewrite::kSkippedByCount ? spdlog::level::warn
                                                                  : spdlog::level::info,
                  "Dataset {}: {}: {}; {} new sample(s) in this read{}", e.name(), e.src.local_path,
                  dataset::RewriteMessage(*r), r->new_samples, more ? ", the rest follows" : "");
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
    } else {
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
  }
  hooks_.read(e.src, take_unterminated);
  if (more || e.read_again) {
    const bool take = e.read_again_take || (more && take_unterminated);
    e.read_again = e.read_again_take = false;
    PostRead(e, take);
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
