// A hot-update write resumed after a restart (the LC killed between the config's rename and the
// core's record of the write), and the ledger entry that tells it, on real files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "adapters/storage/hot_update.h"
#include "adapters/storage/hot_update_fixture.h"

namespace sedna::storage {
namespace {

using hot_update_fixture::HotUpdateTest;
using hot_update_fixture::kConfig;
using hot_update_fixture::kJobDir;
using hot_update_fixture::ReadFile;
using hot_update_fixture::WriteFile;

// The LC killed after the config's rename and before the core recorded the write: the write it
// resumes on restart (the same action) finds its own config in place and does nothing again; a
// different write, or the same one after the config was replaced, writes.
TEST_F(HotUpdateTest, AResumedWriteThatHadFinishedIsNotDoneAgain) {
  auto first = WriteHotUpdate(ctx_, Action("/output/train/1/model.pb"));
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_FALSE(first->resumed);
  const std::string config = ReadFile(Host(kConfig));
  struct stat before {};
  ASSERT_EQ(::stat(Host(kConfig).c_str(), &before), 0);
  const auto versions = Entries(Host("/models/.sedna-versions"));

  auto again = WriteHotUpdate(ctx_, Action("/output/train/1/model.pb"));
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_TRUE(again->resumed);
  EXPECT_EQ(again->update_time, first->update_time);
  EXPECT_EQ(ReadFile(Host(kConfig)), config);
  struct stat after {};
  ASSERT_EQ(::stat(Host(kConfig).c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the config was replaced";
  EXPECT_EQ(Entries(Host("/models/.sedna-versions")), versions)
      << "the deploy model was kept as a version of itself";

  // The next condition, with the same model: written.
  core::il::WriteHotUpdate next = Action("/output/train/1/model.pb");
  next.condition = 14;
  auto third = WriteHotUpdate(ctx_, next);
  ASSERT_TRUE(third.ok()) << third.message();
  EXPECT_FALSE(third->resumed);
  struct stat rewritten {};
  ASSERT_EQ(::stat(Host(kConfig).c_str(), &rewritten), 0);
  EXPECT_NE(rewritten.st_ino, after.st_ino);

  // The same condition once more, but the config was replaced meanwhile (not the file the LC put
  // there): written again.
  ASSERT_EQ(::unlink(Host(kConfig).c_str()), 0);
  WriteFile(Host(kConfig), "a worker's own file");
  auto replaced = WriteHotUpdate(ctx_, next);
  ASSERT_TRUE(replaced.ok()) << replaced.message();
  EXPECT_FALSE(replaced->resumed);
  EXPECT_EQ(ReadFile(Host(kConfig)),
            ModelConfigJson("/model-hot-update/model.pb", replaced->update_time));

  // The same condition once more, the config rewritten in place by someone else (the same
  // dev/ino, as a freed inode given to the next file also has): written again.
  {
    const std::string recorded = ReadFile(Host(kConfig));
    struct stat in_place {};
    ASSERT_EQ(::stat(Host(kConfig).c_str(), &in_place), 0);
    std::ofstream(Host(kConfig), std::ios::binary | std::ios::trunc) << "edited in place";
    struct stat edited {};
    ASSERT_EQ(::stat(Host(kConfig).c_str(), &edited), 0);
    ASSERT_EQ(edited.st_ino, in_place.st_ino);
    auto rewritten_again = WriteHotUpdate(ctx_, next);
    ASSERT_TRUE(rewritten_again.ok()) << rewritten_again.message();
    EXPECT_FALSE(rewritten_again->resumed);
    EXPECT_NE(ReadFile(Host(kConfig)), recorded);
    EXPECT_EQ(ReadFile(Host(kConfig)),
              ModelConfigJson("/model-hot-update/model.pb", rewritten_again->update_time));
  }

  // The same condition writing another model (never a resumed write): written.
  WriteFile(Host("/output/train/2/model.pb"), "trained round 2");
  core::il::WriteHotUpdate other = Action("/output/train/2/model.pb");
  other.condition = 14;
  auto fourth = WriteHotUpdate(ctx_, other);
  ASSERT_TRUE(fourth.ok()) << fourth.message();
  EXPECT_FALSE(fourth->resumed);
  EXPECT_EQ(ReadFile(Host(std::string(kJobDir) + "/model.pb")), "trained round 2");
}

// The ledger entry of the last config write is the LC's own file; one that is not a ledger (here
// garbage) is an error naming it, and nothing is written: the worker keeps the config it has.
TEST_F(HotUpdateTest, ACorruptWriteRecordIsAnErrorNamingItAndTheConfigStays) {
  auto first = WriteHotUpdate(ctx_, Action("/output/train/1/model.pb"));
  ASSERT_TRUE(first.ok()) << first.message();
  const std::string config = ReadFile(Host(kConfig));
  const std::string record = dir_ + "/ledger/hot-update-config.default.hot";
  ASSERT_FALSE(ReadFile(record).empty()) << "no record of the write at " << record;
  std::ofstream(record, std::ios::binary | std::ios::trunc) << "not a ledger\n";

  WriteFile(Host("/output/train/2/model.pb"), "trained round 2");
  core::il::WriteHotUpdate next = Action("/output/train/2/model.pb");
  next.condition = 14;
  auto r = WriteHotUpdate(ctx_, next);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find(record), std::string::npos) << r.message();
  EXPECT_EQ(ReadFile(Host(kConfig)), config);
  EXPECT_EQ(ReadFile(Host(std::string(kJobDir) + "/model.pb")), "trained round 1");
}

}  // namespace
}  // namespace sedna::storage
