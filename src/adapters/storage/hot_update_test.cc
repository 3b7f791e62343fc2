// The hot-update writer on real files in a temporary rootfs (and one S3 source on moto_server).
// The expected bytes of ModelConfigJson and GoTimeString were printed by Go 1.19.8
// (encoding/json.MarshalIndent and time.Time.String) for the same inputs.
#include "adapters/storage/hot_update.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "adapters/fs/files.h"
#include "adapters/storage/hot_update_fixture.h"
#include "moto_server.h"

namespace sedna::storage {
namespace {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;
using hot_update_fixture::HotUpdateTest;
using hot_update_fixture::kConfig;
using hot_update_fixture::kJobDir;
using hot_update_fixture::ReadFile;
using hot_update_fixture::WriteFile;

TEST(ModelConfigJson, IsGoMarshalIndentWithOneSpace) {
  EXPECT_EQ(ModelConfigJson("/model-hot-update/model_finetune_tensorflow.pb",
                            "2025-03-06 19:16:47.123456789 +0800 CST m=+3600.000000001"),
            "{\n"
            " \"model_config\": {\n"
            "  \"model_path\": \"/model-hot-update/model_finetune_tensorflow.pb\",\n"
            "  \"model_update_time\": \"2025-03-06 19:16:47.123456789 +0800 CST "
            "m=+3600.000000001\"\n"
            " }\n"
            "}");
  // Go escapes <, >, & (HTML-safe), quotes, backslashes, control characters and U+2028.
  EXPECT_EQ(ModelConfigJson("/model-hot-update/a<b>&c\"d\\e\u2028\x01\u00e9.pb", "x"),
            "{\n \"model_config\": {\n  \"model_path\": "
            "\"/model-hot-update/a\\u003cb\\u003e\\u0026c\\\"d\\\\e\\u2028\\u0001\u00e9.pb\",\n"
            "  \"model_update_time\": \"x\"\n }\n}");
}

TEST(GoTimeString, MatchesGo) {
  struct Case {
    int64_t sec, nsec;
    int offset;
    std::string zone;
    int64_t mono;
    std::string want;
  };
  const Case kCases[] = {
      {1741259807, 123456789, 8 * 3600, "CST", 3600'000000001,
       "2025-03-06 19:16:47.123456789 +0800 CST m=+3600.000000001"},
      {0, 0, 0, "UTC", 1, "1970-01-01 00:00:00 +0000 UTC m=+0.000000001"},
      {1629448867, 100000000, -7 * 3600, "MST", 102840,
       "2021-08-20 01:41:07.1 -0700 MST m=+0.000102840"},
      {1629448867, 120000000, 5 * 3600 + 1800, "", 12'000000000,
       "2021-08-20 14:11:07.12 +0530 +0530 m=+12.000000000"},
      {1629448867, 1, -(9 * 3600 + 1800), "", -1'500000000,
       "2021-08-19 23:11:07.000000001 -0930 -0930 m=-1.500000000"},
      {-1, 999999999, 0, "UTC", 1'234567890'000000000,
       "1969-12-31 23:59:59.999999999 +0000 UTC m=+1234567890.000000000"},
      {4102444799, 0, 0, "UTC", 1, "2099-12-31 23:59:59 +0000 UTC m=+0.000000001"},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(GoTimeString(c.sec * 1'000'000'000 + c.nsec, c.offset, c.zone, c.mono), c.want);
  }
}

const std::regex kGoTime(
    R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d*[1-9])? [+-]\d{4} [^ ]+ m=\+(\d+)\.(\d{9}))");

TEST(GoTimeString, NowHasAMonotonicPartThatGrows) {
  std::smatch a, b;
  const std::string first = GoTimeNow();
  std::this_thread::sleep_for(2ms);  // not luck: the assertion holds for any delay > 0
  const std::string second = GoTimeNow();
  ASSERT_TRUE(std::regex_match(first, a, kGoTime)) << first;
  ASSERT_TRUE(std::regex_match(second, b, kGoTime)) << second;
  const auto mono = [](const std::smatch& m) { return std::stod(m[2].str() + "." + m[3].str()); };
  EXPECT_GT(mono(b), mono(a));
  EXPECT_NE(first, second);  // what a hot-update worker compares
}

std::string ConfigPattern(const std::string& model_path) {
  return "\\{\n \"model_config\": \\{\n  \"model_path\": \"" + model_path +
         "\",\n  \"model_update_time\": \"([^\"]+)\"\n \\}\n\\}";
}

TEST_F(HotUpdateTest, WritesModelsThenTheV07ConfigBytes) {
  const mode_t old_umask = ::umask(077);  // the config is 0644 whatever the umask
  auto r = WriteHotUpdate(ctx_, Action("/output/train/1/model.pb"));
  ::umask(old_umask);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(ReadFile(Host(std::string(kJobDir) + "/model.pb")), "trained round 1");
  EXPECT_EQ(ReadFile(Host("/models/deploy.pb")), "trained round 1");
  const std::string config = ReadFile(Host(kConfig));
  std::smatch m;
  ASSERT_TRUE(std::regex_match(config, m, std::regex(ConfigPattern("/model-hot-update/model.pb"))))
      << config;
  EXPECT_EQ(m[1].str(), r->update_time);
  EXPECT_TRUE(std::regex_match(r->update_time, kGoTime)) << r->update_time;
  EXPECT_EQ(ModelConfigJson("/model-hot-update/model.pb", r->update_time), config);
  EXPECT_EQ(r->config_file, Host(kConfig));
  struct stat st {};
  ASSERT_EQ(::stat(Host(kConfig).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  // The deploy model it replaced is kept as a version (rollback-model); the hot-update file had
  // none before.
  ASSERT_EQ(r->copies.size(), 2u);
  EXPECT_EQ(r->copies[0].kept_version, 0);
  EXPECT_EQ(r->copies[1].kept_version, 1);
  EXPECT_EQ(ReadFile(Host("/models/.sedna-versions/deploy.pb.1")), "initial deploy model");
  // Nothing else in the job's directory (no temp files), and staging is clean.
  EXPECT_EQ(Entries(Host(kJobDir)), (std::vector<std::string>{"model.pb", "model_config.json"}));
  EXPECT_TRUE(Entries(ctx_.staging_dir).empty());

  // Round 2: the new model, a new update time, the round-1 model kept as a version.
  WriteFile(Host("/output/train/2/model.pb"), "trained round 2");
  auto r2 = WriteHotUpdate(ctx_, Action("/output/train/2/model.pb"));
  ASSERT_TRUE(r2.ok()) << r2.message();
  EXPECT_EQ(ReadFile(Host(std::string(kJobDir) + "/model.pb")), "trained round 2");
  EXPECT_NE(r2->update_time, r->update_time);
  EXPECT_EQ(ReadFile(Host(kConfig)),
            ModelConfigJson("/model-hot-update/model.pb", r2->update_time));
  EXPECT_EQ(r2->copies[0].kept_version, 1);
}

TEST_F(HotUpdateTest, AFailedCopyLeavesTheOldConfig) {
  auto r = WriteHotUpdate(ctx_, Action("/output/train/1/model.pb"));
  ASSERT_TRUE(r.ok()) << r.message();
  const std::string before = ReadFile(Host(kConfig));

  // The source is missing: nothing is written.
  auto missing = WriteHotUpdate(ctx_, Action("/output/train/2/model.pb"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(Host("/output/train/2/model.pb")), std::string::npos)
      << missing.message();
  EXPECT_EQ(ReadFile(Host(kConfig)), before);

  // The second copy fails (its target is a directory) after the first succeeded: the worker
  // still reads the old config, so it does not load the half-done update.
  WriteFile(Host("/output/train/2/model.pb"), "trained round 2");
  core::il::WriteHotUpdate a = Action("/output/train/2/model.pb");
  a.copies[1].dst_url = "/models";
  auto second = WriteHotUpdate(ctx_, a);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(ReadFile(Host(kConfig)), before);

  // Writing the config itself fails: the old one stays whole, and no temp file is left.
  fs::SetWriteFaultForTest([](const std::string& path) {
    return path.find("model_config.json") != std::string::npos ? ENOSPC : 0;
  });
  auto full = WriteHotUpdate(ctx_, Action("/output/train/2/model.pb"));
  fs::SetWriteFaultForTest(nullptr);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.message().find("No space left on device"), std::string::npos) << full.message();
  EXPECT_EQ(ReadFile(Host(kConfig)), before);
  EXPECT_EQ(Entries(Host(kJobDir)),
            (std::vector<std::string>{".sedna-versions", "model.pb", "model_config.json"}));
  EXPECT_TRUE(Entries(ctx_.staging_dir).empty());
}

// Config paths that WriteHotUpdate refuses: anything not strictly beneath the job's own
// directory <base>/default/incrementallearningjob/hot/ (derived from the job, not the annotation).
std::vector<std::string> RefusedConfigPaths() {
  return {
      "/etc/model_config.json",
      "/var/lib/sedna/model-hot-update/../x/a/b/model_config.json",
      "/var/lib/sedna/model-hot-update-x/default/incrementallearningjob/hot/model_config.json",
      "/var/lib/sedna/model-hot-update/model_config.json",
      "/var/lib/sedna/model-hot-update/default/model_config.json",
      "/var/lib/sedna/model-hot-update/default/incrementallearningjob/model_config.json",
      "/var/lib/sedna/model-hot-update/default/incrementallearningjob/hot",
      "/var/lib/sedna/model-hot-update/default/incrementallearningjob/hot/../hot2/m.json",
      "/var/lib/sedna/model-hot-update/tenant-b/incrementallearningjob/hot/model_config.json",
      "/var/lib/sedna/model-hot-update",
      "/var/lib/sedna/model-hot-update/evil/kind/name/model_config.json",
      "var/lib/sedna/model-hot-update/default/incrementallearningjob/hot/model_config.json",
      "",
  };
}

class HotUpdatePathTest : public HotUpdateTest, public ::testing::WithParamInterface<fs::Resolver> {
 protected:
  void SetUp() override {
    if (GetParam() == fs::Resolver::kOpenat2 && !fs::KernelHasOpenat2()) {
      GTEST_SKIP() << "no openat2 on this kernel";
    }
    fs::SetResolver(GetParam());
    HotUpdateTest::SetUp();
    WriteFile(Host("/etc/kind/name/keep"), "host file");
    WriteFile(Host(kTenantB), "tenant-b's config");
    ::chmod(Host("/etc/kind/name/keep").c_str(), 0600);
    stdfs::create_directories(Host("/var/lib/sedna/model-hot-update/default/kind"));
    stdfs::create_symlink(Host("/etc"), Host("/var/lib/sedna/model-hot-update/evil"));
    stdfs::create_symlink(Host("/etc"), Host("/var/lib/sedna/model-hot-update/default/kind/evil"));
  }
  void TearDown() override {
    HotUpdateTest::TearDown();
    fs::SetResolver(fs::Resolver::kAuto);
  }
  void ExpectHostFilesUntouched() {
    EXPECT_EQ(ReadFile(Host("/etc/kind/name/keep")), "host file");
    EXPECT_EQ(Entries(Host("/etc")), (std::vector<std::string>{"kind"}));
    EXPECT_EQ(Entries(Host("/etc/kind/name")), (std::vector<std::string>{"keep"}));
    EXPECT_EQ(ReadFile(Host(kTenantB)), "tenant-b's config");
    EXPECT_EQ(Entries(Host(kTenantBDir)), (std::vector<std::string>{"model_config.json"}));
  }
  static constexpr const char* kTenantBDir =
      "/var/lib/sedna/model-hot-update/tenant-b/incrementallearningjob/hot";
  static constexpr const char* kTenantB =
      "/var/lib/sedna/model-hot-update/tenant-b/incrementallearningjob/hot/model_config.json";
};

INSTANTIATE_TEST_SUITE_P(Resolvers, HotUpdatePathTest,
                         ::testing::Values(fs::Resolver::kWalk, fs::Resolver::kOpenat2),
                         [](const auto& info) {
                           return info.param == fs::Resolver::kWalk ? "Walk" : "Openat2";
                         });

// [D:I21.7]: the annotation names another job's (another namespace's) directory, or
// anything else outside this job's own; refused before anything is copied or written.
TEST_P(HotUpdatePathTest, AConfigPathOutsideTheJobsOwnDirectoryIsRefused) {
  for (const auto& path : RefusedConfigPaths()) {
    core::il::WriteHotUpdate a = Action("/output/train/1/model.pb");
    a.config_path = path;
    auto r = WriteHotUpdate(ctx_, a);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_NE(r.message().find("sedna.io/model-hot-update-config"), std::string::npos)
        << r.message();
    EXPECT_NE(r.message().find("is not inside the job's hot-update directory " +
                               std::string(kJobDir) + "/"),
              std::string::npos)
        << r.message();
  }
  // Nothing was copied or written.
  EXPECT_EQ(ReadFile(Host("/models/deploy.pb")), "initial deploy model");
  EXPECT_FALSE(stdfs::exists(Host(kJobDir)));
  ExpectHostFilesUntouched();
}

// The directory is the job's own, lower-cased as the GM builds it; the annotation may place the
// config in a subdirectory of it.
TEST_P(HotUpdatePathTest, TheDirectoryIsDerivedFromTheJobAndTheConfigMayLieBelowIt) {
  auto dir = HotUpdateJobDir(ctx_, "Default", "Hot");
  ASSERT_TRUE(dir.ok()) << dir.message();
  EXPECT_EQ(*dir, kJobDir);
  core::il::WriteHotUpdate a = Action("/output/train/1/model.pb");
  a.config_path = std::string(kJobDir) + "/conf/model_config.json";
  auto r = WriteHotUpdate(ctx_, a);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(ReadFile(Host(a.config_path)),
            ModelConfigJson("/model-hot-update/model.pb", r->update_time));
  ExpectHostFilesUntouched();
}

// A worker planted a link below the job's directory where the config goes: not followed.
TEST_P(HotUpdatePathTest, ALinkedConfigDirectoryIsNotFollowed) {
  stdfs::create_directories(Host(kJobDir));
  stdfs::create_symlink(Host("/etc/kind/name"), Host(std::string(kJobDir) + "/conf"));
  core::il::WriteHotUpdate a = Action("/output/train/1/model.pb");
  a.config_path = std::string(kJobDir) + "/conf/keep";
  auto r = WriteHotUpdate(ctx_, a);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("symbolic link"), std::string::npos) << r.message();
  ExpectHostFilesUntouched();
  // The config itself replaced by a link to a host file: the link is replaced, never followed.
  stdfs::create_symlink(Host("/etc/kind/name/keep"), Host(kConfig));
  auto w = WriteHotUpdate(ctx_, Action("/output/train/1/model.pb"));
  ASSERT_TRUE(w.ok()) << w.message();
  EXPECT_FALSE(stdfs::is_symlink(Host(kConfig)));
  ExpectHostFilesUntouched();
}

// [D:I21.2], in the hot-update directory (writable by the inference pod): the versions
// directory replaced by a link to another directory, the model replaced by a link to a 0600 file.
TEST_P(HotUpdatePathTest, LinksPlantedInTheJobsDirectoryAreNeverFollowed) {
  ASSERT_TRUE(WriteHotUpdate(ctx_, Action("/output/train/1/model.pb")).ok());
  // The model replaced by a link to a host file: it is not kept as a version, the link replaced.
  const std::string model = Host(std::string(kJobDir) + "/model.pb");
  stdfs::remove(model);
  stdfs::create_symlink(Host("/etc/kind/name/keep"), model);
  core::il::WriteHotUpdate next = Action("/output/train/1/model.pb");
  next.condition = 14;  // the next round's write (the same one again would be a resumed write)
  auto r = WriteHotUpdate(ctx_, next);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->copies[0].kept_version, 0);
  EXPECT_NE(r->copies[0].warning.find("symbolic link"), std::string::npos) << r->copies[0].warning;
  EXPECT_EQ(ReadFile(model), "trained round 1");
  EXPECT_FALSE(stdfs::is_symlink(model));
  auto versions = ListModelVersions(ctx_, std::string(kJobDir) + "/model.pb");
  ASSERT_TRUE(versions.ok()) << versions.message();
  for (const auto& v : *versions) EXPECT_NE(ReadFile(v.path), "host file") << v.path;
  ExpectHostFilesUntouched();

  // The versions directory replaced by a link to a directory with another's versions in it.
  for (int i = 1; i <= 5; ++i) {
    WriteFile(Host("/etc/kind/name/model.pb." + std::to_string(i)), "foreign " + std::to_string(i));
  }
  const std::string vdir = Host(std::string(kJobDir) + "/.sedna-versions");
  stdfs::remove_all(vdir);
  stdfs::create_symlink(Host("/etc/kind/name"), vdir);
  next.condition = 15;
  auto linked = WriteHotUpdate(ctx_, next);
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.message().find(".sedna-versions"), std::string::npos) << linked.message();
  EXPECT_EQ(Entries(Host("/etc/kind/name")),
            (std::vector<std::string>{"keep", "model.pb.1", "model.pb.2", "model.pb.3",
                                      "model.pb.4", "model.pb.5"}));
  EXPECT_EQ(ReadFile(Host("/etc/kind/name/model.pb.1")), "foreign 1");
  EXPECT_EQ(ReadFile(Host("/etc/kind/name/keep")), "host file");
}

// Deleting the job removes what this LC wrote there, nothing else: not a worker's file, not
// another namespace's directory whatever the annotation named.
TEST_P(HotUpdatePathTest, RemoveHotUpdateDirRemovesOnlyWhatThisLcWrote) {
  ASSERT_TRUE(WriteHotUpdate(ctx_, Action("/output/train/1/model.pb")).ok());
  core::il::WriteHotUpdate next = Action("/output/train/1/model.pb");
  next.condition = 14;  // the next round's write: the replaced files kept as versions
  ASSERT_TRUE(WriteHotUpdate(ctx_, next).ok());
  const std::string other =
      Host("/var/lib/sedna/model-hot-update/default/incrementallearningjob/other/model.pb");
  WriteFile(other, "another job's model");

  Status s = RemoveHotUpdateDir(ctx_, "default", "hot");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(stdfs::exists(Host(kJobDir)));
  EXPECT_EQ(ReadFile(other), "another job's model");
  // Again (the GM sends deletes to every node): nothing there is fine.
  s = RemoveHotUpdateDir(ctx_, "default", "hot");
  EXPECT_TRUE(s.ok()) << s.message();
  // tenant-b's job of the same name: this LC wrote nothing there, so nothing is removed.
  s = RemoveHotUpdateDir(ctx_, "tenant-b", "hot");
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(other), "another job's model");
  ExpectHostFilesUntouched();

  // A worker's file in the job's directory stays, and so does the directory.
  ASSERT_TRUE(WriteHotUpdate(ctx_, Action("/output/train/1/model.pb")).ok());
  WriteFile(Host(std::string(kJobDir) + "/worker.log"), "the worker's");
  ASSERT_TRUE(RemoveHotUpdateDir(ctx_, "default", "hot").ok());
  EXPECT_EQ(Entries(Host(kJobDir)), (std::vector<std::string>{"worker.log"}));
}

// The job's directory removed by someone else while this LC still has records of it: nothing to
// remove is success (the missing directory is told by its errno, ENOENT), and the records go.
TEST_P(HotUpdatePathTest, RemoveHotUpdateDirWhenTheJobsDirectoryIsGoneIsOk) {
  ASSERT_TRUE(WriteHotUpdate(ctx_, Action("/output/train/1/model.pb")).ok());
  ASSERT_TRUE(stdfs::is_directory(Host(kJobDir)));
  stdfs::remove_all(Host(kJobDir));
  Status s = RemoveHotUpdateDir(ctx_, "default", "hot");
  EXPECT_TRUE(s.ok()) << s.message();
  // A later write starts from nothing recorded: the job's directory is made again.
  ASSERT_TRUE(WriteHotUpdate(ctx_, Action("/output/train/1/model.pb")).ok());
  EXPECT_TRUE(stdfs::is_directory(Host(kJobDir)));
}

TEST_F(HotUpdateTest, ACopyFromS3) {
  sedna::testing::MotoServer server;
  bool skip = false;
  const std::string problem = server.Start(&skip);
  if (skip) GTEST_SKIP() << problem;
  ASSERT_EQ(problem, "");
  ASSERT_TRUE(server.CreateBucket("hot").ok());
  ctx_.credentials = server.credentials();
  {
    s3::Client c(*ctx_.credentials, ctx_.s3_options);
    WriteFile(dir_ + "/upload", "trained on s3");
    Status s = c.PutFile({"hot", "output/train/1/model.pb"}, dir_ + "/upload");
    ASSERT_TRUE(s.ok()) << s.message();
  }
  core::il::WriteHotUpdate a = Action("s3://hot/output/train/1/model.pb");
  a.copies.resize(1);
  auto r = WriteHotUpdate(ctx_, a);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(ReadFile(Host(std::string(kJobDir) + "/model.pb")), "trained on s3");
  EXPECT_EQ(ReadFile(Host(kConfig)), ModelConfigJson("/model-hot-update/model.pb", r->update_time));
  server.Stop();
  server.RemoveLog();
}

}  // namespace
}  // namespace sedna::storage
