#include "adapters/dataset/index_watcher.h"

#include <utility>  // before any Asio header (Boost 1.74 with g++ 12)

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

namespace sedna::dataset {
namespace {

namespace stdfs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

class IndexWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "index_watcher_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    index_ = dir_ + "/index.txt";
    sentinel_ = dir_ + "/sentinel";
    Touch(index_);
    Touch(sentinel_);
    watcher_ = std::make_unique<IndexWatcher>(
        io_, [this](const std::string& path) { ++calls_[path]; }, 20ms);
  }
  void TearDown() override {
    watcher_.reset();
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }

  static void Touch(const std::string& path, const std::string& data = "") {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << data;
  }

  // Runs the io_context until pred() holds; false after `cap`.
  bool RunUntil(const std::function<bool()>& pred, std::chrono::milliseconds cap = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + cap;
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io_.restart();
      io_.run_one_for(50ms);
    }
    return true;
  }
  bool Called(const std::string& path) {
    return RunUntil([&] { return calls_[path] > 0; });
  }
  // Events arrive in order: once the sentinel's event is seen, earlier events were delivered.
  void Barrier() {
    calls_[sentinel_] = 0;
    Touch(sentinel_, "s");
    ASSERT_TRUE(Called(sentinel_));
  }

  boost::asio::io_context io_;
  std::string dir_, index_, sentinel_;
  std::map<std::string, int> calls_;
  std::unique_ptr<IndexWatcher> watcher_;
};

TEST_F(IndexWatcherTest, AppendAndCloseWriteEachProduceACallback) {
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  ASSERT_TRUE(watcher_->Watch(sentinel_).ok());
  EXPECT_TRUE(watcher_->Watching(index_));
  const int fd = ::open(index_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "a\n", 2), 2);  // IN_MODIFY while still open
  EXPECT_TRUE(Called(index_));
  Barrier();
  calls_[index_] = 0;
  ::close(fd);  // IN_CLOSE_WRITE only
  EXPECT_TRUE(Called(index_));
}

TEST_F(IndexWatcherTest, ReplaceByRenameProducesACallback) {
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  ASSERT_TRUE(watcher_->Watch(sentinel_).ok());
  const std::string tmp = dir_ + "/index.txt.tmp";
  Touch(tmp, "a\nb\n");
  Barrier();
  EXPECT_EQ(calls_[index_], 0);  // other names in the directory are not reported
  ASSERT_EQ(::rename(tmp.c_str(), index_.c_str()), 0);
  EXPECT_TRUE(Called(index_));
}

TEST_F(IndexWatcherTest, CreateAndDeleteProduceCallbacks) {
  const std::string later = dir_ + "/later.txt";
  ASSERT_TRUE(watcher_->Watch(later).ok());  // the file need not exist, only its directory
  Touch(later, "x\n");
  EXPECT_TRUE(Called(later));
  calls_[later] = 0;
  ASSERT_EQ(::unlink(later.c_str()), 0);
  EXPECT_TRUE(Called(later));
}

TEST_F(IndexWatcherTest, UnwatchStopsCallbacks) {
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  ASSERT_TRUE(watcher_->Watch(sentinel_).ok());
  Touch(index_, "a\n");
  EXPECT_TRUE(Called(index_));
  Barrier();
  watcher_->Unwatch(index_);
  EXPECT_FALSE(watcher_->Watching(index_));
  calls_[index_] = 0;
  Touch(index_, "b\n");
  Barrier();
  EXPECT_EQ(calls_[index_], 0);
  watcher_->Unwatch(index_);  // unknown now: ignored
}

TEST_F(IndexWatcherTest, ReferenceCountedPerPath) {
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  ASSERT_TRUE(watcher_->Watch(sentinel_).ok());
  watcher_->Unwatch(index_);
  Touch(index_, "a\n");
  EXPECT_TRUE(Called(index_));
  Barrier();
  watcher_->Unwatch(index_);
  calls_[index_] = 0;
  Touch(index_, "b\n");
  Barrier();
  EXPECT_EQ(calls_[index_], 0);
}

TEST_F(IndexWatcherTest, LastFileOfADirectoryUnwatchedThenWatchedAgain) {
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  watcher_->Unwatch(index_);  // removes the directory watch
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  Touch(index_, "a\n");
  EXPECT_TRUE(Called(index_));
}

TEST_F(IndexWatcherTest, DifferentSpellingsOfOnePathAreEachReported) {
  const std::string other = dir_ + "//./index.txt";
  ASSERT_TRUE(watcher_->Watch(index_).ok());
  ASSERT_TRUE(watcher_->Watch(other).ok());
  Touch(index_, "a\n");
  EXPECT_TRUE(Called(index_));
  EXPECT_TRUE(Called(other));
}

TEST_F(IndexWatcherTest, MissingDirectoryIsAnError) {
  const std::string path = dir_ + "/nodir/index.txt";
  Status s = watcher_->Watch(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
  EXPECT_FALSE(watcher_->Watching(path));
  watcher_->Unwatch(path);  // never watched: ignored
  EXPECT_FALSE(watcher_->Watch(dir_ + "/").ok());
}

// [D:I15.2]: the watcher never opens the index, and a FIFO (or any non-directory) where the
// index's directory should be is an error, not a blocking open; a FIFO at the index path itself
// is watched like any name (the reader refuses it).
TEST_F(IndexWatcherTest, AFifoAsTheDirectoryIsAnErrorAndAtTheIndexPathIsWatched) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  Status s = watcher_->Watch(fifo + "/index.txt");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("watching directory " + fifo + ": Not a directory"));
  ASSERT_TRUE(watcher_->Watch(fifo).ok());
  EXPECT_TRUE(watcher_->Watching(fifo));
}

TEST_F(IndexWatcherTest, DeletedDirectoryIsWatchedAgainWhenItReturns) {
  const std::string sub = dir_ + "/sub";
  const std::string path = sub + "/index.txt";
  stdfs::create_directory(sub);
  ASSERT_TRUE(watcher_->Watch(path).ok());
  stdfs::remove_all(sub);
  EXPECT_TRUE(Called(path));  // told about the loss
  EXPECT_TRUE(RunUntil([&] { return !watcher_->Watching(path); }));
  calls_[path] = 0;
  stdfs::create_directory(sub);
  Touch(path, "a\n");
  EXPECT_TRUE(RunUntil([&] { return watcher_->Watching(path) && calls_[path] > 0; }));
  calls_[path] = 0;
  Touch(path, "b\n");
  EXPECT_TRUE(Called(path));
}

TEST_F(IndexWatcherTest, CallbackMayDestroyTheWatcher) {
  int calls = 0;
  std::unique_ptr<IndexWatcher> watcher;
  watcher = std::make_unique<IndexWatcher>(io_, [&](const std::string&) {
    ++calls;
    watcher.reset();
  });
  ASSERT_TRUE(watcher->Watch(index_).ok());
  ASSERT_TRUE(watcher->Watch(sentinel_).ok());
  Touch(index_, "a\n");
  Touch(sentinel_, "a\n");
  EXPECT_TRUE(RunUntil([&] { return calls > 0; }));
  io_.restart();
  io_.poll();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(watcher, nullptr);
}

}  // namespace
}  // namespace sedna::dataset
