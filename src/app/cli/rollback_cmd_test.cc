// `sedna-lc rollback-model`: argument parsing, listing and restoring kept model versions (run
// in-process; tests/integration/rollback_model_test.cc runs the binary).
#include "app/cli/rollback_cmd.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/storage/hot_update.h"
#include "adapters/storage/model_versions.h"
#include "adapters/storage/storage.h"

namespace sedna::app {
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

Result<RollbackArgs> Parse(std::vector<std::string> args, std::vector<std::string>* rest) {
  auto r = TakeRollbackArgs(args);
  if (rest) *rest = args;
  return r;
}

TEST(RollbackArgsTest, TakesThePathAndVersionAndLeavesDaemonFlags) {
  std::vector<std::string> rest;
  auto r = Parse({"--rootfs", "/host", "/models/m.pb", "--version", "3", "--log-json"}, &rest);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->target, "/models/m.pb");
  EXPECT_EQ(r->version, 3);
  EXPECT_EQ(rest, (std::vector<std::string>{"--rootfs", "/host", "--log-json"}));
  r = Parse({"/models/m.pb", "--list"}, &rest);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->version, 0);
  r = Parse({"--version=12", "/models/m.pb"}, &rest);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->version, 12);
}

TEST(RollbackArgsTest, BadArgumentsAreNamed) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"/m.pb", "--version", "x1"}, "--version: \"x1\" is not a version number"},
      {{"/m.pb", "--version", "0"}, "--version: \"0\" is not a version number"},
      {{"/m.pb", "--version"}, "--version: a version number is required"},
      {{"/m.pb", "--list", "--version", "2"}, "--list and --version: choose one"},
      {{}, "<deploy path> is required"},
      {{"/m.pb", "/n.pb"}, "unexpected argument \"/n.pb\""},
      {{"models/m.pb"}, "\"models/m.pb\" is not an absolute host path"},
  };
  for (const auto& [args, message] : cases) {
    auto r = Parse(args, nullptr);
    ASSERT_FALSE(r.ok()) << message;
    EXPECT_NE(r.message().find(message), std::string::npos) << r.message();
  }
}

class RollbackCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (stdfs::temp_directory_path() / "rollback_cmd_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    cfg_.rootfs = dir_ + "/rootfs";
    cfg_.spool_dir = dir_;  // the ledger of kept versions: <spool>/ledger, as ctx's below
    storage::Context ctx;
    ctx.rootfs = cfg_.rootfs;
    ctx.staging_dir = dir_ + "/staging";
    ctx.job_root = "/out";  // the deploys' model sources lie beneath it
    // model-0 was there first; two deploys: versions 1 = model-0, 2 = model-1; target model-2.
    WriteFile(cfg_.rootfs + "/models/deploy/m.pb", "model-0");
    for (int i = 1; i <= 2; ++i) {
      const std::string src = "/out/" + std::to_string(i) + "/m.pb";
      WriteFile(cfg_.rootfs + src, "model-" + std::to_string(i));
      auto r = storage::DeployModel(ctx, src, "/models/deploy/m.pb");
      ASSERT_TRUE(r.ok()) << r.message();
    }
  }
  void TearDown() override {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
  }
  int Run(const std::string& target, int64_t version) {
    out_.str("");
    err_.str("");
    return RunRollbackCommand(cfg_, {target, version}, out_, err_);
  }
  std::string Target() const { return ReadFile(cfg_.rootfs + "/models/deploy/m.pb"); }

  std::string dir_;
  Config cfg_;
  std::ostringstream out_, err_;
};

TEST_F(RollbackCommandTest, ListsTheCurrentModelAndTheKeptVersions) {
  ASSERT_EQ(Run("/models/deploy/m.pb", 0), 0) << err_.str();
  const std::string out = out_.str();
  const std::string vdir = cfg_.rootfs + "/models/deploy/.sedna-versions/";
  EXPECT_EQ(out.rfind("current  7 ", 0), 0u) << out;
  EXPECT_NE(out.find("version  size        written\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n1        7           "), std::string::npos) << out;
  EXPECT_NE(out.find("  " + vdir + "m.pb.1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n2        7           "), std::string::npos) << out;
  EXPECT_EQ(out.find("\n3 "), std::string::npos) << out;
  // A target without versions says so.
  ASSERT_EQ(Run("/models/other.pb", 0), 0) << err_.str();
  EXPECT_NE(out_.str().find("no versions of /models/other.pb are kept"), std::string::npos)
      << out_.str();
}

// [D:I21.8]c: the undo hint is a command to paste; a deploy target from a GM object stays
// one quoted word in it.
TEST_F(RollbackCommandTest, TheUndoHintQuotesTheTarget) {
  const std::string target = "/models/a;touch${IFS}x;#/deploy.pb";
  storage::Context ctx;
  ctx.rootfs = cfg_.rootfs;
  ctx.staging_dir = dir_ + "/staging";
  ctx.job_root = "/out";
  WriteFile(cfg_.rootfs + target, "model-0");
  ASSERT_TRUE(storage::DeployModel(ctx, "/out/1/m.pb", target).ok());
  ASSERT_EQ(Run(target, 1), 0) << err_.str();
  EXPECT_NE(out_.str().find("(undo: sedna-lc rollback-model '/models/a;touch${IFS}x;#/deploy.pb' "
                            "--version 2)"),
            std::string::npos)
      << out_.str();
}

TEST_F(RollbackCommandTest, RestoresAVersionAndKeepsTheCurrentOneToUndo) {
  ASSERT_EQ(Run("/models/deploy/m.pb", 1), 0) << err_.str();
  EXPECT_EQ(Target(), "model-0");
  EXPECT_NE(out_.str().find("the model it replaced is kept as version 3 (undo: sedna-lc "
                            "rollback-model /models/deploy/m.pb --version 3)"),
            std::string::npos)
      << out_.str();
  EXPECT_EQ(ReadFile(cfg_.rootfs + "/models/deploy/.sedna-versions/m.pb.3"), "model-2");
  ASSERT_EQ(Run("/models/deploy/m.pb", 3), 0) << err_.str();
  EXPECT_EQ(Target(), "model-2");
}

TEST_F(RollbackCommandTest, AVersionThatIsNotKeptIsExitCode2AndChangesNothing) {
  EXPECT_EQ(Run("/models/deploy/m.pb", 7), 2);
  EXPECT_NE(err_.str().find("version 7 of /models/deploy/m.pb is not kept (kept: 1, 2)"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(Target(), "model-2");
  EXPECT_FALSE(stdfs::exists(cfg_.rootfs + "/models/deploy/.sedna-versions/m.pb.3"));
}

TEST_F(RollbackCommandTest, S3IsExitCode2WithWhereItsVersionsAre) {
  EXPECT_EQ(Run("s3://bucket/deploy/m.pb", 0), 2);
  EXPECT_NE(err_.str().find("s3://bucket/deploy/.sedna-versions/m.pb.1"), std::string::npos)
      << err_.str();
}

// A hot-update model: restoring it also rewrites model_config.json beside it with a fresh time, so
// the running inference worker reloads (it polls the config, not the model file).
TEST_F(RollbackCommandTest, AHotUpdateModelRewritesItsConfigSoTheWorkerReloads) {
  const std::string dir = "/var/lib/sedna/model-hot-update/default/incrementallearningjob/j";
  storage::Context ctx;
  ctx.rootfs = cfg_.rootfs;
  ctx.staging_dir = dir_ + "/staging";
  ctx.job_root = "/out";
  for (int i = 1; i <= 2; ++i) {
    core::il::WriteHotUpdate w;
    w.job_namespace = "default";
    w.job_name = "j";
    w.config_path = dir + "/model_config.json";
    w.model_path = "/model-hot-update/m.pb";
    w.copies = {{"/out/" + std::to_string(i) + "/m.pb", dir + "/m.pb"}};
    auto r = storage::WriteHotUpdate(ctx, w);
    ASSERT_TRUE(r.ok()) << r.message();
  }
  const std::string config = cfg_.rootfs + dir + "/model_config.json";
  const std::string before = ReadFile(config);
  ASSERT_EQ(Run(dir + "/m.pb", 1), 0) << err_.str();
  EXPECT_EQ(ReadFile(cfg_.rootfs + dir + "/m.pb"), "model-1");
  const std::string after = ReadFile(config);
  EXPECT_NE(after, before) << "model_update_time unchanged: the worker would not reload";
  EXPECT_NE(after.find("\"model_path\": \"/model-hot-update/m.pb\""), std::string::npos) << after;
  EXPECT_NE(out_.str().find("inference worker reloads"), std::string::npos) << out_.str();
  // A model outside the hot-update directory has no config to rewrite.
  ASSERT_EQ(Run("/models/deploy/m.pb", 1), 0) << err_.str();
  EXPECT_EQ(out_.str().find("rewrote"), std::string::npos) << out_.str();
}

// Standalone ([D:I23.4]c): its hot-update directory is beside its database, not the
// daemon's --hot-update-dir; rollback-model given the same --db rewrites that config too.
TEST_F(RollbackCommandTest, AStandaloneHotUpdateModelRewritesItsConfig) {
  cfg_.db_path = "/home/u/lc/database.db";
  const std::string dir = "/home/u/lc/model-hot-update/default/incrementallearningjob/j";
  storage::Context ctx;
  ctx.rootfs = cfg_.rootfs;
  ctx.staging_dir = dir_ + "/staging";
  ctx.job_root = "/out";  // the confined-path API: sources lie beneath the job's root
  ctx.hot_update_dir = "/home/u/lc/model-hot-update";  // as `sedna-lc standalone --db` puts it
  for (int i = 1; i <= 2; ++i) {
    core::il::WriteHotUpdate w;
    w.job_namespace = "default";
    w.job_name = "j";
    w.config_path = dir + "/model_config.json";
    w.model_path = "/model-hot-update/m.pb";
    w.copies = {{"/out/" + std::to_string(i) + "/m.pb", dir + "/m.pb"}};
    auto r = storage::WriteHotUpdate(ctx, w);
    ASSERT_TRUE(r.ok()) << r.message();
  }
  const std::string config = cfg_.rootfs + dir + "/model_config.json";
  const std::string before = ReadFile(config);
  ASSERT_EQ(Run(dir + "/m.pb", 1), 0) << err_.str();
  EXPECT_EQ(ReadFile(cfg_.rootfs + dir + "/m.pb"), "model-1");
  const std::string after = ReadFile(config);
  EXPECT_NE(after, before) << "model_update_time unchanged: the worker would not reload";
  EXPECT_NE(after.find("\"model_path\": \"/model-hot-update/m.pb\""), std::string::npos) << after;
  EXPECT_NE(out_.str().find("rewrote " + dir + "/model_config.json"), std::string::npos)
      << out_.str();
}

}  // namespace
}  // namespace sedna::app
