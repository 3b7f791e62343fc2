// Early reports: worker reports for an IL/LL job this LC does not know yet ([D:I23.5]). A
// restarted LC, or a node the GM sends the job only at its stage's Running (G2, §H1.4), can get
// the worker's report before the GM's send of the job; such a report is kept, durably, and
// applied in arrival order once the job's object arrives (from the GM, or standalone's local GM).
// The worker is answered at once: 200 when it is kept, 503 when a bound is reached (lib/sedna
// retries three times, 2 s apart; docs/durability.md, "Reports before their job").
//
// Owns: the kept reports (in memory and in their rows), the bounds (EarlyLimits), the expiry
//   timer, and the owners whose release failed and is retried.
// Calls: its rows (EarlyReportRows: the lc_state scope "early" in production, in memory in unit
//   tests), its clock, and Apply (given by the composition root: the report intake's ordering
//   contract and the job runner's PrepareReport / CommitReports, early_release.cc).
// Called by: the worker endpoint (holds, Hold), the job runner's arrival hook (Release), the
//   composition root (Open and ReleaseKnown at start-up, Stop).
// Emits: log lines only: kept (info), refused over a bound (warn), applied (info), expired (warn,
//   naming the job, the worker, the report and why).
//
// Contract:
//   * Hold returns kKept only once the report's row is committed (kill -9 safe, as a commit under
//     synchronous=NORMAL): it then survives a restart and is applied when the job arrives after it.
//   * Per owner (job key) at most per_owner reports, in total at most total reports and
//     total_bytes bytes (worker name, what and body). A report over a bound is refused (kOwnerFull,
//     kTotalFull), never an older one evicted: a kept report was answered 200.
//   * A report kept longer than ttl_ms (by the wall clock, so also across a restart) is dropped at
//     the next expiry, with a warning naming its job, worker and report.
//   * Release(owner) passes the owner's reports, oldest first, to Apply with an erase for their
//     rows, which Apply commits in the transaction that steps the job (kApplied): a report is
//     applied once or not at all, also across kill -9. kLater: Apply queued the release (it calls
//     Release again); kFailed: kept, tried again within a second.
//   * While an owner has reports kept, the worker endpoint keeps that owner's new reports here too
//     (holds), so they are applied after them even when the job has arrived meanwhile.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/store/store.h"
#include "core/status.h"

namespace sedna::app {

// lc_state scope of the kept reports: key the zero-padded sequence number, value the row.
constexpr const char* kScopeEarly = "early";

struct EarlyLimits {
  size_t per_owner = 16;           // --early-reports-per-job
  size_t total = 256;              // --early-reports-max
  size_t total_bytes = 16 << 20;   // --early-reports-max-bytes
  int64_t ttl_ms = 5 * 60 * 1000;  // --early-report-ttl (seconds on the command line)
};

struct EarlyReport {
  uint64_t seq = 0;         // arrival order, only grows (also across restarts)
  std::string owner;        // the job's key, core::ResourceKey(ns, kind, name)
  std::string worker;       // the worker name from the request path
  std::string what;         // "eval completed", for log lines
  std::string body;         // the request body, as received
  int64_t received_ms = 0;  // wall clock, ms since the epoch
  // The uid of the job this LC deleted under `owner` before the report came ("" when it saw
  // none): the report may be that job's, late. It is applied only to a job of that uid (the GM
  // re-sending the same object, as a G2 GM does between stages); a job of another uid is a new
  // one made under the same name, and the report is dropped (never trains it from a stale
  // output).
  std::string after_uid;

  size_t bytes() const { return worker.size() + what.size() + body.size() + after_uid.size(); }
  friend bool operator==(const EarlyReport&, const EarlyReport&) = default;
};

// Where kept reports live across restarts.
class EarlyReportRows {
 public:
  virtual ~EarlyReportRows() = default;
  // Every row, oldest first. A row that cannot be read is skipped with its key in `skipped`.
  virtual Result<std::vector<EarlyReport>> Load(std::vector<std::string>* skipped) = 0;
  // Commits one row.
  virtual Status Put(const EarlyReport& r) = 0;
  // Removes rows: in `tx` (the caller commits it), or in a commit of their own when tx is null.
  virtual Status Erase(const std::vector<uint64_t>& seqs, store::Store::Tx* tx) = 0;
};

// The rows in the store's lc_state scope "early".
std::unique_ptr<EarlyReportRows> StoreEarlyRows(store::Store& store);

class EarlyReports {
 public:
  enum class Held { kKept, kOwnerFull, kTotalFull, kFailed };
  enum class Applied { kApplied, kLater, kFailed };
  // Erases the released reports' rows inside the transaction that applies them.
  using Erase = std::function<Status(store::Store::Tx*)>;
  using Apply = std::function<Applied(const std::vector<EarlyReport>& reports, const Erase& erase)>;
  using Clock = std::function<int64_t()>;  // wall clock, ms since the epoch

  EarlyReports(EarlyLimits limits, Clock now) : limits_(limits), now_(std::move(now)) {}
  EarlyReports(const EarlyReports&) = delete;
  EarlyReports& operator=(const EarlyReports&) = delete;

  void set_apply(Apply apply) { apply_ = std::move(apply); }
  // Arms the expiry (and retry) timer on `io` from now on; without it, Expire is called by hand.
  void set_timer(boost::asio::io_context& io);

  // Reads the rows a previous run kept. Those past their expiry go at the first Expire.
  Status Open(std::unique_ptr<EarlyReportRows> rows);
  // The Releases of start-up: for each owner kept for whose job `known` gives the uid, oldest
  // first.
  void ReleaseKnown(
      const std::function<std::optional<std::string>(const std::string& owner)>& known);

  struct HoldResult {
    Held held = Held::kFailed;
    std::string why;  // for the worker's answer and the log line, unless kKept
  };
  HoldResult Hold(const std::string& owner, std::string_view worker, std::string_view what,
                  std::string_view body, std::string_view after_uid = {});
  bool holds(const std::string& owner) const { return by_owner_.count(owner) != 0; }
  // The owner's job (of `uid`) is known now: its reports go through Apply (contract above), but
  // those kept after a job of another uid was deleted, which are dropped with a warning.
  void Release(const std::string& owner, const std::string& uid);
  // Again, with the uid the owner's job arrived with (a release queued or retried).
  void Release(const std::string& owner);
  // Drops (erases and logs) the reports kept longer than ttl_ms; returns how many. Then retries
  // the releases that failed.
  size_t Expire();

  size_t size() const { return count_; }
  size_t bytes() const { return bytes_; }
  size_t kept_for(const std::string& owner) const;
  const EarlyLimits& limits() const { return limits_; }
  // When the oldest kept report expires (wall ms); nullopt when none is kept.
  std::optional<int64_t> next_expiry_ms() const;

  void Stop();

 private:
  void Add(EarlyReport r);
  void Remove(const std::string& owner, const std::set<uint64_t>& seqs);
  void Arm();

  EarlyLimits limits_;
  Clock now_;
  Apply apply_;
  std::unique_ptr<EarlyReportRows> rows_;
  // Per owner, oldest first.
  std::map<std::string, std::vector<EarlyReport>> by_owner_;
  size_t count_ = 0, bytes_ = 0;
  uint64_t next_seq_ = 1;
  std::set<std::string> retry_;                     // owners whose Apply failed
  std::map<std::string, std::string> arrived_uid_;  // the uid each released owner arrived with
  std::unique_ptr<boost::asio::steady_timer> timer_;
  bool stopped_ = false;
};

const char* HeldName(EarlyReports::Held h);

}  // namespace sedna::app
