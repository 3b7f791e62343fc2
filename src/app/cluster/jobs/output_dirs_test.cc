// A job's output directories (output_dirs.h): made beneath the rootfs as the host resolves the
// job's root, every subdirectory tried, no link followed beneath the root, and safe to make twice
// at once (the job's request and an action's).
#include "app/cluster/jobs/output_dirs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "app/cluster/part_test_env.h"

namespace sedna::app {
namespace {

namespace stdfs = std::filesystem;
using testing::TempDir;

const std::vector<std::string> kIlSubs = {"data/train", "data/eval", "train", "eval"};

TEST(OutputDirsTest, MakesEverySubdirectoryBeneathTheJobsRootInTheRootfs) {
  TempDir rootfs;
  const OutputDirs dirs{rootfs.path(), "/output/job-a/", kIlSubs};
  ASSERT_TRUE(dirs.Make().ok());
  for (const std::string& sub : kIlSubs) {
    EXPECT_TRUE(stdfs::is_directory(rootfs.path() + "/output/job-a/" + sub)) << sub;
  }
  // Made again: nothing to do, no error.
  EXPECT_TRUE(dirs.Make().ok());
}

TEST(OutputDirsTest, NothingToMakeMakesNothing) {
  TempDir rootfs;
  EXPECT_TRUE(OutputDirs{}.Make().ok());
  EXPECT_TRUE(OutputDirs({rootfs.path(), "/output", {}}).Make().ok());
  EXPECT_FALSE(stdfs::exists(rootfs.path() + "/output"));
}

TEST(OutputDirsTest, ALinkBeneathTheRootIsAnErrorNamingItAndTheOthersAreStillMade) {
  TempDir rootfs, elsewhere;
  stdfs::create_directories(rootfs.path() + "/output/data");
  stdfs::create_directory_symlink(elsewhere.path(), rootfs.path() + "/output/data/train");
  const Status s = OutputDirs{rootfs.path(), "/output", kIlSubs}.Make();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/output/data/train"), std::string::npos) << s.message();
  EXPECT_TRUE(stdfs::is_empty(elsewhere.path())) << "the link was followed";
  for (const char* sub : {"data/eval", "train", "eval"}) {
    EXPECT_TRUE(stdfs::is_directory(rootfs.path() + "/output/" + sub)) << sub;
  }
}

TEST(OutputDirsTest, TheRootIsResolvedAsTheHostWouldNeverAboveTheRootfs) {
  TempDir rootfs;
  stdfs::create_directories(rootfs.path() + "/mnt/disk");
  // An absolute link inside the rootfs points inside the rootfs, as it does for the host.
  stdfs::create_directory_symlink("/mnt/disk", rootfs.path() + "/output");
  ASSERT_TRUE(OutputDirs({rootfs.path(), "/output/j", {"train"}}).Make().ok());
  EXPECT_TRUE(stdfs::is_directory(rootfs.path() + "/mnt/disk/j/train"));
  // `..` never climbs above the rootfs.
  ASSERT_TRUE(OutputDirs({rootfs.path(), "/../../up", {"eval"}}).Make().ok());
  EXPECT_TRUE(stdfs::is_directory(rootfs.path() + "/up/eval"));
}

TEST(OutputDirsTest, TwoMakesOfTheSameDirectoriesAtOnceBothSucceed) {
  for (int round = 0; round < 20; ++round) {
    TempDir rootfs;
    const OutputDirs dirs{rootfs.path(), "/output/r", kIlSubs};
    Status a, b;
    std::thread t([&] { a = dirs.Make(); });
    b = dirs.Make();
    t.join();
    ASSERT_TRUE(a.ok()) << a.message();
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_TRUE(stdfs::is_directory(rootfs.path() + "/output/r/data/eval"));
  }
}

}  // namespace
}  // namespace sedna::app
