// A job's sample ledger, the same for both job kinds: where the job stands in its Dataset's index
// and where its new samples wait. The counts of those samples are the job's core state (the
// kind's runner's); the ledger keeps the bytes, the cursor and the ingest bookkeeping.
//
// Owns: the read cursor over the dataset index (persisted in the job's record, with the core
//   state); the train and eval spool files (shared with an ingest on the pool, which alone
//   appends while one is in flight, until its result is applied or the spools are reset to what
//   was committed); the ingest bookkeeping: one in flight, another asked for meanwhile (and
//   whether it takes an unterminated last line), and the retry timer after a failed one.
// Calls: dataset::Spool (open, append, flush); core::IsTrainSample (the split by running totals).
// Called by: the job runner: job_ingest.cc (the pass share, its result, the retry), job_steps.cc
//   (the spool files a sample file is cut from, the csv header), start-up and delete.
// Emits: nothing; an ingest's result reaches the runner through its share's `apply`.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/dataset/spool.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "core/il_job.h"
#include "core/status.h"

namespace sedna::app {

class SampleLedger {
 public:
  // What an ingest on the pool read and appended, for the step back on the loop.
  struct IngestDone {
    std::string path;
    dataset::IndexCursor cursor;  // after the read
    int64_t seen = 0;             // the split's running total after it
    int64_t train_added = 0, eval_added = 0;
    int64_t train_end = 0, eval_end = 0;  // spool sizes after the appends
    Status status;
    dataset::ReadResult result;
    // Whether the pass's syncs hold this ingest's spools' (each spool knows where), and a spool
    // write that failed before its sync.
    bool train_synced = false, eval_synced = false;
    Status prepare;
  };
  // Another ingest asked for while one was in flight.
  struct Again {
    bool again = false;
    bool take_unterminated = false;
  };

  // Opens the spools at `train_path` and `eval_path`, cut back to the committed sizes.
  Status Open(std::string train_path, std::string eval_path, int64_t train_committed,
              int64_t eval_committed);
  // Drops spool bytes appended but not committed (a failed ingest, or a step that did not commit).
  void ResetSpools(int64_t train_committed, int64_t eval_committed);
  // Removes the spool files (the job is deleted).
  void RemoveFiles() const;
  // The spools, for the caller to let go of where their last close may wait for the disk: a
  // removed file's blocks are freed at its last close, and on a filesystem mounted with `discard`
  // that close waits for the device (the job is deleted; the ledger has no spools after this).
  std::vector<std::shared_ptr<dataset::Spool>> TakeSpools();
  // The spools whose directory entry is not known durable (a new job's): the caller may make them
  // durable ahead of the first pass (Spool::OpenDir, EntrySynced), which otherwise does.
  std::vector<std::shared_ptr<dataset::Spool>> SpoolsWithEntriesUnsynced() const;
  const std::string& spool_path(core::il::SpoolKind k) const {
    return k == core::il::SpoolKind::kTrain ? train_path_ : eval_path_;
  }

  // One ingest in flight at a time: while one is, another asked for is remembered (Defer) and
  // handed back when it lands.
  bool in_flight() const { return in_flight_; }
  void Defer(bool take_unterminated);
  // The in-flight ingest is back: clears it, returns (and clears) what was asked for meanwhile.
  Again Landed();

  // The share of the Dataset pass `ds` (dataset_registry.h): samples from the cursor on (or from
  // the start of a new index: `who` logs the change), split by running totals from `seen` with
  // `train_prob`, appended to the spools and flushed on the pool; `apply` gets the result on the
  // loop. Marks an ingest in flight.
  IngestShare Share(const DatasetSource& ds, const std::string& who, int64_t seen,
                    double train_prob,
                    std::function<void(const IngestDone& d, bool take_unterminated)> apply);

  // The retry after a failed ingest: at most one pending; `fire` runs when it is due (not after
  // CancelTimers, nor with an error).
  void ScheduleRetry(boost::asio::io_context& io, std::chrono::milliseconds after,
                     std::function<void()> fire);
  // The pending retry is being handed out: another may be scheduled.
  void RetryFired() { retry_pending_ = false; }
  void CancelTimers();

  dataset::IndexCursor cursor;

 private:
  std::string train_path_, eval_path_;
  // Shared with an ingest running on the pool (which alone appends while `in_flight_`).
  std::shared_ptr<dataset::Spool> train_spool_;
  std::shared_ptr<dataset::Spool> eval_spool_;
  bool in_flight_ = false;
  Again again_;
  std::unique_ptr<boost::asio::steady_timer> retry_timer_;
  bool retry_pending_ = false;
};

}  // namespace sedna::app
