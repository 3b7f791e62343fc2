// End to end, cluster mode: the real sedna-lc binary against the GM emulator (websocket on
// 127.0.0.1) and worker simulators posting like lib/sedna. Two full IL rounds (deploy, then
// no deploy); every upstream message is compared byte for byte with docs/protocol.md §P3.3, and
// every file the LC writes is checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;

class IlClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-il-");
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + "/models/deploy_model/saved_model.pb",
              "OLD-DEPLOYED-MODEL-BYTES-THAT-ARE-LONGER-THAN-THE-NEW-ONES");
    WriteFile(rootfs + "/data/train_data.txt", "");
    StartLc();
  }

  UpstreamFrame NextJob() {
    auto f = gm->Next("IncrementalLearningJob");
    if (!f) throw std::runtime_error("no IncrementalLearningJob message from the LC");
    EXPECT_EQ(f->header.ns, "default");
    EXPECT_EQ(f->header.resource_name, "helmet-detection-demo");
    EXPECT_EQ(f->header.operation, "status");
    return *f;
  }

  // Every Dataset status is the job's dataset's (this test sends no other); waits for count n.
  void WaitSampleCount(int64_t n) {
    for (;;) {
      auto f = gm->Next("Dataset");
      ASSERT_TRUE(f) << "numberOfSamples " << n << " never reported";
      EXPECT_EQ(f->header.resource_name, "incremental-dataset");
      if (f->body.at("numberOfSamples").get<int64_t>() == n) return;
    }
  }

  // Sends the job (and the model §P4.3 says goes with it) when the GM would.
  void Sync(GmJob& job) {
    for (const Json& obj : IlDownstream(job)) gm->Send("insert", obj);
  }
};

TEST_F(IlClusterTest, TwoRoundsDeployThenKeep) {
  EXPECT_EQ(gm->server().last_node_name(), "edge-node");
  gm->Send("insert", DatasetObject());
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject());
  ASSERT_EQ(job.LastCondition(), "Train/Waiting");
  Sync(job);

  // ---- round 1: 1000 samples, trigger num_of_samples > 500 ----
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  WaitSampleCount(1000);
  UpstreamFrame il1 = NextJob();
  EXPECT_EQ(
      il1.content,
      R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/models/base_model"}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"},"output":null})");
  auto [train1, eval1] = Split(1, 1000, 0.8);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.txt"), train1);
  for (const char* d :
       {"/output/data/train", "/output/data/eval", "/output/train", "/output/eval"}) {
    EXPECT_TRUE(stdfs::is_directory(rootfs + d)) << d << " must exist before Ready (§P4.5)";
  }
  // GM resync re-sends ([P:B4]): no second Ready.
  gm->Send("insert", job.Object());
  auto actions = job.Report(il1.content);
  ASSERT_EQ(actions.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<core::gm::CreatePod>(actions[0]));
  EXPECT_EQ(std::get<core::gm::CreatePod>(actions[0]).stage, Stage::kTrain);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  EXPECT_EQ(job.LastCondition(), "Train/Running");
  Sync(job);

  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/model.pb", "NEW-MODEL-ROUND-1");
  EXPECT_EQ(
      PostWorker(
          "train-worker-h4k9q",
          R"({"name": "train-worker-h4k9q", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": 0.8113}}, {"format": "ckpt", "url": "/output/train/1", "metrics": {"loss": 0.8113}}]})"),
      kOk);
  UpstreamFrame il2 = NextJob();
  EXPECT_EQ(
      il2.content,
      R"({"phase":"train","status":"completed","output":{"models":[{"format":"pb","metrics":{"loss":0.8113},"url":"/output/train/1/model.pb"},{"format":"ckpt","metrics":{"loss":0.8113},"url":"/output/train/1"}],"ownerInfo":null}})");
  job.Report(il2.content);
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  EXPECT_EQ(job.LastCondition(), "Eval/Waiting");
  Sync(job);  // job first, deploy Model after it (§P4.3: models may arrive after the job)

  UpstreamFrame il3 = NextJob();
  EXPECT_EQ(
      il3.content,
      R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}],"dataURL":"/output/data/eval/1/data.txt"},"output":null})");
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.txt"), eval1);
  actions = job.Report(il3.content);
  ASSERT_EQ(actions.size(), 1u);
  job.SetPod(Stage::kEval, PodPhase::kRunning);
  Sync(job);
  EXPECT_EQ(
      PostWorker(
          "eval-worker-2bq7d",
          R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"recall": [0.77, 0.70, 0.61, 0.48], "precision": [0.81, 0.74, 0.69, 0.52]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"recall": [0.62, 0.66, 0.55, 0.37], "precision": [0.66, 0.71, 0.58, 0.40]}}]})"),
      kOk);
  UpstreamFrame il4 = NextJob();
  EXPECT_EQ(
      il4.content,
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pb","metrics":{"precision":[0.81,0.74,0.69,0.52],"recall":[0.77,0.70,0.61,0.48]},"url":"/output/train/1/model.pb"},{"format":"pb","metrics":{"precision":[0.66,0.71,0.58,0.40],"recall":[0.62,0.66,0.55,0.37]},"url":"/models/deploy_model/saved_model.pb"}],"ownerInfo":null}})");
  UpstreamFrame il5 = NextJob();
  EXPECT_EQ(
      il5.content,
      R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}]},"output":null})");
  // [P:B12]/B13: the deploy target got the rootfs prefix and holds exactly the new bytes.
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  job.Report(il4.content);
  actions = job.Report(il5.content);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
  job.SetPod(Stage::kDeploy, PodPhase::kRunning);
  EXPECT_EQ(job.LastCondition(), "Train/Waiting");
  Sync(job);

  // ---- round 2: 700 more samples; the new model is worse, so it is not deployed ----
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1001, 1700));
  WaitSampleCount(1700);
  UpstreamFrame r2il1 = NextJob();
  EXPECT_EQ(
      r2il1.content,
      R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/output/train/1"}],"dataURL":"/output/data/train/2/data.txt","outputDir":"/output/train/2"},"output":null})");
  auto [train2, eval2] = Split(1001, 1700, 0.8);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.txt"), train2);
  job.Report(r2il1.content);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  Sync(job);
  stdfs::create_directories(rootfs + "/output/train/2");
  WriteFile(rootfs + "/output/train/2/model.pb", "NEW-MODEL-ROUND-2");
  PostWorker(
      "train-worker-a1b2c",
      R"({"name": "train-worker-a1b2c", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "train", "status": "completed", "results": [{"format": "pb", "url": "/output/train/2/model.pb", "metrics": {"loss": 0.5}}, {"format": "ckpt", "url": "/output/train/2", "metrics": {"loss": 0.5}}]})");
  job.Report(NextJob().content);
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  Sync(job);
  UpstreamFrame r2il3 = NextJob();
  EXPECT_EQ(
      r2il3.content,
      R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/2/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}],"dataURL":"/output/data/eval/2/data.txt"},"output":null})");
  // [P:B2]: the eval set is the eval windows of the last rounds, each sample once.
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/2/data.txt"), eval1 + eval2);
  job.Report(r2il3.content);
  job.SetPod(Stage::kEval, PodPhase::kRunning);
  Sync(job);
  PostWorker(
      "eval-worker-x9y8z",
      R"({"name": "eval-worker-x9y8z", "namespace": "default", "ownerName": "helmet-detection-demo", "ownerKind": "incrementallearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pb", "url": "/output/train/2/model.pb", "metrics": {"precision": [0.70, 0.70]}}, {"format": "pb", "url": "/models/deploy_model/saved_model.pb", "metrics": {"precision": [0.81, 0.74]}}]})");
  job.Report(NextJob().content);  // IL-4
  UpstreamFrame il7 = NextJob();
  EXPECT_EQ(il7.content, R"({"phase":"Deploy","status":"Completed","output":null})");
  EXPECT_EQ(ReadFile(rootfs + "/models/deploy_model/saved_model.pb"), "NEW-MODEL-ROUND-1");
  job.Report(il7.content);
  EXPECT_EQ(job.LastCondition(), "Train/Waiting");
  Sync(job);

  // Nothing else: no duplicate Ready after any of the re-sends.
  EXPECT_FALSE(gm->Next("IncrementalLearningJob", std::chrono::milliseconds(500)));
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace
// §P4.5: the output directories exist before any Ready, also for an outputDir the GM changes on a
// running job. They are made on the pool (output_dirs.h), so what is checked is the contract: when
// the Ready of the first round after the change arrives, the new outputDir's directories exist.
TEST_F(IlClusterTest, ChangedOutputDirGetsItsDirectories) {
  WriteFile(rootfs + kBarrierIndexUrl, "barrier_images/1.jpg 1,1,2,2,1\n");
  gm->Send("insert", DatasetObject());
  GmJob job(core::gm::JobKind::kIncremental, IlJobObject());
  Sync(job);
  Barrier();
  IlJobSpec moved;
  moved.output_dir = "/output2";
  GmJob moved_job(core::gm::JobKind::kIncremental, IlJobObject(moved));
  Sync(moved_job);
  Barrier();
  AppendFile(rootfs + "/data/train_data.txt", IndexLines(1, 1000));
  UpstreamFrame ready = NextJob();
  EXPECT_NE(ready.content.find(R"("dataURL":"/output2/data/train/1/data.txt")"), std::string::npos)
      << ready.content;
  for (const char* d :
       {"/output2/data/train", "/output2/data/eval", "/output2/train", "/output2/eval"}) {
    EXPECT_TRUE(stdfs::is_directory(rootfs + d)) << d << " must exist before Ready (§P4.5)";
  }
  EXPECT_EQ(lc->Stop(), 0);
}

}  // namespace sedna::testing
