#include "adapters/store/wal_checkpointer.h"

#include <sqlite3.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

namespace sedna::store {

struct WalCheckpointer::Impl {
  sqlite3* writer;
  std::string path;
  std::function<void(const CheckpointReport&)> on_checkpoint;
  std::mutex mu;
  std::condition_variable cv;
  bool wanted = false;      // guarded by mu
  bool stopping = false;    // guarded by mu
  sqlite3* conn = nullptr;  // the thread's own connection, open during a checkpoint
  std::thread thread;

  // Runs on the writer's thread after each commit, with the WAL's frame count.
  static int OnCommit(void* arg, sqlite3* db, const char*, int frames) {
    if (frames >= kMaxFrames) {
      // Commits outran the thread: a background checkpoint copies only what was committed when
      // it began, and the WAL starts over only once every frame was copied before the next
      // write. Copying the rest here (little, the thread did most) lets the next commit start
      // it over. SQLITE_BUSY (the thread is checkpointing) leaves it to a later commit.
      sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      return SQLITE_OK;
    }
    if (frames >= kFrames) {
      auto* im = static_cast<Impl*>(arg);
      std::lock_guard lock(im->mu);
      im->wanted = true;
      im->cv.notify_one();
    }
    return SQLITE_OK;
  }

  CheckpointReport Checkpoint() {
    CheckpointReport r;
    if (conn == nullptr) {
      // Its own connection, used by this thread only (multi-thread mode: no connection mutex).
      int rc = sqlite3_open_v2(path.c_str(), &conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                               nullptr);
      // A connection learns that the file is in WAL mode at its first read.
      if (rc == SQLITE_OK)
        rc = sqlite3_exec(conn, "PRAGMA schema_version", nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) {
        r.status = Status::Error("database " + path + ": cannot open for checkpoints: " +
                                 (conn ? sqlite3_errmsg(conn) : sqlite3_errstr(rc)));
        sqlite3_close_v2(conn);
        conn = nullptr;
        return r;
      }
    }
    int frames = -1, backfilled = -1;
    const int rc =
        sqlite3_wal_checkpoint_v2(conn, nullptr, SQLITE_CHECKPOINT_PASSIVE, &frames, &backfilled);
    if (rc == SQLITE_BUSY) {  // another connection was checkpointing; a later commit retries
      r.busy = true;
      return r;
    }
    if (rc != SQLITE_OK || frames < 0) {
      r.status = Status::Error("database " + path + ": checkpoint failed: " +
                               (rc == SQLITE_OK ? "not in WAL mode" : sqlite3_errmsg(conn)));
      sqlite3_close_v2(conn);  // opened again for the next one
      conn = nullptr;
      return r;
    }
    r.wal_frames = frames;
    r.backfilled = backfilled;
    return r;
  }

  void Run() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [this] { return wanted || stopping; });
      if (stopping) break;
      wanted = false;
      lock.unlock();
      const CheckpointReport r = Checkpoint();
      // Closed until the next one (every ~4 MB of WAL): an idle LC holds no second connection.
      sqlite3_close_v2(conn);
      conn = nullptr;
      if (on_checkpoint) on_checkpoint(r);
      lock.lock();
    }
    lock.unlock();
    sqlite3_close_v2(conn);
    conn = nullptr;
  }
};

WalCheckpointer::WalCheckpointer(sqlite3* writer, std::string path,
                                 std::function<void(const CheckpointReport&)> on_checkpoint)
    : impl_(new Impl{writer, std::move(path), std::move(on_checkpoint)}) {
  impl_->thread = std::thread([im = impl_.get()] { im->Run(); });
  // Replaces the automatic checkpoints (sqlite3_wal_autocheckpoint is a wal hook too).
  sqlite3_wal_hook(writer, &Impl::OnCommit, impl_.get());
}

WalCheckpointer::~WalCheckpointer() {
  sqlite3_wal_hook(impl_->writer, nullptr, nullptr);
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->cv.notify_one();
  }
  impl_->thread.join();
}

}  // namespace sedna::store
