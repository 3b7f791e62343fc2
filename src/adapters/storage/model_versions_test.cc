// Model versions against links a worker can plant beside a deploy target ([D:I21.2]), with
// both confined resolvers: the versions directory replaced by a link to another directory, the
// target replaced by a link to a 0600 file, files planted in the versions directory.
#include "adapters/storage/model_versions.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sedna::storage {
namespace {

namespace stdfs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  stdfs::create_directories(stdfs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << data;
}

constexpr const char* kTarget = "/models/deploy.pb";

class ModelVersionsLinkTest : public ::testing::TestWithParam<fs::Resolver> {
 protected:
  void SetUp() override {
    if (GetParam() == fs::Resolver::kOpenat2 && !fs::KernelHasOpenat2()) {
      GTEST_SKIP() << "no openat2 on this kernel";
    }
    fs::SetResolver(GetParam());
    std::string tmpl = (stdfs::temp_directory_path() / "model_versions_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    ctx_.rootfs = dir_ + "/rootfs";
    ctx_.staging_dir = dir_ + "/spool/staging";
    ctx_.job_root = "/out";  // the model sources' root (storage::Context::job_root)
    WriteFile(Host(kTarget), "initial model");
    for (int i = 1; i <= 7; ++i) {
      WriteFile(Host("/out/" + std::to_string(i) + "/model.pb"), "trained " + std::to_string(i));
    }
    // Another tenant's files: a directory of its versions, and a 0600 secret.
    for (int i = 1; i <= 5; ++i) {
      WriteFile(Host("/foreign/deploy.pb." + std::to_string(i)), "foreign " + std::to_string(i));
    }
    WriteFile(Host("/secret"), "secret bytes");
    ::chmod(Host("/secret").c_str(), 0600);
  }
  void TearDown() override {
    fs::SetResolver(fs::Resolver::kAuto);
    std::error_code ec;
    if (!dir_.empty()) stdfs::remove_all(dir_, ec);
  }
  std::string Host(const std::string& p) const { return ctx_.rootfs + p; }
  std::vector<std::string> Entries(const std::string& dir) const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : stdfs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
  Result<DeployResult> Deploy(int i) {
    return DeployModel(ctx_, "/out/" + std::to_string(i) + "/model.pb", kTarget);
  }
  void ExpectForeignUntouched() {
    EXPECT_EQ(Entries(Host("/foreign")),
              (std::vector<std::string>{"deploy.pb.1", "deploy.pb.2", "deploy.pb.3", "deploy.pb.4",
                                        "deploy.pb.5"}));
    for (int i = 1; i <= 5; ++i) {
      EXPECT_EQ(ReadFile(Host("/foreign/deploy.pb." + std::to_string(i))),
                "foreign " + std::to_string(i));
    }
    EXPECT_EQ(ReadFile(Host("/secret")), "secret bytes");
  }

  std::string dir_;
  Context ctx_;
};

INSTANTIATE_TEST_SUITE_P(Resolvers, ModelVersionsLinkTest,
                         ::testing::Values(fs::Resolver::kWalk, fs::Resolver::kOpenat2),
                         [](const auto& info) {
                           return info.param == fs::Resolver::kWalk ? "Walk" : "Openat2";
                         });

// main: the version went into /foreign as deploy.pb.6 and pruning deleted /foreign/deploy.pb.1.
TEST_P(ModelVersionsLinkTest, AVersionsDirectoryLinkedElsewhereFailsTheDeployAndWritesNothing) {
  stdfs::create_symlink(Host("/foreign"), Host("/models/.sedna-versions"));
  auto r = Deploy(1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find(".sedna-versions"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("symbolic link"), std::string::npos) << r.message();
  EXPECT_EQ(ReadFile(Host(kTarget)), "initial model");  // the target untouched
  ExpectForeignUntouched();
  auto list = ListModelVersions(ctx_, kTarget);
  ASSERT_TRUE(list.ok()) << list.message();
  EXPECT_TRUE(list->empty());
}

// main: the secret's bytes were kept as version 1, which rollback-model restored over the target.
TEST_P(ModelVersionsLinkTest, ATargetLinkedToA0600FileIsReplacedAndNeverKept) {
  ASSERT_TRUE(Deploy(1).ok());  // version 1: the initial model
  stdfs::remove(Host(kTarget));
  stdfs::create_symlink(Host("/secret"), Host(kTarget));
  auto r = Deploy(2);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->kept_version, 0);
  EXPECT_NE(r->warning.find("symbolic link"), std::string::npos) << r->warning;
  EXPECT_FALSE(stdfs::is_symlink(Host(kTarget)));
  EXPECT_EQ(ReadFile(Host(kTarget)), "trained 2");
  auto list = ListModelVersions(ctx_, kTarget);
  ASSERT_TRUE(list.ok()) << list.message();
  ASSERT_EQ(list->size(), 1u);
  for (const auto& e : Entries(Host("/models/.sedna-versions"))) {
    EXPECT_NE(ReadFile(Host("/models/.sedna-versions/" + e)), "secret bytes") << e;
  }
  // A link to a directory or a FIFO as the target: not kept either.
  ASSERT_EQ(::mkfifo(Host("/models/fifo.pb").c_str(), 0600), 0);
  auto f = DeployModel(ctx_, "/out/3/model.pb", "/models/fifo.pb");
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->kept_version, 0);
  EXPECT_EQ(ReadFile(Host("/models/fifo.pb")), "trained 3");
  ExpectForeignUntouched();
}

// Files a worker put in the versions directory are not this LC's: never listed, restored or
// pruned; a version swapped for a link afterwards is not restored.
TEST_P(ModelVersionsLinkTest, PlantedVersionsAreNeitherListedNorRestoredNorPruned) {
  WriteFile(Host("/models/.sedna-versions/deploy.pb.1"), "planted 1");
  stdfs::create_symlink(Host("/secret"), Host("/models/.sedna-versions/deploy.pb.2"));
  auto none = ListModelVersions(ctx_, kTarget);
  ASSERT_TRUE(none.ok()) << none.message();
  EXPECT_TRUE(none->empty());
  auto refused = RestoreModelVersion(ctx_, kTarget, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("is not kept"), std::string::npos) << refused.message();
  EXPECT_EQ(ReadFile(Host(kTarget)), "initial model");

  for (int i = 1; i <= 7; ++i) ASSERT_TRUE(Deploy(i).ok()) << i;
  auto list = ListModelVersions(ctx_, kTarget);
  ASSERT_TRUE(list.ok()) << list.message();
  ASSERT_EQ(list->size(), static_cast<size_t>(kKeptModelVersions));
  for (const auto& v : *list) {
    EXPECT_GE(v.number, 3);  // 1 and 2 were taken by the planted names
    EXPECT_EQ(ReadFile(v.path).rfind("planted", 0), std::string::npos) << v.path;
  }
  // The planted entries were not pruned (not this LC's); this LC's oldest were.
  EXPECT_EQ(ReadFile(Host("/models/.sedna-versions/deploy.pb.1")), "planted 1");
  EXPECT_TRUE(stdfs::is_symlink(Host("/models/.sedna-versions/deploy.pb.2")));
  EXPECT_FALSE(stdfs::exists(Host("/models/.sedna-versions/deploy.pb.3")));

  // A kept version swapped for a link to the secret: not restored.
  const int64_t n = list->back().number;
  const std::string v = Host("/models/.sedna-versions/deploy.pb." + std::to_string(n));
  stdfs::remove(v);
  stdfs::create_symlink(Host("/secret"), v);
  auto swapped = RestoreModelVersion(ctx_, kTarget, n);
  ASSERT_FALSE(swapped.ok());
  EXPECT_EQ(ReadFile(Host(kTarget)), "trained 7");
  ExpectForeignUntouched();
}

}  // namespace
}  // namespace sedna::storage
