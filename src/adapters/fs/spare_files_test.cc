#include "adapters/fs/spare_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace sedna::fs {
namespace {

namespace sfs = std::filesystem;

class SpareFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spare-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    auto d = Dir::OpenTrusted(base_, false);
    ASSERT_TRUE(d.ok()) << d.message();
    dir_ = std::move(*d);
  }
  void TearDown() override {
    if (!base_.empty()) sfs::remove_all(base_);
  }
  size_t Entries() const {
    return static_cast<size_t>(
        std::distance(sfs::directory_iterator(base_), sfs::directory_iterator()));
  }
  std::string base_;
  Dir dir_;
};

TEST_F(SpareFilesTest, FillsAWantedKeyUpToItsShare) {
  SpareFiles spares(/*max_total=*/8, /*files_per_key=*/2);
  EXPECT_EQ(spares.Fill("job-a", dir_), 0u);  // not wanted yet
  spares.Want("job-a");
  EXPECT_EQ(spares.Fill("job-a", dir_), 3u);  // two files, one directory
  EXPECT_EQ(spares.Fill("job-a", dir_), 0u);  // it has its share
  EXPECT_EQ(spares.total(), 3u);
  // The files have no name; the directory is the one entry.
  ASSERT_EQ(Entries(), 1u);
  const std::string dir_name = sfs::directory_iterator(base_)->path().filename().string();
  EXPECT_EQ(dir_name.rfind(".sedna-spare-" + std::to_string(::getpid()) + "-", 0), 0u) << dir_name;

  UniqueFd a = spares.Take("job-a");
  ASSERT_TRUE(a.valid());
  struct stat st;
  ASSERT_EQ(::fstat(a.get(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_TRUE(spares.Take("job-a").valid());
  EXPECT_FALSE(spares.Take("job-a").valid());  // used up
  EXPECT_FALSE(spares.Take("job-b").valid());  // never wanted

  auto d = spares.TakeDir("job-a");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->name, dir_name);
  ASSERT_EQ(::stat((base_ + "/" + dir_name).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_ino, d->id.ino);
  EXPECT_FALSE(spares.TakeDir("job-a").has_value());
  EXPECT_EQ(spares.total(), 0u);
  SpareFiles::Remove(*d);  // taken and not moved: removed by the taker
  EXPECT_EQ(Entries(), 0u);
  EXPECT_EQ(spares.Fill("job-a", dir_), 3u);  // still wanted: filled again
}

TEST_F(SpareFilesTest, TheTotalIsBoundedAndADroppedKeyGetsNoMore) {
  SpareFiles spares(/*max_total=*/4, /*files_per_key=*/2);
  spares.Want("a");
  spares.Want("b");
  EXPECT_EQ(spares.Fill("a", dir_), 3u);
  EXPECT_EQ(spares.Fill("b", dir_), 1u);  // the total's bound: one file
  EXPECT_EQ(spares.total(), 4u);
  EXPECT_EQ(Entries(), 1u);                                      // a's directory
  for (const auto& d : spares.Drop("a")) SpareFiles::Remove(d);  // its directory, by the caller
  EXPECT_EQ(spares.total(), 1u);
  EXPECT_EQ(Entries(), 0u);
  EXPECT_FALSE(spares.Take("a").valid());
  EXPECT_EQ(spares.Fill("a", dir_), 0u);  // dropped: not wanted any more
  EXPECT_EQ(spares.Fill("b", dir_), 2u);
  EXPECT_EQ(spares.total(), 3u);
}

// Spare directories are removed when the object goes (the LC stops), and those of a process that
// is gone when a directory is filled again (a killed LC's); what is no longer the directory made
// is left alone.
TEST_F(SpareFilesTest, SpareDirectoriesDoNotOutliveTheirProcess) {
  {
    SpareFiles spares;
    spares.Want("a");
    spares.Fill("a", dir_);
    EXPECT_EQ(Entries(), 1u);
  }
  EXPECT_EQ(Entries(), 0u);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // a pid that is gone
  const std::string stale = base_ + "/.sedna-spare-" + std::to_string(child) + "-0";
  const std::string live = base_ + "/.sedna-spare-1-0";  // pid 1 is alive
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(live.c_str(), 0755), 0);
  SpareFiles spares;
  spares.Want("a");
  spares.Fill("a", dir_);
  EXPECT_FALSE(sfs::exists(stale));
  EXPECT_TRUE(sfs::exists(live));

  // Taken, swapped for another directory under the same name: Remove leaves that one.
  auto d = spares.TakeDir("a");
  ASSERT_TRUE(d.has_value());
  const std::string path = base_ + "/" + d->name;
  ASSERT_EQ(::rmdir(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  SpareFiles::Remove(*d);
  EXPECT_TRUE(sfs::exists(path));
}

TEST_F(SpareFilesTest, NoDirectoryMakesNone) {
  SpareFiles spares;
  spares.Want("a");
  EXPECT_EQ(spares.Fill("a", Dir()), 0u);
  EXPECT_EQ(spares.total(), 0u);
}

// Fill and Take from several threads at once (the pool's), Drop from another (the loop's): the
// count stays right and every fd taken is a spare (tsan-clean by construction: one mutex).
TEST_F(SpareFilesTest, ConcurrentFillTakeAndDropKeepTheCount) {
  SpareFiles spares(/*max_total=*/16, /*files_per_key=*/2);
  for (int k = 0; k < 4; ++k) spares.Want("k" + std::to_string(k));
  std::vector<std::thread> threads;
  std::atomic<int> taken{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string key = "k" + std::to_string(t);
      for (int i = 0; i < 50; ++i) {
        spares.Fill(key, dir_);
        if (spares.Take(key).valid()) ++taken;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(taken.load(), 200);  // each Take follows its own key's Fill
  EXPECT_LE(spares.total(), 12u);
  for (int k = 0; k < 4; ++k) {
    for (const auto& d : spares.Drop("k" + std::to_string(k))) SpareFiles::Remove(d);
  }
  EXPECT_EQ(spares.total(), 0u);
}

}  // namespace
}  // namespace sedna::fs
