// What every part of the controller shares, owned by the composition root (controller.cc): the
// loop, the configuration, the clock, the store, the pool for blocking work, the /metrics
// counters, and whether the controller is stopping. Every part reads the time through `clock`
// only (the store writes its timestamps from it too); asio timers keep counting on the system
// steady clock, armed with durations (expires_after) computed from `clock`. Parts hold a reference;
// each part's own state is its own. Everything here is used on the loop thread only, except `pool`,
// which runs blocking work whose result comes back to the loop with asio::post(io, ...),
// `spares`, which that work takes from and fills, and `syncs`, to which it hands the syncs of the
// files it wrote (both thread-safe).
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <functional>
#include <memory>

#include "adapters/fs/spare_files.h"
#include "adapters/fs/sync_batch.h"
#include "adapters/s3/s3_client.h"
#include "adapters/store/store.h"
#include "app/cluster/config.h"
#include "app/cluster/observation/status_view.h"
#include "core/clock.h"

namespace sedna::app {

// lc_state scopes.
constexpr const char* kScopeIl = "il";
constexpr const char* kScopeLl = "ll";
constexpr const char* kScopeDataset = "dataset";
constexpr const char* kScopeStatus = "status";
// ("intake", "applied"): the sequence number of the last intake-journal entry committed.
constexpr const char* kScopeIntake = "intake";
// At most this many index bytes are read per pass (a dataset count or a job's ingest); more is
// read in a later posted pass.
constexpr int64_t kIngestSliceBytes = 4 << 20;
// At most this many worker reports are committed in one transaction (report_intake.h).
constexpr size_t kReportBatch = 64;

// Returns the heap pages a burst of work freed (start-up, GM frames, steps) to the OS
// (malloc_trim) a few seconds after the burst began. Armed by events only, so an idle LC never
// wakes for it. From its first Schedule, the calling (loop) thread keeps up to a report batch of
// parsed documents for reuse (json::KeepParsedDocuments: a batch's bodies are parsed one by one
// and freed together); the trim frees them with the pages, Cancel for good. Caches that others
// own (the database's pages) are released first, through the hook SetRelease gives.
class HeapTrim {
 public:
  explicit HeapTrim(boost::asio::io_context& io) : io_(io) {}
  void Schedule();
  void Cancel();
  // Called on the loop at each trim, before the heap is trimmed (the store's ReleaseMemory).
  void SetRelease(std::function<void()> release) { release_ = std::move(release); }

 private:
  boost::asio::io_context& io_;
  std::function<void()> release_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
  bool armed_ = false;
  bool cancelled_ = false;
  bool keeping_ = false;  // parsed documents are kept on the loop thread
};

// Syncs of files the pool wrote, made together by the kernel (fs::Syncer), their completions
// handed back on the loop. The loop waits on the syncer's eventfd only while syncs are in flight:
// an idle loop, or a test's io.run(), has nothing of it to wait for.
//
// Owns: the syncer and the loop's wait. Called by: pool work (Sync, any thread); the controller's
// Stop (on the loop). Calls: each batch's `done`, on the loop (or on the caller's thread when the
// kernel took none of it: fs::Syncer::Sync).
class FileSyncs {
 public:
  explicit FileSyncs(boost::asio::io_context& io);
  ~FileSyncs();
  FileSyncs(const FileSyncs&) = delete;
  FileSyncs& operator=(const FileSyncs&) = delete;

  void Sync(std::vector<fs::SyncItem> items, fs::Syncer::Done done);
  // Whether the kernel makes the syncs (AIO) and `done` comes back on the loop; false: every Sync
  // syncs on its caller's thread and calls `done` before it returns.
  bool async() const { return wait_ != nullptr; }
  // No `done` is called on the loop from now on (the controller stops).
  void Stop();

 private:
  struct Wait;
  void Arm();  // on the loop

  boost::asio::io_context& io_;
  fs::Syncer syncer_;
  std::unique_ptr<Wait> wait_;  // null when the syncer syncs on its callers' threads
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for handlers posted from the pool
  bool armed_ = false;                                          // loop only
  bool stopped_ = false;                                        // loop only
};

// Why the LC cannot do its work now ("" when it can): /readyz answers 503 with it. Set by the
// parts that see the failure, cleared when the same thing works again.
struct Health {
  std::string commit_error;   // the last database commit failed (read-only or failing volume)
  std::string journal_error;  // the last intake-journal write failed
  std::string Reason() const {
    if (!commit_error.empty()) return "database commits fail: " + commit_error;
    if (!journal_error.empty()) return "the intake journal cannot be written: " + journal_error;
    return "";
  }
};

struct Context {
  // `clock` must outlive the context.
  Context(boost::asio::io_context& io_, Config c, const core::Clock& clock_)
      : io(io_), cfg(std::move(c)), clock(clock_), trim(io_) {}

  boost::asio::io_context& io;
  const Config cfg;
  const core::Clock& clock;
  std::unique_ptr<store::Store> store;  // opened by Controller::Start, before any part runs
  // Spare files beneath the jobs' roots (thread-safe: filled and taken on the pool). Before `pool`,
  // so that it outlives the pool's threads.
  std::unique_ptr<fs::SpareFiles> spares = std::make_unique<fs::SpareFiles>();
  // The syncs of the files the pool writes (round files), made together; thread-safe. Before
  // `pool`, likewise.
  std::unique_ptr<FileSyncs> syncs = std::make_unique<FileSyncs>(io);
  boost::asio::thread_pool pool{2};
  Metrics metrics;
  Health health;
  HeapTrim trim;
  bool stopped = false;
  // Incremented on each GM (re)connection: what a job object received since says is current.
  uint64_t gm_epoch = 0;

  s3::ClientOptions S3Options() const {
    s3::ClientOptions o;
    o.timeout = std::chrono::milliseconds(cfg.s3_timeout_ms);
    o.retries = cfg.s3_retries;
    return o;
  }
};

// Parses an object's sedna.io/credential annotation (§P2.5); nullopt when there is none. The
// error names the annotation.
Result<std::optional<s3::Credentials>> CredentialsOf(const std::optional<std::string>& json);
// A resource key as a file name (spool files, S3 index mirrors).
std::string SanitizeKey(const std::string& key);

}  // namespace sedna::app
