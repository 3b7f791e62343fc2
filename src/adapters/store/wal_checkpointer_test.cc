#include "adapters/store/wal_checkpointer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/store/store.h"

namespace sedna::store {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "wal_checkpointer_test.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The reports of a checkpointer, with the thread each came from. `Hold()` makes the next report
// wait in the callback (so the checkpointer's thread runs no further checkpoint) until Release().
class Reports {
 public:
  std::function<void(const CheckpointReport&)> Callback() {
    return [this](const CheckpointReport& r) {
      std::unique_lock lock(mu_);
      got_.push_back({r, std::this_thread::get_id()});
      cv_.notify_all();
      cv_.wait(lock, [this] { return !held_; });
    };
  }
  // Waits (at most 60 s) until there are `n` reports.
  bool AwaitCount(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return got_.size() >= n; });
  }
  size_t Count() {
    std::lock_guard lock(mu_);
    return got_.size();
  }
  // The index of the first report at or after `from` that ran (not `busy`: a checkpoint that met
  // another one, here the writer's own past kMaxFrames when the thread is slow, as under
  // qemu-user), or -1.
  int FirstRun(size_t from) {
    std::lock_guard lock(mu_);
    return FirstRunLocked(from);
  }
  // Waits (at most 60 s) for such a report; its index, or -1.
  int AwaitRun(size_t from) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [&] { return FirstRunLocked(from) >= 0; });
    return FirstRunLocked(from);
  }
  std::pair<CheckpointReport, std::thread::id> At(size_t i) {
    std::lock_guard lock(mu_);
    return got_.at(i);
  }
  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    held_ = false;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<CheckpointReport, std::thread::id>> got_;
  bool held_ = false;

  int FirstRunLocked(size_t from) const {
    for (size_t i = from; i < got_.size(); ++i)
      if (!got_[i].first.busy) return static_cast<int>(i);
    return -1;
  }
};

class WalDb {
 public:
  explicit WalDb(const fs::path& p) : path_(p.string()) {
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) std::abort();
    // As the Store's connection (StoreOptions::busy_timeout): a commit that meets a lock of the
    // checkpointer's connection waits for it instead of failing (seen once under qemu-user, where
    // such moments are long: "INSERT ...: database is locked").
    sqlite3_busy_timeout(db_, 5000);
    // As the Store: a WAL that starts over is cut back to 4 MiB (1000 frames).
    Exec(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = "
        "4194304; CREATE TABLE t (b BLOB)");
  }
  ~WalDb() { sqlite3_close(db_); }
  sqlite3* db() { return db_; }
  void Exec(const std::string& sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
  }
  // One commit of about one page.
  void Commit() { Exec("INSERT INTO t VALUES (randomblob(3000))"); }
  // Frames in the WAL file, from its size (32-byte header, then 24 + 4096 bytes per frame).
  int64_t WalFrames() {
    std::error_code ec;
    const auto size = fs::file_size(path_ + "-wal", ec);
    return ec ? 0 : static_cast<int64_t>((size - 32) / (24 + 4096));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

TEST(WalCheckpointerTest, CommitsPastTheThresholdAreCheckpointedOnTheCheckpointersThread) {
  TempDir t;
  WalDb w(t.path() / "db");
  Reports reports;
  WalCheckpointer cp(w.db(), (t.path() / "db").string(), reports.Callback());
  // Commits until a checkpoint ran; a checkpointer that never runs one fails the test here. A
  // report before it can only be `busy` (ok, nothing done).
  for (int i = 0; i < 20000 && reports.FirstRun(0) < 0; ++i) w.Commit();
  const int first = reports.AwaitRun(0);
  ASSERT_GE(first, 0) << reports.Count() << " reports, all busy";
  for (int i = 0; i < first; ++i) EXPECT_TRUE(reports.At(i).first.status.ok());
  auto [r, thread] = reports.At(first);
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(thread, std::this_thread::get_id());
  // After a busy one the WAL may have started over since the thread was woken.
  EXPECT_GE(r.wal_frames, first == 0 ? WalCheckpointer::kFrames : 1);
  EXPECT_GT(r.backfilled, 0);
  EXPECT_LE(r.backfilled, r.wal_frames);
}

// With its thread held, nothing checkpoints: the writer's own automatic checkpoint (which would
// keep the WAL near 1000 frames) is off. Released, the thread catches up.
TEST(WalCheckpointerTest, TheWriterNeverCheckpointsItself) {
  TempDir t;
  WalDb w(t.path() / "db");
  Reports reports;
  reports.Hold();
  WalCheckpointer cp(w.db(), (t.path() / "db").string(), reports.Callback());
  for (int i = 0; i < 20000 && reports.Count() == 0; ++i) w.Commit();
  ASSERT_TRUE(reports.AwaitCount(1));  // the first checkpoint ran; its thread now waits
  // The WAL now grows past 2500 frames (a commit writes a few): the writer's own automatic
  // checkpoint would start it over at 1000 and cut it back to 4 MiB. Below kMaxFrames.
  int commits = 0;
  while (w.WalFrames() < 2500 && commits < 2000) {
    w.Commit();
    ++commits;
  }
  EXPECT_GE(w.WalFrames(), 2500) << "after " << commits << " commits";
  EXPECT_LT(w.WalFrames(), WalCheckpointer::kMaxFrames);
  EXPECT_EQ(reports.Count(), 1u);
  reports.Release();
  // Released, the thread may run the checkpoint the held-back commits asked for by itself; else a
  // commit wakes it (the WAL is past kFrames), once more after each `busy` report. The count is
  // read before the search, so a report that arrives in between is found or awaited, never missed.
  int second = -1;
  for (int i = 0; i < 100; ++i) {
    const size_t seen = reports.Count();
    second = reports.FirstRun(1);
    if (second >= 0) break;
    w.Commit();
    ASSERT_TRUE(reports.AwaitCount(seen + 1));
  }
  ASSERT_GE(second, 1);
  auto [r, thread] = reports.At(second);
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_GE(r.wal_frames, 2500);
  EXPECT_GE(r.backfilled, 2500);  // the held-back frames are copied now
}

// Commits that keep outrunning the thread (here: it is held) would grow the WAL without end; past
// kMaxFrames the writer copies the rest itself, and the WAL starts over (cut back to 4 MiB).
TEST(WalCheckpointerTest, TheWalIsBoundedWhenCommitsOutrunTheThread) {
  TempDir t;
  WalDb w(t.path() / "db");
  Reports reports;
  reports.Hold();
  WalCheckpointer cp(w.db(), (t.path() / "db").string(), reports.Callback());
  int64_t most = 0;
  for (int i = 0; i < WalCheckpointer::kMaxFrames + 3000; ++i) {
    w.Commit();
    most = std::max(most, w.WalFrames());
  }
  EXPECT_GE(most, WalCheckpointer::kMaxFrames - 100);  // the held thread copied nothing since
  EXPECT_LT(w.WalFrames(), WalCheckpointer::kMaxFrames / 2);  // started over
  reports.Release();
}

// Through the Store: the checkpointer holds no connection between checkpoints and its thread is
// joined before the Store's own connection closes, which then checkpoints the rest and removes the
// WAL file.
TEST(WalCheckpointerTest, ClosingTheStoreLeavesNoWal) {
  TempDir t;
  const fs::path db = t.path() / "lc.db";
  Reports reports;
  StoreOptions o;
  o.on_checkpoint = reports.Callback();
  {
    auto st = Store::Open(db.string(), o);
    ASSERT_TRUE(st.ok()) << st.message();
    const std::string frame(3000, 'f');
    for (int i = 0; i < 20000 && reports.Count() == 0; ++i) {
      ASSERT_TRUE(
          (*st)->Transact([&](Store::Tx& tx) { return tx.OutboxAppend(frame).status(); }).ok());
    }
    ASSERT_TRUE(reports.AwaitCount(1));
    EXPECT_TRUE(reports.At(0).first.status.ok()) << reports.At(0).first.status.message();
    EXPECT_TRUE(fs::exists(db.string() + "-wal"));
  }
  EXPECT_FALSE(fs::exists(db.string() + "-wal"));
}

}  // namespace
}  // namespace sedna::store
