// `sedna-lc rollback-model <deploy path> [--list] [--version N]` run as a process: it reads the
// versions deploys keep in <dir>/.sedna-versions/<name>.<n> under the rootfs (those the spool's
// ledger records), restores one over the
// target (keeping the current model as the next version) and stops bad arguments with exit code 2
// and a message naming them.
#include <gtest/gtest.h>

#include <filesystem>

#include "adapters/storage/model_versions.h"
#include "lc_process.h"

namespace sedna::testing {
namespace {

class RollbackModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir("sedna-rollback-");
    rootfs_ = tmp_ + "/rootfs";
    // Two deploys over an initial model, as the daemon makes them (its spool's ledger records the
    // versions: only those are versions): 1 = model-0, 2 = model-1!, the target model-2.
    storage::Context ctx;
    ctx.rootfs = rootfs_;
    ctx.staging_dir = tmp_ + "/spool/staging";
    ctx.job_root = "/out";  // the deploys' model sources lie beneath it
    std::filesystem::create_directories(rootfs_ + "/models/deploy");
    std::filesystem::create_directories(rootfs_ + "/out/1");
    std::filesystem::create_directories(rootfs_ + "/out/2");
    WriteFile(rootfs_ + "/models/deploy/model.pkl", "model-0");
    WriteFile(rootfs_ + "/out/1/model.pkl", "model-1!");
    WriteFile(rootfs_ + "/out/2/model.pkl", "model-2");
    for (int i = 1; i <= 2; ++i) {
      auto r = storage::DeployModel(ctx, "/out/" + std::to_string(i) + "/model.pkl",
                                    "/models/deploy/model.pkl");
      ASSERT_TRUE(r.ok()) << r.message();
    }
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  // Runs sedna-lc rollback-model with `args`; returns the exit code, the output in *log.
  int Run(const std::vector<std::string>& args, std::string* log) {
    std::vector<std::string> all = {"rollback-model", "--spool-dir=" + tmp_ + "/spool"};
    all.insert(all.end(), args.begin(), args.end());
    const std::string log_path = tmp_ + "/run" + std::to_string(++runs_) + ".log";
    LcProcess lc(std::string(SEDNA_BINARY_DIR) + "/sedna-lc", {{"NODENAME", "edge"}}, all,
                 log_path);
    const int rc = lc.Wait();
    *log = ReadFile(log_path);
    return rc;
  }
  std::string Target() { return ReadFile(rootfs_ + "/models/deploy/model.pkl"); }

  std::string tmp_, rootfs_;
  int runs_ = 0;
};

TEST_F(RollbackModelTest, ListsRestoresAndUndoes) {
  std::string log;
  ASSERT_EQ(Run({"--rootfs", rootfs_, "/models/deploy/model.pkl", "--list"}, &log), 0) << log;
  EXPECT_NE(log.find("current  7 "), std::string::npos) << log;
  EXPECT_NE(log.find("\n1        7           "), std::string::npos) << log;
  EXPECT_NE(log.find("\n2        8           "), std::string::npos) << log;

  ASSERT_EQ(Run({"--rootfs", rootfs_, "/models/deploy/model.pkl", "--version", "2"}, &log), 0)
      << log;
  EXPECT_EQ(Target(), "model-1!");
  EXPECT_NE(log.find("the model it replaced is kept as version 3"), std::string::npos) << log;
  EXPECT_EQ(ReadFile(rootfs_ + "/models/deploy/.sedna-versions/model.pkl.3"), "model-2");

  // ROOTFS_MOUNT_DIR works like --rootfs; undo the restore.
  std::vector<std::string> args = {"rollback-model", "--spool-dir=" + tmp_ + "/spool",
                                   "/models/deploy/model.pkl", "--version=3"};
  LcProcess lc(std::string(SEDNA_BINARY_DIR) + "/sedna-lc",
               {{"NODENAME", "edge"}, {"ROOTFS_MOUNT_DIR", rootfs_}}, args, tmp_ + "/env.log");
  ASSERT_EQ(lc.Wait(), 0) << ReadFile(tmp_ + "/env.log");
  EXPECT_EQ(Target(), "model-2");
  EXPECT_EQ(ReadFile(rootfs_ + "/models/deploy/.sedna-versions/model.pkl.4"), "model-1!");
}

TEST_F(RollbackModelTest, BadArgumentsAreNamedWithExitCode2) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--rootfs", rootfs_, "/models/deploy/model.pkl", "--version", "9"},
       "version 9 of /models/deploy/model.pkl is not kept (kept: 1, 2)"},
      {{"--rootfs", rootfs_, "/models/deploy/model.pkl", "--version", "two"},
       "--version: \"two\" is not a version number"},
      {{"--rootfs", rootfs_}, "<deploy path> is required"},
      {{"--rootfs", rootfs_, "/models/deploy/model.pkl", "--bogus"}, "--bogus"},
      {{"--rootfs", rootfs_, "s3://b/deploy/model.pkl"},
       "s3://b/deploy/.sedna-versions/model.pkl.1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    std::string log;
    EXPECT_EQ(Run(c.args, &log), 2) << log;
    EXPECT_NE(log.find(c.message), std::string::npos) << log;
    EXPECT_EQ(Target(), "model-2");
  }
  EXPECT_FALSE(std::filesystem::exists(rootfs_ + "/models/deploy/.sedna-versions/model.pkl.3"));
}

}  // namespace
}  // namespace sedna::testing
