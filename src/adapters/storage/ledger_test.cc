// The ledger's file format on real files: what it writes, what it reads back, the lines an older
// LC wrote (no birth time) and the lines it refuses.
#include "adapters/storage/ledger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sedna::storage::internal {
namespace {

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ledger_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ctx_.ledger_dir = dir_ + "/ledger";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Text() const {
    std::ifstream in(dir_ + "/ledger/hot-update.default.job", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Put(const std::string& text) const {
    std::filesystem::create_directories(dir_ + "/ledger");
    std::ofstream(dir_ + "/ledger/hot-update.default.job", std::ios::binary) << text;
  }
  Ledger Of() const { return Ledger::ForHotUpdate(ctx_, "default", "job"); }

  std::string dir_;
  Context ctx_;
};

TEST_F(LedgerTest, AFileIsRecordedWithItsBirthTimeAndReadBackTheSame) {
  const fs::FileId id{.dev = 2049, .ino = 77, .birth_ns = 1796245853006293251};
  ASSERT_TRUE(Of().Update([&](std::vector<Recorded>& r) -> Status {
                    r.push_back({"models/model v1.pb", id});
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(Text(), "# default/job\n2049 77/1796245853006293251 models/model v1.pb\n");
  auto back = Of().Read();
  ASSERT_TRUE(back.ok()) << back.message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front().name, "models/model v1.pb");
  EXPECT_EQ(back->front().id.dev, id.dev);
  EXPECT_EQ(back->front().id.ino, id.ino);
  EXPECT_EQ(back->front().id.birth_ns, id.birth_ns);
}

// A line an LC wrote before birth times were kept is read with none: dev/ino alone tell the file.
TEST_F(LedgerTest, ALineWithoutABirthTimeIsReadAsOneWithNone) {
  Put("# default/job\n2049 77 model_config.json\n");
  auto back = Of().Read();
  ASSERT_TRUE(back.ok()) << back.message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front().id.ino, 77u);
  EXPECT_EQ(back->front().id.birth_ns, 0u);
  EXPECT_EQ(back->front().name, "model_config.json");
}

TEST_F(LedgerTest, MalformedLinesAreAnErrorNamingTheFile) {
  for (const std::string line : {"2049 77/ a", "2049 77/0 a", "2049 77/x a", "2049 /5 a",
                                 "2049 77/5", "2049 77/5 ", "x 77 a", "2049"}) {
    Put("# default/job\n" + line + "\n");
    auto back = Of().Read();
    EXPECT_FALSE(back.ok()) << "read \"" << line << "\"";
    if (!back.ok()) {
      EXPECT_NE(back.message().find(dir_ + "/ledger/hot-update.default.job"), std::string::npos)
          << back.message();
    }
  }
}

// Two files with the same dev/ino are the same file unless both birth times are known and differ.
TEST(FileIdTest, BirthTimesTellALaterFileGivenTheSameInodeNumber) {
  const fs::FileId a{.dev = 1, .ino = 2, .birth_ns = 10};
  EXPECT_TRUE(a == (fs::FileId{.dev = 1, .ino = 2, .birth_ns = 10}));
  EXPECT_FALSE(a == (fs::FileId{.dev = 1, .ino = 2, .birth_ns = 11}));
  EXPECT_TRUE(a == (fs::FileId{.dev = 1, .ino = 2, .birth_ns = 0}));
  EXPECT_TRUE((fs::FileId{.dev = 1, .ino = 2, .birth_ns = 0}) == a);
  EXPECT_FALSE(a == (fs::FileId{.dev = 1, .ino = 3, .birth_ns = 10}));
  EXPECT_FALSE(a == (fs::FileId{.dev = 2, .ino = 2, .birth_ns = 10}));
}

}  // namespace
}  // namespace sedna::storage::internal
