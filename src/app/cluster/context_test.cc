#include "app/cluster/context.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace sedna::app {
namespace {

class FileSyncsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/file-syncs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    for (int i = 0; i < 3; ++i) {
      const int fd = ::open((base_ + "/f" + std::to_string(i)).c_str(),
                            O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::write(fd, "x\n", 2), 2);
      fds_.push_back(fd);
    }
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    std::filesystem::remove_all(base_);
  }
  std::vector<fs::SyncItem> Items() const {
    std::vector<fs::SyncItem> items;
    for (int fd : fds_) items.push_back({fd, false, -1});
    return items;
  }
  std::string base_;
  std::vector<int> fds_;
};

// A batch handed over from another thread (as the pool does) is done on the loop, and the loop
// waits for it only while it is in flight: io.run() returns once every batch is done, and at once
// when none was started.
TEST_F(FileSyncsTest, BatchesFromThePoolAreDoneOnTheLoopWhichThenHasNothingToWaitFor) {
  boost::asio::io_context io;
  FileSyncs syncs(io);
  io.run();  // nothing in flight: nothing to wait for
  io.restart();
  int done = 0;
  bool all_synced = true;
  std::thread::id done_on;
  std::thread pool([&] {
    for (int b = 0; b < 3; ++b) {
      syncs.Sync(Items(), [&](std::vector<fs::SyncItem>& items) {
        ++done;
        done_on = std::this_thread::get_id();
        for (const fs::SyncItem& item : items) all_synced &= item.error == 0;
      });
    }
  });
  pool.join();  // every batch started (or, without AIO, done on that thread)
  io.run();     // returns when the last batch is done
  EXPECT_EQ(done, 3);
  EXPECT_TRUE(all_synced);
  fs::Syncer probe;
  if (probe.async()) EXPECT_EQ(done_on, std::this_thread::get_id());  // the loop's
}

// After Stop the loop calls no `done` (the controller is stopping; its parts are going away).
TEST_F(FileSyncsTest, AfterStopNoBatchIsDoneOnTheLoop) {
  fs::Syncer probe;
  if (!probe.async()) GTEST_SKIP() << "no AIO here: every batch is done on its caller's thread";
  boost::asio::io_context io;
  int done = 0;
  {
    FileSyncs syncs(io);
    syncs.Stop();
    std::thread pool([&] { syncs.Sync(Items(), [&](std::vector<fs::SyncItem>&) { ++done; }); });
    pool.join();
    io.run();  // the posted wait finds the syncs stopped and waits for nothing
  }
  EXPECT_EQ(done, 0);
}

// A trim (2 s after the burst began, on the loop) releases what others cache, through the hook,
// before it trims the heap; a cancelled trim releases nothing.
TEST(HeapTrimTest, ATrimCallsTheReleaseHookOnTheLoop) {
  boost::asio::io_context io;
  HeapTrim trim(io);
  int released = 0;
  std::thread::id released_on;
  trim.SetRelease([&] {
    ++released;
    released_on = std::this_thread::get_id();
  });
  trim.Schedule();
  trim.Schedule();  // already armed: one trim
  io.run();         // returns once the trim has run: nothing else is pending
  EXPECT_EQ(released, 1);
  EXPECT_EQ(released_on, std::this_thread::get_id());
  trim.Cancel();
}

TEST(HeapTrimTest, ACancelledTrimReleasesNothing) {
  boost::asio::io_context io;
  HeapTrim trim(io);
  int released = 0;
  trim.SetRelease([&] { ++released; });
  trim.Schedule();
  trim.Cancel();
  io.run();
  EXPECT_EQ(released, 0);
}

}  // namespace
}  // namespace sedna::app
