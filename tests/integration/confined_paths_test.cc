// [D:I21.2], [D:I21.7] against the real sedna-lc and the GM emulator (G2): a worker's links
// beside the deploy target (the versions directory, the target itself) and in the job's
// hot-update directory are never followed; a hot-update annotation naming another namespace's
// directory is refused, and deleting the job leaves that directory whole. Workers are simulated
// as lib/sedna posts; files on the host are polled as the inference worker polls them.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cluster_fixture.h"
#include "lc_process.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::Generation;
using core::gm::JobKind;
using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

const std::string kHotDir =
    "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet-detection-demo";
const std::string kTenantBDir =
    "/var/lib/sedna/model-hot-update/tenant-b/incrementallearningjob/helmet-detection-demo";

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

class ConfinedPathsTest : public ClusterFixture {
 protected:
  void World() {
    MakeWorld("sedna-confined-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + kDeployModelUrl, "OLD-DEPLOYED-MODEL");
    WriteFile(rootfs + kIlIndexUrl, "");
    WriteFile(rootfs + kBarrierIndexUrl, "barrier_images/1.jpg 1,1,2,2,1\n");
    // Another tenant's files: a directory of versions, and a 0600 secret.
    stdfs::create_directories(rootfs + "/foreign");
    for (int i = 1; i <= 5; ++i) {
      WriteFile(rootfs + "/foreign/saved_model.pb." + std::to_string(i),
                "foreign " + std::to_string(i));
      WriteFile(rootfs + "/foreign/model.pb." + std::to_string(i), "foreign " + std::to_string(i));
    }
    WriteFile(rootfs + "/secret", "SECRET");
    ::chmod((rootfs + "/secret").c_str(), 0600);
    // SEDNA_LC_BINARY: another build to run these against (e.g. main's, to see them fail there).
    if (const char* b = std::getenv("SEDNA_LC_BINARY")) lc_binary = b;
    StartLc(0, {"--deploy-wait", "30"});
    ASSERT_TRUE(gm->SendTo(kDefaultNode, "insert", DatasetObject()));
  }
  void ExpectForeignUntouched() {
    std::vector<std::string> want;
    for (int i = 1; i <= 5; ++i) want.push_back("model.pb." + std::to_string(i));
    for (int i = 1; i <= 5; ++i) want.push_back("saved_model.pb." + std::to_string(i));
    std::sort(want.begin(), want.end());
    EXPECT_EQ(Entries(rootfs + "/foreign"), want);
    for (const auto& e : Entries(rootfs + "/foreign")) {
      EXPECT_EQ(ReadFile(rootfs + "/foreign/" + e).rfind("foreign ", 0), 0u) << e;
    }
    EXPECT_EQ(ReadFile(rootfs + "/secret"), "SECRET");
  }

  bool Run(GmJob& job, const std::function<bool(const GmJob&)>& done,
           std::chrono::milliseconds timeout = 30s) {
    GmEmulator::RunOptions o;
    o.timeout = timeout;
    o.on_frame = [&](const UpstreamFrame& f) { frames.push_back(f); };
    return gm->RunUntil(job, done, o);
  }
  static std::function<bool(const GmJob&)> At(const std::string& cond) {
    return [cond](const GmJob& j) { return j.LastCondition() == cond; };
  }
  bool SawFrame(const std::string& phase, const std::string& status) const {
    for (const auto& f : frames) {
      std::string p = f.body.value("phase", ""), s = f.body.value("status", "");
      std::transform(p.begin(), p.end(), p.begin(), ::tolower);
      std::transform(s.begin(), s.end(), s.begin(), ::tolower);
      if (p == phase && s == status) return true;
    }
    return false;
  }

  // Round 1 from new samples to the eval report (the new model better: deploy).
  void RoundToEvalReport(GmJob& job, const std::string& model_bytes) {
    AppendFile(rootfs + kIlIndexUrl, IndexLines(1, 1000));
    ASSERT_TRUE(Run(job, At("Train/Running"))) << job.LastCondition();
    const std::string out = "/output/train/1";
    stdfs::create_directories(rootfs + out);
    WriteFile(rootfs + out + "/model.pb", model_bytes);
    const std::string train_report =
        R"({"name":"train-worker-a1","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"train","status":"completed","results":[{"format":"pb","url":")" +
        out + R"(/model.pb","metrics":{"loss":0.5}},{"format":"ckpt","url":")" + out +
        R"(","metrics":{"loss":0.5}}]})";
    EXPECT_EQ(PostWorker("train-worker-a1", train_report), kOk);
    ASSERT_TRUE(Run(job, At("Eval/Running"))) << job.LastCondition();
    const std::string eval_report =
        R"({"name":"eval-worker-b1","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"eval","status":"completed","results":[{"format":"pb","url":")" +
        out +
        R"(/model.pb","metrics":{"precision":[0.9]}},{"format":"pb","url":"/models/deploy_model/saved_model.pb","metrics":{"precision":[0.5]}}]})";
    EXPECT_EQ(PostWorker("eval-worker-b1", eval_report), kOk);
  }

  // Waits (bounded) until the LC's log has `text`: the LC reports a refused write only there.
  // The log is a file: polled.
  bool WaitForLog(const std::string& text, std::chrono::seconds timeout = 20s) {
    for (auto until = GmClock::now() + timeout; GmClock::now() < until;) {
      if (lc->Log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // Waits (bounded) for `path` to hold bytes (the inference worker polls it the same way).
  std::string WaitForFile(const std::string& path) {
    std::string c;
    for (auto until = GmClock::now() + 20s; GmClock::now() < until;) {
      c = stdfs::exists(path) ? ReadFile(path) : "";
      if (!c.empty()) break;
      std::this_thread::sleep_for(20ms);
    }
    return c;
  }

  // sedna-lc rollback-model with the daemon's rootfs and spool; the exit code, its output in *log.
  int Rollback(const std::vector<std::string>& args, std::string* log) {
    std::vector<std::string> all = {"rollback-model", "--rootfs", rootfs,
                                    "--spool-dir=" + tmp + "/db/spool"};
    all.insert(all.end(), args.begin(), args.end());
    const std::string log_path = tmp + "/rollback" + std::to_string(++rollbacks) + ".log";
    LcProcess p(lc_binary, {{"NODENAME", "edge"}}, all, log_path);
    const int rc = p.Wait();
    *log = ReadFile(log_path);
    return rc;
  }

  std::vector<UpstreamFrame> frames;
  int rollbacks = 0;
};

// A Dataset's index is the operator's host path: a link at it (or on its way) is taken as the
// host takes it, from the rootfs and never above it. Main opened the index by its name in the
// LC's own namespace, so a link that climbs out of the rootfs with ".." counted (and fed to the
// train workers) the samples of a file outside it: here 1000 outside, 3 under the rootfs where
// the host would find them.
TEST_F(ConfinedPathsTest, ADatasetIndexLinkIsResolvedAsTheHostResolvesItNeverAboveTheRootfs) {
  MakeWorld("sedna-confined-index-");
  stdfs::create_directories(rootfs + "/data");
  WriteFile(tmp + "/outside.txt", IndexLines(1, 1000));
  stdfs::create_directories(rootfs + tmp);
  WriteFile(rootfs + tmp + "/outside.txt", IndexLines(1, 3));
  ASSERT_EQ(::symlink(("../../../../../../../../../../../../.." + tmp + "/outside.txt").c_str(),
                      (rootfs + kIlIndexUrl).c_str()),
            0);
  if (const char* b = std::getenv("SEDNA_LC_BINARY")) lc_binary = b;
  StartLc(0);
  ASSERT_TRUE(gm->SendTo(kDefaultNode, "insert", DatasetObject()));
  WaitSampleCount(3, kIlDatasetName, "the index link was followed out of the rootfs");
}

// The versions directory replaced by a link to another directory: main kept the old model there
// (as saved_model.pb.6) and pruning deleted the foreign saved_model.pb.1. Now the deploy fails
// naming the link, and nothing is written in the foreign directory.
TEST_F(ConfinedPathsTest, AVersionsDirectoryLinkedElsewhereFailsTheDeployAndWritesNothingThere) {
  ASSERT_NO_FATAL_FAILURE(World());
  stdfs::create_directory_symlink(rootfs + "/foreign",
                                  rootfs + "/models/deploy_model/.sedna-versions");
  GmJob job(JobKind::kIncremental, IlJobObject({}), Generation::kG2);
  SetIlModels(job);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, "NEW-MODEL-ROUND-1"));
  ASSERT_TRUE(Run(job, [&](const GmJob&) { return SawFrame("deploy", "failed"); }))
      << job.LastCondition();
  EXPECT_TRUE(WaitForLog(".sedna-versions is a symbolic link")) << lc->Log();
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "OLD-DEPLOYED-MODEL");
  ExpectForeignUntouched();
  EXPECT_EQ(lc->Stop(), 0);
}

// The deploy target replaced by a link to a 0600 file outside: main kept the file's bytes as
// version 1, which rollback-model restored over the target. Now the link is replaced, nothing is
// kept, and rollback-model has nothing to restore.
TEST_F(ConfinedPathsTest, ADeployTargetLinkedToA0600FileIsNeverKeptNorRestorable) {
  ASSERT_NO_FATAL_FAILURE(World());
  stdfs::remove(rootfs + kDeployModelUrl);
  stdfs::create_symlink(rootfs + "/secret", rootfs + kDeployModelUrl);
  GmJob job(JobKind::kIncremental, IlJobObject({}), Generation::kG2);
  SetIlModels(job);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, "NEW-MODEL-ROUND-1"));
  ASSERT_TRUE(Run(job, [&](const GmJob&) { return SawFrame("deploy", "ready"); }))
      << job.LastCondition();
  EXPECT_FALSE(stdfs::is_symlink(rootfs + kDeployModelUrl));
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
  for (const auto& e : Entries(rootfs + "/models/deploy_model/.sedna-versions")) {
    EXPECT_NE(ReadFile(rootfs + "/models/deploy_model/.sedna-versions/" + e), "SECRET") << e;
  }
  std::string log;
  EXPECT_EQ(Rollback({kDeployModelUrl, "--list"}, &log), 0) << log;
  EXPECT_NE(log.find("no versions of " + std::string(kDeployModelUrl) + " are kept"),
            std::string::npos)
      << log;
  EXPECT_EQ(Rollback({kDeployModelUrl, "--version", "1"}, &log), 2) << log;
  EXPECT_NE(log.find("is not kept"), std::string::npos) << log;
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
  ExpectForeignUntouched();
  EXPECT_EQ(lc->Stop(), 0);
}

// A hot-update job in `default` whose annotation names tenant-b's path: main overwrote tenant-b's
// model_config.json, and deleting the job removed tenant-b's whole directory.
TEST_F(ConfinedPathsTest, AHotUpdateAnnotationNamingAnotherNamespaceIsRefusedAndNeverRemoved) {
  ASSERT_NO_FATAL_FAILURE(World());
  stdfs::create_directories(rootfs + kTenantBDir);
  WriteFile(rootfs + kTenantBDir + "/model_config.json", "tenant-b's config");
  WriteFile(rootfs + kTenantBDir + "/model.pb", "tenant-b's model");
  IlJobSpec spec;
  spec.hot_update = true;
  GmJob job(JobKind::kIncremental, IlJobObject(spec), Generation::kG2);
  job.SetHotUpdateConfig(kTenantBDir + "/model_config.json");
  SetIlModels(job);
  job.SetPod(Stage::kDeploy, core::gm::PodPhase::kRunning);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, "HOT-MODEL-ROUND-1"));
  ASSERT_TRUE(Run(job, At("Deploy/Running"))) << job.LastCondition();
  EXPECT_TRUE(WaitForLog("is not inside the job's hot-update directory " + kHotDir + "/"))
      << lc->Log();
  EXPECT_EQ(ReadFile(rootfs + kTenantBDir + "/model_config.json"), "tenant-b's config");
  EXPECT_EQ(ReadFile(rootfs + kTenantBDir + "/model.pb"), "tenant-b's model");
  // The delete: only what this LC wrote for this job is removed (nothing, here).
  gm->Sync(job, true);
  EXPECT_TRUE(WaitForLog("removed the hot-update files this LC wrote")) << lc->Log();
  EXPECT_EQ(Entries(rootfs + kTenantBDir),
            (std::vector<std::string>{"model.pb", "model_config.json"}));
  EXPECT_EQ(ReadFile(rootfs + kTenantBDir + "/model_config.json"), "tenant-b's config");
  EXPECT_EQ(lc->Stop(), 0);
}

// Links the inference worker planted in its (read-write) hot-update directory: main copied the
// secret into the linked versions directory (model.pb.6) and pruning deleted the foreign
// model.pb.1. Now the link at model.pb is replaced, not kept, and nothing is written through the
// linked versions directory.
TEST_F(ConfinedPathsTest, LinksPlantedInTheHotUpdateDirectoryAreNeverFollowed) {
  ASSERT_NO_FATAL_FAILURE(World());
  stdfs::create_directories(rootfs + kHotDir);
  stdfs::create_directory_symlink(rootfs + "/foreign", rootfs + kHotDir + "/.sedna-versions");
  stdfs::create_symlink(rootfs + "/secret", rootfs + kHotDir + "/model.pb");
  IlJobSpec spec;
  spec.hot_update = true;
  GmJob job(JobKind::kIncremental, IlJobObject(spec), Generation::kG2);
  SetIlModels(job);
  job.SetPod(Stage::kDeploy, core::gm::PodPhase::kRunning);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, "HOT-MODEL-ROUND-1"));
  ASSERT_TRUE(Run(job, At("Deploy/Running"))) << job.LastCondition();
  EXPECT_NE(WaitForFile(rootfs + kHotDir + "/model_config.json"), "");
  // The write is done (and recorded) when the LC says so; only then is the job deleted.
  EXPECT_TRUE(WaitForLog("hot update written")) << lc->Log();
  EXPECT_FALSE(stdfs::is_symlink(rootfs + kHotDir + "/model.pb"));
  EXPECT_EQ(ReadFile(rootfs + kHotDir + "/model.pb"), "HOT-MODEL-ROUND-1");
  ExpectForeignUntouched();
  // Deleting the job removes the files this LC wrote, never through the links.
  gm->Sync(job, true);
  EXPECT_TRUE(WaitForLog("removed the hot-update files this LC wrote")) << lc->Log();
  EXPECT_EQ(Entries(rootfs + kHotDir), (std::vector<std::string>{".sedna-versions"}));
  ExpectForeignUntouched();
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
}  // namespace sedna::testing
