#include "adapters/dataset/spool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/fs/files.h"

namespace sedna::dataset {
namespace {

namespace stdfs = std::filesystem;
using ::testing::HasSubstr;

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "spool_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    path_ = dir_ + "/job.spool";
  }
  void TearDown() override {
    fs::SetWriteFaultForTest(nullptr);
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }
  std::string Content() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::unique_ptr<Spool> MustOpen(int64_t committed) {
    auto r = Spool::Open(path_, committed);
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SpoolTest, AppendFlushReopenTruncatesToCommittedSize) {
  auto spool = MustOpen(0);
  ASSERT_TRUE(spool);
  EXPECT_EQ(spool->path(), path_);
  ASSERT_TRUE(spool->Append("train_images/1.jpg 1,2,3,4,1").ok());
  ASSERT_TRUE(spool->Append("b").ok());
  EXPECT_EQ(spool->size(), 31);
  EXPECT_EQ(spool->written(), 0);  // buffered
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(Content(), "train_images/1.jpg 1,2,3,4,1\nb\n");
  const int64_t committed = spool->size();

  // Written and synced but never committed by the caller (crash before its transaction).
  ASSERT_TRUE(spool->Append("uncommitted").ok());
  ASSERT_TRUE(spool->Flush().ok());
  spool.reset();
  EXPECT_EQ(Content(), "train_images/1.jpg 1,2,3,4,1\nb\nuncommitted\n");

  spool = MustOpen(committed);
  ASSERT_TRUE(spool);
  EXPECT_EQ(spool->size(), committed);
  EXPECT_EQ(Content(), "train_images/1.jpg 1,2,3,4,1\nb\n");
  ASSERT_TRUE(spool->Append("c").ok());
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(Content(), "train_images/1.jpg 1,2,3,4,1\nb\nc\n");
}

TEST_F(SpoolTest, UnflushedBytesAreDroppedOnClose) {
  auto spool = MustOpen(0);
  ASSERT_TRUE(spool->Append("a").ok());
  ASSERT_TRUE(spool->Flush().ok());
  ASSERT_TRUE(spool->Append("b").ok());
  spool.reset();
  EXPECT_EQ(Content(), "a\n");
}

TEST_F(SpoolTest, LargeAppendsWriteThroughAndStayOrdered) {
  auto spool = MustOpen(0);
  std::string want;
  for (int i = 0; i < 20000; ++i) {
    const std::string s = "train_images/" + std::to_string(i) + ".jpg 102,45,188,201,1";
    ASSERT_TRUE(spool->Append(s).ok());
    want += s + "\n";
  }
  const std::string huge(300 * 1024, 'h');  // one sample larger than the buffer
  ASSERT_TRUE(spool->Append(huge).ok());
  want += huge + "\n";
  EXPECT_GT(spool->written(), 0);
  EXPECT_EQ(spool->size(), static_cast<int64_t>(want.size()));
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(spool->written(), spool->size());
  EXPECT_TRUE(Content() == want);
}

TEST_F(SpoolTest, OpenErrorsNameThePath) {
  {
    auto spool = MustOpen(0);
    ASSERT_TRUE(spool->Append("a").ok());
    ASSERT_TRUE(spool->Flush().ok());
  }
  auto r = Spool::Open(path_, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "opening spool " + path_ + ": size 2 is below the committed size 10");
  EXPECT_EQ(Content(), "a\n");

  r = Spool::Open(dir_ + "/nodir/x.spool", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "opening spool " + dir_ + "/nodir/x.spool: No such file or directory");

  r = Spool::Open(path_, -1);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr(path_));
}

// [D:I15.2]: nothing but a regular file is opened at a spool path, and the open cannot block.
TEST_F(SpoolTest, NonRegularFileAtThePathIsAnError) {
  const std::string fifo = dir_ + "/fifo.spool", sub = dir_ + "/sub.spool", dev = dir_ + "/null";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  ASSERT_EQ(::symlink("/dev/null", dev.c_str()), 0);
  struct Case {
    std::string path, kind;
  };
  for (const Case& c :
       {Case{fifo, "a FIFO"}, Case{sub, "a directory"}, Case{dev, "a character device"}}) {
    auto r = Spool::Open(c.path, 0);
    ASSERT_FALSE(r.ok()) << c.path;
    EXPECT_EQ(r.message(), "opening spool " + c.path + ": is " + c.kind + ", not a regular file");
  }
}

TEST_F(SpoolTest, SampleWithNewlineIsRejected) {
  auto spool = MustOpen(0);
  Status s = spool->Append("a\nb");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "spool " + path_ + ": sample contains a newline");
  EXPECT_EQ(spool->size(), 0);
}

TEST_F(SpoolTest, TruncateDropsBufferedAndWrittenBytes) {
  auto spool = MustOpen(0);
  ASSERT_TRUE(spool->Append("a").ok());
  ASSERT_TRUE(spool->Flush().ok());
  ASSERT_TRUE(spool->Append("b").ok());
  ASSERT_TRUE(spool->Truncate(2).ok());  // within the buffer
  EXPECT_EQ(spool->size(), 2);
  ASSERT_TRUE(spool->Append("c").ok());
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(Content(), "a\nc\n");
  ASSERT_TRUE(spool->Truncate(2).ok());  // written bytes
  ASSERT_TRUE(spool->Append("d").ok());
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(Content(), "a\nd\n");
  EXPECT_FALSE(spool->Truncate(5).ok());
  EXPECT_FALSE(spool->Truncate(-1).ok());
}

TEST_F(SpoolTest, WriteFaultIsReportedAndFlushCanBeRetried) {
  auto spool = MustOpen(0);
  ASSERT_TRUE(spool->Append("a").ok());
  int fail = ENOSPC;
  fs::SetWriteFaultForTest([&](const std::string& path) { return path == path_ ? fail : 0; });
  Status s = spool->Flush();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "writing " + path_ + ": No space left on device");
  EXPECT_EQ(spool->size(), 2);

  // An Append that has to write and fails leaves that sample out.
  const std::string big(70 * 1024, 'x');
  s = spool->Append(big);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(spool->size(), 2);

  fail = 0;
  ASSERT_TRUE(spool->Flush().ok());
  ASSERT_TRUE(spool->Append("b").ok());
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(Content(), "a\nb\n");
}

// A new spool's directory entry is synced with its first data sync, not when it is opened; the
// directory once per list however many new spools it holds; afterwards the data sync alone.
TEST_F(SpoolTest, PrepareSyncWritesTheBufferAndAddsItsDataSyncAndOnceTheNewEntrysDirectory) {
  auto spool = MustOpen(0);
  auto other = Spool::Open(dir_ + "/other.spool", 0);
  ASSERT_TRUE(other.ok()) << other.message();
  ASSERT_TRUE(spool->Append("a").ok());
  ASSERT_TRUE(spool->Append("b").ok());
  ASSERT_TRUE((*other)->Append("x").ok());
  EXPECT_EQ(spool->written(), 0);
  Spool::SyncList list;
  ASSERT_TRUE(spool->PrepareSync(list).ok());
  ASSERT_TRUE((*other)->PrepareSync(list).ok());
  EXPECT_EQ(spool->written(), 4);
  EXPECT_EQ(Content(), "a\nb\n");
  // The directory's fsync once, then each file's fdatasync.
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_FALSE(list.items[0].data_only);
  EXPECT_TRUE(list.items[1].data_only);
  EXPECT_TRUE(list.items[2].data_only);
  struct stat dir_st, item_st;
  ASSERT_EQ(::stat(dir_.c_str(), &dir_st), 0);
  ASSERT_EQ(::fstat(list.items[0].fd, &item_st), 0);
  EXPECT_EQ(item_st.st_ino, dir_st.st_ino);
  fs::SyncAll(list.items);
  EXPECT_EQ(list.items[0].error, 0);
  EXPECT_TRUE(spool->Synced(list.items).ok());
  EXPECT_TRUE((*other)->Synced(list.items).ok());

  // Synced once: the data sync alone from now on, also for a spool reopened in this process.
  ASSERT_TRUE(spool->Append("c").ok());
  list = {};
  ASSERT_TRUE(spool->PrepareSync(list).ok());
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_TRUE(list.items[0].data_only);
  fs::SyncAll(list.items);
  EXPECT_TRUE(spool->Synced(list.items).ok());
  spool.reset();
  spool = MustOpen(6);
  ASSERT_TRUE(spool->Append("d").ok());
  list = {};
  ASSERT_TRUE(spool->PrepareSync(list).ok());
  EXPECT_EQ(list.items.size(), 1u);
}

// A failed sync is the spool's error, naming the file, or the directory for its entry; an entry
// whose sync failed is synced again with the next data sync.
TEST_F(SpoolTest, AFailedSyncNamesTheFileOrTheDirectoryAndTheEntryIsSyncedAgain) {
  auto spool = MustOpen(0);
  ASSERT_TRUE(spool->Append("a").ok());
  Spool::SyncList list;
  ASSERT_TRUE(spool->PrepareSync(list).ok());
  ASSERT_EQ(list.items.size(), 2u);
  std::vector<fs::SyncItem> made = list.items;
  made[0].error = EIO;  // the directory's
  Status s = spool->Synced(made);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("syncing spool directory " + dir_));

  list = {};
  ASSERT_TRUE(spool->PrepareSync(list).ok());
  ASSERT_EQ(list.items.size(), 2u);  // the entry again
  made = list.items;
  made[1].error = EIO;  // the file's
  s = spool->Synced(made);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("syncing " + path_));
  // Fewer results than syncs: the missing ones were not made.
  list = {};
  ASSERT_TRUE(spool->PrepareSync(list).ok());
  EXPECT_FALSE(spool->Synced({}).ok());

  // A write that fails adds no sync and leaves the bytes buffered, for the next try.
  ASSERT_TRUE(spool->Append("c").ok());
  int fail = EIO;
  fs::SetWriteFaultForTest([&](const std::string& path) { return path == path_ ? fail : 0; });
  list = {};
  EXPECT_FALSE(spool->PrepareSync(list).ok());
  EXPECT_TRUE(list.items.empty());
  EXPECT_EQ(spool->written(), 2);
  EXPECT_EQ(spool->size(), 4);
  fail = 0;
  ASSERT_TRUE(spool->Flush().ok());
  EXPECT_EQ(Content(), "a\nc\n");
}

// A file this process created and removed, then created again, needs its entry synced again even
// though its directory was synced in between.
TEST_F(SpoolTest, AFileCreatedAgainAfterItsDirectoryWasSyncedIsSyncedAgain) {
  {
    auto first = MustOpen(0);
    ASSERT_TRUE(first->Append("a").ok());
    ASSERT_TRUE(first->Flush().ok());  // the directory synced
  }
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  Spool::Removed(path_);
  auto again = MustOpen(0);
  // Reopened (ResetSpools) before its first sync: still not known durable.
  again.reset();
  again = MustOpen(0);
  ASSERT_TRUE(again->Append("b").ok());
  Spool::SyncList list;
  ASSERT_TRUE(again->PrepareSync(list).ok());
  EXPECT_EQ(list.items.size(), 2u);
}

}  // namespace
}  // namespace sedna::dataset
