#include "app/cluster/jobs/sample_ledger.h"

#include <cerrno>

#include <unistd.h>
#include "adapters/log/log.h"

#include "core/split.h"

namespace sedna::app {

Status SampleLedger::Open(std::string train_path, std::string eval_path, int64_t train_committed,
                          int64_t eval_committed) {
  train_path_ = std::move(train_path);
  eval_path_ = std::move(eval_path);
  auto ts = dataset::Spool::Open(train_path_, train_committed);
  auto es = dataset::Spool::Open(eval_path_, eval_committed);
  if (!ts.ok() || !es.ok()) return Status::Error(ts.message() + es.message());
  train_spool_ = std::move(*ts);
  eval_spool_ = std::move(*es);
  return Status::Ok();
}

void SampleLedger::ResetSpools(int64_t train_committed, int64_t eval_committed) {
  auto ts = dataset::Spool::Open(train_path_, train_committed);
  auto es = dataset::Spool::Open(eval_path_, eval_committed);
  if (ts.ok()) train_spool_ = std::move(*ts);
  if (es.ok()) eval_spool_ = std::move(*es);
}

void SampleLedger::RemoveFiles() const {
  for (const std::string& path : {train_path_, eval_path_}) {
    ::unlink(path.c_str());
    dataset::Spool::Removed(path);
  }
}

std::vector<std::shared_ptr<dataset::Spool>> SampleLedger::TakeSpools() {
  std::vector<std::shared_ptr<dataset::Spool>> spools;
  if (train_spool_) spools.push_back(std::move(train_spool_));
  if (eval_spool_) spools.push_back(std::move(eval_spool_));
  train_spool_.reset();
  eval_spool_.reset();
  return spools;
}

std::vector<std::shared_ptr<dataset::Spool>> SampleLedger::SpoolsWithEntriesUnsynced() const {
  std::vector<std::shared_ptr<dataset::Spool>> out;
  for (const auto& spool : {train_spool_, eval_spool_}) {
    if (spool && !spool->entry_durable()) out.push_back(spool);
  }
  return out;
}

void SampleLedger::Defer(bool take_unterminated) {
  again_.again = true;
  again_.take_unterminated |= take_unterminated;
}

SampleLedger::Again SampleLedger::Landed() {
  in_flight_ = false;
  Again a = again_;
  again_ = {};
  return a;
}

IngestShare SampleLedger::Share(const DatasetSource& ds, const std::string& who, int64_t seen,
                                double train_prob,
                                std::function<void(const IngestDone&, bool)> apply) {
  dataset::IndexCursor from = cursor;
  if (from.path != ds.local_path) {
    // [P:B26]/B28: the Dataset now names another index (url changed, or deleted and re-created
    // elsewhere). It is a new source: read it from its start; the split's running total
    // (samples_seen) continues.
    if (!from.path.empty()) {
      spdlog::info("{}: dataset index changed from {} to {}; reading the new index from its start",
                   who, from.path, ds.local_path);
    }
    std::string header = from.header;
    from = dataset::IndexCursor{};
    from.path = ds.local_path;
    from.header = header;  // kept for csv files until the new header is read
  }
  // One ingest in flight per job: only the pass appends to its spools until it is back.
  in_flight_ = true;
  auto done = std::make_shared<IngestDone>();
  done->seen = seen;
  done->path = ds.local_path;
  IngestShare share;
  share.member.cursor = std::move(from);
  share.member.on_sample = [done, p = train_prob, train = train_spool_,
                            eval = eval_spool_](std::string_view line) -> Status {
    IngestDone& d = *done;
    ++d.seen;
    if (core::IsTrainSample(p, d.seen)) {
      ++d.train_added;
      return train->Append(line);
    }
    ++d.eval_added;
    return eval->Append(line);
  };
  share.add_syncs = [done, train = train_spool_, eval = eval_spool_](
                        const dataset::PassMember& m, dataset::Spool::SyncList& syncs) {
    if (!m.status.ok()) return;  // its bytes are dropped, not synced (finish)
    // Only a spool this pass appended to has bytes to sync: earlier passes synced theirs, and a
    // failed pass's bytes are dropped (ResetSpools) before the next one.
    IngestDone& d = *done;
    auto add = [&](dataset::Spool& spool, bool* added) {
      if (!d.prepare.ok()) return;
      d.prepare = spool.PrepareSync(syncs);
      *added = d.prepare.ok();
    };
    if (d.train_added > 0) add(*train, &d.train_synced);
    if (d.eval_added > 0) add(*eval, &d.eval_synced);
  };
  share.finish = [done, train = train_spool_, eval = eval_spool_](
                     dataset::PassMember& m, const std::vector<fs::SyncItem>& synced) {
    IngestDone& d = *done;
    d.cursor = m.cursor;
    d.status = m.status;
    d.result = m.result;
    // Each spool's syncs are read back even when the pass failed (its syncs' fds are released).
    Status a = d.train_synced ? train->Synced(synced) : Status::Ok();
    Status b = d.eval_synced ? eval->Synced(synced) : Status::Ok();
    if (d.status.ok()) d.status = !d.prepare.ok() ? d.prepare : !a.ok() ? a : b;
    d.train_end = train->size();
    d.eval_end = eval->size();
  };
  share.apply = [done, apply = std::move(apply)](const dataset::PassMember&,
                                                 bool take_unterminated) {
    apply(*done, take_unterminated);
  };
  return share;
}

void SampleLedger::ScheduleRetry(boost::asio::io_context& io, std::chrono::milliseconds after,
                                 std::function<void()> fire) {
  if (retry_pending_) return;
  retry_pending_ = true;
  if (!retry_timer_) retry_timer_ = std::make_unique<boost::asio::steady_timer>(io);
  retry_timer_->expires_after(after);
  retry_timer_->async_wait([fire = std::move(fire)](const boost::system::error_code& ec) {
    if (!ec) fire();
  });
}

void SampleLedger::CancelTimers() {
  if (retry_timer_) retry_timer_->cancel();
}

}  // namespace sedna::app
