#include "adapters/fs/sync_batch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sedna::fs {
namespace {

namespace sfs = std::filesystem;

class SyncBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sync-batch-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    for (int fd : pipe_) ::close(fd);
    if (!base_.empty()) sfs::remove_all(base_);
  }
  // A file with a few bytes written and not synced; closed by TearDown.
  int NewFile(const std::string& name) {
    const int fd =
        ::open((base_ + "/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, "abc\n", 4), 4);
    fds_.push_back(fd);
    return fd;
  }
  int Pipe() {
    EXPECT_EQ(::pipe2(pipe_, O_CLOEXEC), 0);
    return pipe_[0];
  }
  // An fd number that is not open, above any that open() hands out here (the lowest free).
  static int Closed() {
    int fd = 900;
    while (::fcntl(fd, F_GETFD) != -1) ++fd;
    return fd;
  }
  // Waits (poll, 10 s at most) for the syncer's completions and reaps them until none is in flight.
  static void ReapAll(Syncer& s) {
    while (s.in_flight() > 0) {
      pollfd p{s.event_fd(), POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, 10000), 1) << "no completion within 10 s";
      s.Reap();
    }
  }

  std::string base_;
  std::vector<int> fds_;
  int pipe_[2] = {-1, -1};
};

// Every item gets its own result, whether the kernel took it (a file), refused it at submission
// (an fd that is not open) or took it and failed it: a pipe has no fsync.
TEST_F(SyncBatchTest, SyncAllGivesEveryItemItsOwnResult) {
  std::vector<SyncItem> items{{NewFile("a"), false, -1},
                              {Closed(), false, -1},
                              {NewFile("b"), true, -1},
                              {Pipe(), false, -1},
                              {NewFile("c"), false, -1}};
  SyncAll(items);
  EXPECT_EQ(items[0].error, 0);
  EXPECT_EQ(items[1].error, EBADF);
  EXPECT_EQ(items[2].error, 0);
  EXPECT_EQ(items[3].error, EINVAL);
  EXPECT_EQ(items[4].error, 0);

  // One item is synced directly, with the same result.
  std::vector<SyncItem> one{{Closed(), true, -1}};
  SyncAll(one);
  EXPECT_EQ(one[0].error, EBADF);
  SyncAll(std::span<SyncItem>());  // nothing to do
}

// More items than one submission takes (64) are made in several.
TEST_F(SyncBatchTest, SyncAllMakesMoreItemsThanOneSubmission) {
  std::vector<SyncItem> items;
  for (int i = 0; i < 150; ++i) {
    items.push_back({i % 50 == 7 ? Closed() : NewFile("f" + std::to_string(i)), i % 2 == 0, -1});
  }
  SyncAll(items);
  for (int i = 0; i < 150; ++i) EXPECT_EQ(items[i].error, i % 50 == 7 ? EBADF : 0) << "item " << i;
}

TEST_F(SyncBatchTest, SyncerCallsDoneOnceWithEveryResult) {
  Syncer syncer;
  int calls = 0;
  std::vector<SyncItem> got;
  const bool first =
      syncer.Sync({{NewFile("a"), false, -1}, {Closed(), false, -1}, {NewFile("b"), true, -1}},
                  [&](std::vector<SyncItem>& items) {
                    ++calls;
                    got = items;
                  });
  if (syncer.async()) {
    EXPECT_TRUE(first);  // the first batch in flight
    ReapAll(syncer);
  } else {
    EXPECT_FALSE(first);  // synced by Sync itself
  }
  ASSERT_EQ(calls, 1);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].error, 0);
  EXPECT_EQ(got[1].error, EBADF);
  EXPECT_EQ(got[2].error, 0);
  EXPECT_EQ(syncer.in_flight(), 0u);
  syncer.Reap();  // nothing left: no call
  EXPECT_EQ(calls, 1);

  // A batch with no items is done at once, on this thread.
  bool empty_done = false;
  EXPECT_FALSE(syncer.Sync({}, [&](std::vector<SyncItem>& items) { empty_done = items.empty(); }));
  EXPECT_TRUE(empty_done);
}

// A batch over what may be in flight is synced by its caller before Sync returns.
TEST_F(SyncBatchTest, ABatchOverTheLimitIsSyncedByItsCaller) {
  Syncer syncer(2);
  bool done = false;
  EXPECT_FALSE(
      syncer.Sync({{NewFile("a"), false, -1}, {NewFile("b"), false, -1}, {Closed(), false, -1}},
                  [&](std::vector<SyncItem>& items) {
                    done = true;
                    EXPECT_EQ(items[0].error, 0);
                    EXPECT_EQ(items[2].error, EBADF);
                  }));
  EXPECT_TRUE(done);
  EXPECT_EQ(syncer.in_flight(), 0u);
}

// Destroyed with a batch in flight: it waits for the kernel and drops the batch uncalled.
TEST_F(SyncBatchTest, DestroyingTheSyncerDropsBatchesInFlight) {
  int calls = 0;
  {
    Syncer syncer;
    if (!syncer.async()) GTEST_SKIP() << "no AIO here: every batch is synced by its caller";
    syncer.Sync({{NewFile("a"), false, -1}}, [&](std::vector<SyncItem>&) { ++calls; });
  }
  EXPECT_EQ(calls, 0);
}

// Batches submitted from several threads while another reaps: each is done exactly once with its
// own items (the ThreadSanitizer build runs this one).
TEST_F(SyncBatchTest, BatchesFromSeveralThreadsAreEachDoneOnce) {
  Syncer syncer;
  constexpr int kThreads = 4, kBatches = 25;
  std::vector<int> files;
  for (int i = 0; i < kThreads; ++i) files.push_back(NewFile("t" + std::to_string(i)));
  std::atomic<int> done{0};
  std::atomic<bool> wrong{false};
  std::atomic<bool> submitting{true};
  std::thread reaper([&] {
    while (submitting.load() || syncer.in_flight() > 0) {
      if (syncer.async()) {
        pollfd p{syncer.event_fd(), POLLIN, 0};
        ::poll(&p, 1, 20);
        syncer.Reap();
      } else {
        std::this_thread::yield();
      }
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<SyncItem> items{{files[t], b % 2 == 0, -1}, {Closed(), false, -1}};
        syncer.Sync(std::move(items), [&, t](std::vector<SyncItem>& got) {
          if (got.size() != 2 || got[0].fd != files[t] || got[0].error != 0 ||
              got[1].error != EBADF) {
            wrong = true;
          }
          ++done;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  submitting = false;
  reaper.join();
  EXPECT_EQ(done.load(), kThreads * kBatches);
  EXPECT_FALSE(wrong.load());
  EXPECT_EQ(syncer.in_flight(), 0u);
}

}  // namespace
}  // namespace sedna::fs
