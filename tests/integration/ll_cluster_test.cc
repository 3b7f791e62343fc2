// End to end, cluster mode, lifelong learning: the real sedna-lc binary against the GM emulator
// (websocket on 127.0.0.1), the GM's LL condition machine (core::gm, kLifelong: the job is sent
// to the LC after every change, §P4.3) and worker simulators posting like lib/sedna. The dataset
// is a CSV index that grows by REPLACING trainData.csv with a longer file (§P10.2). Every upstream
// message is compared byte for byte with docs/protocol.md §P3.4, every file the LC writes is
// checked, and the §P8.5 LL items ([P:L1]-[P:L8]) are exercised. The LC answers each Waiting the GM
// commits (docs/protocol.md §H3.2): a worker report is forwarded, never followed by a ready
// before the GM's next Waiting reaches the LC.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::PodPhase;
namespace stdfs = std::filesystem;

constexpr const char* kJobName = "atcii-classifier-demo";
constexpr const char* kDatasetName = "lifelong-dataset";
constexpr const char* kCsvUrl = "/data/lifelong_learning/trainData.csv";
constexpr double kTrainProb = 0.8;
constexpr const char* kLlUid = "7b3c2f0e-1111-4c3a-9c1e-000000000004";  // of every object sent

// Rows from..to that the split sends to train (or to eval), the row number being the sample's
// ordinal among the job's samples.
std::string TrainRows(int from, int to) { return CsvSplitRows(from, to, kTrainProb, true); }
std::string EvalRows(int from, int to) { return CsvSplitRows(from, to, kTrainProb, false); }

std::string WithHeader(const std::string& rows) { return std::string(kCsvHeader) + "\n" + rows; }

// The §P2.4 job; the threshold is 300 so that 600 rows (480 train samples at 0.8) fire round 1 and
// 500 more rows (400 train samples) fire round 2.
Json JobObject() { return LlJobObject({.uid = kLlUid, .train_prob = kTrainProb}); }

// §P3.4 contents for version v (local outputDir /output, csv dataset).
std::string Ll1(int v) {
  const std::string s = std::to_string(v);
  return R"({"phase":"train","status":"ready","input":{"dataURL":"/output/data/train/)" + s +
         R"(/data.csv","outputDir":"/output/train/)" + s + R"("},"output":null})";
}
std::string Ll3(const std::string& format, const std::string& url, int v) {
  const std::string s = std::to_string(v);
  return R"({"phase":"eval","status":"ready","input":{"models":[{"format":")" + format +
         R"(","url":")" + url + R"("}],"dataURL":"/output/data/eval/)" + s +
         R"(/data.csv","outputDir":"/output/eval/)" + s + R"("},"output":null})";
}
std::string Ll5(const std::string& format, const std::string& url) {
  return R"({"phase":"deploy","status":"ready","input":{"models":[{"format":")" + format +
         R"(","url":")" + url + R"("}]},"output":null})";
}

// A worker body as lib/sedna posts it (Python json.dumps separators). results_json "" leaves the
// `results` key out.
std::string WorkerBody(const std::string& name, const std::string& kind, const std::string& status,
                       const std::string& results_json) {
  std::string b = R"({"name": ")" + name +
                  R"(", "namespace": "default", "ownerName": "atcii-classifier-demo", )"
                  R"("ownerKind": "lifelonglearningjob", "kind": ")" +
                  kind + R"(", "status": ")" + status + "\"";
  if (!results_json.empty()) b += R"(, "results": )" + results_json;
  return b + "}";
}

uint64_t Inode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

class LlClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-ll-");
    barrier_uid = kLlUid;
    stdfs::create_directories(rootfs + "/data/lifelong_learning");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1\n");
    StartLc();
  }

  // The dataset index becomes header + rows 1..n by writing a new file and renaming it over the
  // old one (§P10.2: the file is replaced, so its inode changes).
  void ReplaceCsv(int n) {
    const std::string path = rootfs + kCsvUrl;
    const uint64_t before = Inode(path);
    WriteFile(path + ".new", Csv(n));
    stdfs::rename(path + ".new", path);
    if (before != 0) {
      ASSERT_NE(Inode(path), before) << "the index was not replaced";
    }
  }

  UpstreamFrame NextJob() {
    auto f = gm->Next("LifelongLearningJob");
    if (!f) throw std::runtime_error("no LifelongLearningJob message from the LC");
    EXPECT_EQ(f->header.ns, "default");
    EXPECT_EQ(f->header.resource_name, kJobName);
    EXPECT_EQ(f->header.operation, "status");
    return *f;
  }

  void WaitSampleCount(int64_t n) {
    ClusterFixture::WaitSampleCount(n, kDatasetName,
                                    "samples counted more than once (or the header counted)");
  }

  // No further job message: after a barrier and a short grace for file work in flight.
  void ExpectNoJobMessage(const std::string& why) {
    Barrier();
    auto extra = gm->Next("LifelongLearningJob", std::chrono::milliseconds(500));
    EXPECT_FALSE(extra) << why << ": " << extra->content;
  }

  // The LL GM sends the job to the LC after every change (§P4.3).
  void Sync() {
    ASSERT_TRUE(job->Downstream().send_job);
    gm->Send("insert", job->Object());
  }

  // trainData.csv with rows 1..rows, then the Dataset and the job as the GM sends them.
  void StartJob(int rows) {
    ReplaceCsv(rows);
    gm->Send("insert", DatasetObject(kDatasetName, kCsvUrl, "CSV", kLlUid));  // [P:L8]: upper case
    job = std::make_unique<GmJob>(core::gm::JobKind::kLifelong, JobObject());
    ASSERT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
    WaitSampleCount(rows);
  }

  // ---- the GM's side of each LC report (§P4.2), re-sending the job after every change

  void GmTrainReady(const UpstreamFrame& ll1) {
    auto actions = job->Report(ll1.content);
    ASSERT_EQ(actions.size(), 1u);
    auto* create = std::get_if<core::gm::CreatePod>(&actions[0]);
    ASSERT_TRUE(create);
    EXPECT_EQ(create->stage, Stage::kTrain);
    EXPECT_EQ(job->LastCondition(), "Train/Starting");
    Sync();
    job->SetPod(Stage::kTrain, PodPhase::kRunning);
    EXPECT_EQ(job->LastCondition(), "Train/Running");
    Sync();
  }

  void GmTrainCompleted(const UpstreamFrame& ll2) {
    job->Report(ll2.content);
    EXPECT_EQ(job->LastCondition(), "Eval/Waiting");
    Sync();
    job->SetPod(Stage::kTrain, PodPhase::kSucceeded);
    Sync();
  }

  void GmEvalReady(const UpstreamFrame& ll3) {
    auto actions = job->Report(ll3.content);
    ASSERT_EQ(actions.size(), 1u);
    auto* create = std::get_if<core::gm::CreatePod>(&actions[0]);
    ASSERT_TRUE(create);
    EXPECT_EQ(create->stage, Stage::kEval);
    Sync();
    job->SetPod(Stage::kEval, PodPhase::kRunning);
    EXPECT_EQ(job->LastCondition(), "Eval/Running");
    Sync();
  }

  void GmEvalCompleted(const UpstreamFrame& ll4) {
    job->Report(ll4.content);
    EXPECT_EQ(job->LastCondition(), "Deploy/Waiting");
    Sync();
    job->SetPod(Stage::kEval, PodPhase::kSucceeded);
    Sync();
  }

  void GmDeployReady(const UpstreamFrame& ll5) {
    auto actions = job->Report(ll5.content);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
    Sync();
    job->SetPod(Stage::kDeploy, PodPhase::kRunning);
    EXPECT_EQ(job->LastCondition(), "Train/Waiting");
    Sync();
  }

  // The train worker of version v writes and reports <out>/train/v/index.pkl; the LC forwards it
  // (LL-2) and sends LL-3 with exactly `eval_rows` (after the header) in the eval file.
  UpstreamFrame TrainCompletes(int v, const std::string& eval_rows) {
    const std::string s = std::to_string(v);
    stdfs::create_directories(rootfs + "/output/train/" + s);
    WriteFile(rootfs + "/output/train/" + s + "/index.pkl", "TRAIN-INDEX-V" + s);
    EXPECT_EQ(PostWorker(
                  "train-worker-v" + s + "abc",
                  WorkerBody("train-worker-v" + s + "abc", "train", "completed",
                             R"([{"format": "pkl", "url": "/output/train/)" + s +
                                 R"(/index.pkl", "metrics": {"summer_2": {"mlogloss": 0.910}}}])")),
              kOk);
    UpstreamFrame ll2 = NextJob();
    EXPECT_EQ(
        ll2.content,
        R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","metrics":{"summer_2":{"mlogloss":0.910}},"url":"/output/train/)" +
            s + R"(/index.pkl"}],"ownerInfo":null}})");
    ExpectNoJobMessage("eval ready before the GM's (Eval, Waiting)");
    GmTrainCompleted(ll2);
    UpstreamFrame ll3 = NextJob();
    EXPECT_EQ(ll3.content, Ll3("pkl", "/output/train/" + s + "/index.pkl", v));
    EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/" + s + "/data.csv"), WithHeader(eval_rows));
    GmEvalReady(ll3);
    return ll3;
  }

  // The eval worker of version v reports <out>/eval/v/index.pkl holding `bytes`; the LC forwards
  // it (LL-4); on the GM's (Deploy, Waiting) it copies it to <out>/deploy/index.pkl and sends
  // LL-5 (no /rootfs prefix, [P:L4]).
  void EvalCompletesAndDeploys(int v, const std::string& bytes) {
    const std::string s = std::to_string(v);
    stdfs::create_directories(rootfs + "/output/eval/" + s);
    WriteFile(rootfs + "/output/eval/" + s + "/index.pkl", bytes);
    EXPECT_EQ(PostWorker("eval-worker-v" + s + "xyz",
                         WorkerBody("eval-worker-v" + s + "xyz", "eval", "completed",
                                    R"([{"format": "pkl", "url": "/output/eval/)" + s +
                                        R"(/index.pkl", "metrics": {"precision_score": 0.620}}])")),
              kOk);
    UpstreamFrame ll4 = NextJob();
    EXPECT_EQ(
        ll4.content,
        R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","metrics":{"precision_score":0.620},"url":"/output/eval/)" +
            s + R"(/index.pkl"}],"ownerInfo":null}})");
    ExpectNoJobMessage("deploy before the GM's (Deploy, Waiting)");
    GmEvalCompleted(ll4);
    UpstreamFrame ll5 = NextJob();
    EXPECT_EQ(ll5.content, Ll5("pkl", "/output/eval/" + s + "/index.pkl"));
    EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), bytes);
    GmDeployReady(ll5);
  }

  std::unique_ptr<GmJob> job;
};

TEST_F(LlClusterTest, TwoRoundsCsvGrownByReplacement) {
  EXPECT_EQ(gm->server().last_node_name(), "edge-node");
  StartJob(600);

  // ---- version 1: 600 rows, 480 of them train samples (> 300) ----
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.header.resource_kind, "LifelongLearningJob");
  EXPECT_EQ(
      ll1.content,
      R"({"phase":"train","status":"ready","input":{"dataURL":"/output/data/train/1/data.csv","outputDir":"/output/train/1"},"output":null})");
  const std::string train1 = WithHeader(TrainRows(1, 600));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.csv"), train1);
  for (const char* d :
       {"/output/data/train", "/output/data/eval", "/output/train", "/output/eval"}) {
    EXPECT_TRUE(stdfs::is_directory(rootfs + d)) << d << " must exist before Ready (§P4.5)";
  }
  // §P4.1: what the GM keeps of LL-1 and hands to the train pod.
  {
    GmJob probe(core::gm::JobKind::kLifelong, JobObject());
    auto actions = probe.Report(ll1.content);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_EQ(
        std::get<core::gm::CreatePod>(actions[0]).data_json,
        R"({"input":{"dataURL":"/output/data/train/1/data.csv","outputDir":"/output/train/1"}})");
  }
  GmTrainReady(ll1);

  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  EXPECT_EQ(
      PostWorker(
          "train-worker-5xq2m",
          R"({"name": "train-worker-5xq2m", "namespace": "default", "ownerName": "atcii-classifier-demo", "ownerKind": "lifelonglearningjob", "kind": "train", "status": "completed", "results": [{"format": "pkl", "url": "/output/train/1/index.pkl", "metrics": {"summer_2": {"mlogloss": 0.91}}}]})"),
      kOk);
  UpstreamFrame ll2 = NextJob();
  EXPECT_EQ(
      ll2.content,
      R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","metrics":{"summer_2":{"mlogloss":0.91}},"url":"/output/train/1/index.pkl"}],"ownerInfo":null}})");
  ExpectNoJobMessage("eval ready before the GM's (Eval, Waiting)");
  GmTrainCompleted(ll2);

  UpstreamFrame ll3 = NextJob();
  EXPECT_EQ(
      ll3.content,
      R"({"phase":"eval","status":"ready","input":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl"}],"dataURL":"/output/data/eval/1/data.csv","outputDir":"/output/eval/1"},"output":null})");
  const std::string eval1 = EvalRows(1, 600);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.csv"), WithHeader(eval1));
  GmEvalReady(ll3);

  // Bytes with a NUL and no trailing newline: the copy is exact.
  const std::string model1("EVAL-INDEX-V1\0\x01\x02-pickle-bytes-of-version-one", 45);
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", model1);
  EXPECT_EQ(
      PostWorker(
          "eval-worker-2bq7d",
          R"({"name": "eval-worker-2bq7d", "namespace": "default", "ownerName": "atcii-classifier-demo", "ownerKind": "lifelonglearningjob", "kind": "eval", "status": "completed", "results": [{"format": "pkl", "url": "/output/eval/1/index.pkl", "metrics": {"precision_score": 0.62}}]})"),
      kOk);
  UpstreamFrame ll4 = NextJob();
  EXPECT_EQ(
      ll4.content,
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","metrics":{"precision_score":0.62},"url":"/output/eval/1/index.pkl"}],"ownerInfo":null}})");
  ExpectNoJobMessage("deploy before the GM's (Deploy, Waiting)");
  GmEvalCompleted(ll4);
  UpstreamFrame ll5 = NextJob();
  // [P:L4]: the eval result's URL as reported, without the LC-internal /rootfs prefix.
  EXPECT_EQ(
      ll5.content,
      R"({"phase":"deploy","status":"ready","input":{"models":[{"format":"pkl","url":"/output/eval/1/index.pkl"}]},"output":null})");
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), model1);
  GmDeployReady(ll5);
  ExpectNoJobMessage("after version 1 was deployed and the job re-sent");

  // ---- version 2: trainData.csv replaced by a longer file (the same 600 rows + 500 new) ----
  ReplaceCsv(1100);
  WaitSampleCount(1100);
  UpstreamFrame r2ll1 = NextJob();
  EXPECT_EQ(r2ll1.content, Ll1(2));
  // Only the train samples among the 500 new rows; nothing consumed before is sent again, and the
  // new file's header is the header, not a sample.
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.csv"), WithHeader(TrainRows(601, 1100)));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.csv"), train1) << "version 1 rewritten";
  GmTrainReady(r2ll1);
  // The eval set is the eval windows of the kept versions, each sample once ([P:B2]).
  TrainCompletes(2, eval1 + EvalRows(601, 1100));
  // A shorter model than the deployed one: the deploy target is replaced, not overwritten in place.
  EvalCompletesAndDeploys(2, "V2");
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.csv"), WithHeader(eval1));
  ExpectNoJobMessage("after version 2 was deployed and the job re-sent");
  EXPECT_EQ(lc->Stop(), 0);
}

// Multi-node (docs/protocol.md §H1.7): the train and eval workers run on other nodes, whose LCs
// forward their reports; this (dataset-node) LC never receives either report. It answers the GM's
// (Eval, Waiting) and (Deploy, Waiting) from the conditions' data alone (the outputs are on
// storage both nodes see).
TEST_F(LlClusterTest, TrainAndEvalOnOtherNodes_AnsweredFromConditions) {
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  GmTrainReady(ll1);
  // Node T's LC forwards the train worker's report to the GM.
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  job->Report(
      R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl"}],"ownerInfo":null}})");
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  UpstreamFrame ll3 = NextJob();
  EXPECT_EQ(ll3.content, Ll3("pkl", "/output/train/1/index.pkl", 1));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.csv"), WithHeader(EvalRows(1, 600)));
  GmEvalReady(ll3);
  // Node E's LC forwards the eval worker's report.
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-FROM-NODE-E");
  job->Report(
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","url":"/output/eval/1/index.pkl"}],"ownerInfo":null}})");
  ASSERT_EQ(job->LastCondition(), "Deploy/Waiting");
  Sync();
  UpstreamFrame ll5 = NextJob();
  EXPECT_EQ(ll5.content, Ll5("pkl", "/output/eval/1/index.pkl"));
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-FROM-NODE-E");
  Sync();  // a re-send of the same (Deploy, Waiting) is not answered again
  GmDeployReady(ll5);
  ExpectNoJobMessage("after the deploy and re-sends");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(LlClusterTest, TrainWorkerFailsThenRecovers) {
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  const std::string train1 = WithHeader(TrainRows(1, 600));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.csv"), train1);
  GmTrainReady(ll1);

  // [P:L1]: a `failed` report without results is forwarded and sends the job back to train.
  EXPECT_EQ(PostWorker("train-worker-f41l3",
                       WorkerBody("train-worker-f41l3", "train", "failed", /*results=*/"")),
            kOk);
  UpstreamFrame failed = NextJob();
  EXPECT_EQ(failed.content,
            R"({"phase":"train","status":"failed","output":{"models":null,"ownerInfo":null}})");
  job->Report(failed.content);
  EXPECT_EQ(job->LastCondition(), "Train/Waiting");
  Sync();
  job->SetPod(Stage::kTrain, PodPhase::kFailed);  // the pod exits after reporting
  Sync();

  // Its samples went back to the pending set (480 > 300): the trigger fires again at once, with
  // the next version number ([P:L5]: version 1's files are never rewritten for another cycle).
  UpstreamFrame ll1v2 = NextJob();
  EXPECT_EQ(ll1v2.content, Ll1(2));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.csv"), train1);
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/1/data.csv"), train1);
  GmTrainReady(ll1v2);
  // The (Train, Failed) of version 1 in the re-sent conditions does not abort version 2: the
  // next job message is the forwarded completion of version 2.
  ExpectNoJobMessage("after version 2's Ready");

  // Version 1's eval window was reopened: version 2 evaluates every eval sample once.
  TrainCompletes(2, EvalRows(1, 600));
  EvalCompletesAndDeploys(2, "EVAL-INDEX-V2");
  EXPECT_FALSE(stdfs::exists(rootfs + "/output/data/eval/1")) << "version 1 never reached eval";
  ExpectNoJobMessage("after the recovered round");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(LlClusterTest, EvalPodFailsThenRecovers) {
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  GmTrainReady(ll1);
  const std::string eval1 = EvalRows(1, 600);
  TrainCompletes(1, eval1);

  // [P:L2]: the eval pod fails; the GM appends (Eval, Failed) then (Train, Waiting) and re-sends.
  job->SetPod(Stage::kEval, PodPhase::kFailed);
  ASSERT_GE(job->state().conditions.size(), 2u);
  const auto& conds = job->state().conditions;
  EXPECT_EQ(conds[conds.size() - 2].stage, Stage::kEval);
  EXPECT_EQ(conds[conds.size() - 2].type, core::ConditionType::kFailed);
  EXPECT_EQ(job->LastCondition(), "Train/Waiting");
  Sync();
  Barrier();
  const std::string back = "(Eval, Failed): eval of version 1 failed";
  EXPECT_NE(lc->Log().find(back), std::string::npos) << "the Failed condition was not acted on";
  // No pending train samples yet: nothing is sent; re-sends of the same job change nothing.
  Sync();
  Sync();
  ExpectNoJobMessage("after the eval failure and two re-sends");
  {
    const std::string log = lc->Log();
    const size_t first = log.find(back);
    EXPECT_EQ(log.find(back, first + 1), std::string::npos) << "the failure was acted on twice";
  }

  // New rows: the next train runs as version 2 (numbers are never reused).
  ReplaceCsv(1100);
  WaitSampleCount(1100);
  UpstreamFrame ll1v2 = NextJob();
  EXPECT_EQ(ll1v2.content, Ll1(2));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.csv"), WithHeader(TrainRows(601, 1100)));
  // The GM re-sends the job, (Eval, Failed) still in its conditions: no second LL-1.
  Sync();
  GmTrainReady(ll1v2);
  Sync();
  ExpectNoJobMessage("after re-sends of the job at version 2");
  // The window evaluated by the failed eval stays in the eval set, each sample once.
  TrainCompletes(2, eval1 + EvalRows(601, 1100));
  EvalCompletesAndDeploys(2, "EVAL-INDEX-V2");
  Sync();
  ExpectNoJobMessage("after the recovered round and a re-send");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(LlClusterTest, TwoResultsEvalAllDeployFirst) {
  // [P:L6]: a TF/Keras backend reports two results; the LL job advances. As v0.7.0 does, the eval
  // gets every output model of the train and the deploy copies the first eval output.
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  GmTrainReady(ll1);
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/model.h5", "H5");
  WriteFile(rootfs + "/output/train/1/model.pb", "PB");
  EXPECT_EQ(
      PostWorker(
          "train-worker-tw0rs",
          WorkerBody(
              "train-worker-tw0rs", "train", "completed",
              R"([{"url": "/output/train/1/model.h5", "format": "h5", "metrics": {"loss": 0.50}}, {"format": "pb", "url": "/output/train/1/model.pb", "metrics": {"loss": 0.50}}])")),
      kOk);
  UpstreamFrame ll2 = NextJob();
  EXPECT_EQ(
      ll2.content,
      R"({"phase":"train","status":"completed","output":{"models":[{"format":"h5","metrics":{"loss":0.50},"url":"/output/train/1/model.h5"},{"format":"pb","metrics":{"loss":0.50},"url":"/output/train/1/model.pb"}],"ownerInfo":null}})");
  GmTrainCompleted(ll2);
  UpstreamFrame ll3 = NextJob();
  EXPECT_EQ(
      ll3.content,
      R"({"phase":"eval","status":"ready","input":{"models":[{"format":"h5","url":"/output/train/1/model.h5"},{"format":"pb","url":"/output/train/1/model.pb"}],"dataURL":"/output/data/eval/1/data.csv","outputDir":"/output/eval/1"},"output":null})");
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.csv"), WithHeader(EvalRows(1, 600)));
  GmEvalReady(ll3);

  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/first.pkl", "FIRST-RESULT");
  WriteFile(rootfs + "/output/eval/1/second.pkl", "SECOND-RESULT");
  EXPECT_EQ(
      PostWorker(
          "eval-worker-tw0rs",
          WorkerBody(
              "eval-worker-tw0rs", "eval", "completed",
              R"([{"format": "pkl", "url": "/output/eval/1/first.pkl", "metrics": {"precision_score": 0.7}}, {"format": "pkl", "url": "/output/eval/1/second.pkl", "metrics": {"precision_score": 0.9}}])")),
      kOk);
  UpstreamFrame ll4 = NextJob();
  EXPECT_EQ(
      ll4.content,
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","metrics":{"precision_score":0.7},"url":"/output/eval/1/first.pkl"},{"format":"pkl","metrics":{"precision_score":0.9},"url":"/output/eval/1/second.pkl"}],"ownerInfo":null}})");
  GmEvalCompleted(ll4);
  UpstreamFrame ll5 = NextJob();
  EXPECT_EQ(ll5.content, Ll5("pkl", "/output/eval/1/first.pkl"));
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "FIRST-RESULT");
  GmDeployReady(ll5);
  ExpectNoJobMessage("after the deploy");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(LlClusterTest, KindCaseInsensitive) {
  // [P:L3]: the worker's kind is matched to the phase case-insensitively, and forwarded verbatim.
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  GmTrainReady(ll1);
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  EXPECT_EQ(PostWorker("train-worker-uppr1",
                       WorkerBody("train-worker-uppr1", "TRAIN", "completed",
                                  R"([{"format": "pkl", "url": "/output/train/1/index.pkl"}])")),
            kOk);
  UpstreamFrame ll2 = NextJob();
  EXPECT_EQ(
      ll2.content,
      R"({"phase":"TRAIN","status":"completed","output":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl"}],"ownerInfo":null}})");
  GmTrainCompleted(ll2);  // the GM matches phase case-insensitively too
  UpstreamFrame ll3 = NextJob();
  EXPECT_EQ(ll3.content, Ll3("pkl", "/output/train/1/index.pkl", 1));
  GmEvalReady(ll3);

  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-V1");
  EXPECT_EQ(PostWorker("eval-worker-uppr2",
                       WorkerBody("eval-worker-uppr2", "Eval", "COMPLETED",
                                  R"([{"format": "pkl", "url": "/output/eval/1/index.pkl"}])")),
            kOk);
  UpstreamFrame ll4 = NextJob();
  EXPECT_EQ(
      ll4.content,
      R"({"phase":"Eval","status":"COMPLETED","output":{"models":[{"format":"pkl","url":"/output/eval/1/index.pkl"}],"ownerInfo":null}})");
  GmEvalCompleted(ll4);
  UpstreamFrame ll5 = NextJob();
  EXPECT_EQ(ll5.content, Ll5("pkl", "/output/eval/1/index.pkl"));
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-V1");
  GmDeployReady(ll5);
  ExpectNoJobMessage("after the deploy");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(LlClusterTest, RestartKeepsVersion) {
  // [P:B15]: kill -9 while the eval worker of version 1 runs; the restarted LC (same --db) accepts
  // the eval report and deploys version 1, then carries on with version 2.
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  GmTrainReady(ll1);
  const std::string eval1 = EvalRows(1, 600);
  TrainCompletes(1, eval1);
  Barrier();  // LL-3 was delivered and dropped from the outbox
  KillAndRestart();
  Sync();  // the GM's periodic resync (§P1.6)
  Barrier();
  EXPECT_NE(lc->Log().find("resumed at version 1 phase eval"), std::string::npos);
  auto stray = gm->Next("LifelongLearningJob", std::chrono::milliseconds(0));
  EXPECT_FALSE(stray) << "sent after the restart: " << stray->content;

  EvalCompletesAndDeploys(1, "EVAL-INDEX-V1-AFTER-RESTART");
  // Version 2 gets exactly the new rows' train samples (nothing re-split after the restart).
  ReplaceCsv(1100);
  WaitSampleCount(1100);
  UpstreamFrame ll1v2 = NextJob();
  EXPECT_EQ(ll1v2.content, Ll1(2));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.csv"), WithHeader(TrainRows(601, 1100)));
  GmTrainReady(ll1v2);

  // A second kill while the train worker of version 2 runs: the eval file written after this
  // restart still starts with the csv header, which the LC has not read again since (it is kept
  // in the database with the read cursor).
  Barrier();
  KillAndRestart();
  Sync();
  Barrier();
  EXPECT_NE(lc->Log().find("resumed at version 2 phase train"), std::string::npos);
  TrainCompletes(2, eval1 + EvalRows(601, 1100));
  EvalCompletesAndDeploys(2, "EVAL-INDEX-V2");
  ExpectNoJobMessage("after version 2 was deployed");
  EXPECT_EQ(lc->Stop(), 0);
}

// Idempotent across restarts (docs/protocol.md §H3.2, §H3.3): the LC is killed right after each
// answer, before the GM has taken it; the restarted LC gets the same Waiting again (a G2 resync)
// and answers nothing twice: one LL-1, one LL-3, one deploy copy and LL-5 per round.
TEST_F(LlClusterTest, KilledAfterEachAnswer_WaitingResentNotAnsweredTwice) {
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  Barrier();  // LL-1 was delivered and dropped from the outbox
  KillAndRestart();
  ASSERT_EQ(job->LastCondition(), "Train/Waiting");
  Sync();
  ExpectNoJobMessage("(Train, Waiting) answered again after the restart");
  GmTrainReady(ll1);

  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  EXPECT_EQ(PostWorker("train-worker-k1ll1",
                       WorkerBody("train-worker-k1ll1", "train", "completed",
                                  R"([{"format": "pkl", "url": "/output/train/1/index.pkl"}])")),
            kOk);
  GmTrainCompleted(NextJob());
  UpstreamFrame ll3 = NextJob();
  EXPECT_EQ(ll3.content, Ll3("pkl", "/output/train/1/index.pkl", 1));
  Barrier();
  KillAndRestart();
  ASSERT_EQ(job->LastCondition(), "Eval/Waiting");
  Sync();
  ExpectNoJobMessage("(Eval, Waiting) answered again after the restart");
  GmEvalReady(ll3);

  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-V1");
  EXPECT_EQ(PostWorker("eval-worker-k1ll2",
                       WorkerBody("eval-worker-k1ll2", "eval", "completed",
                                  R"([{"format": "pkl", "url": "/output/eval/1/index.pkl"}])")),
            kOk);
  GmEvalCompleted(NextJob());
  UpstreamFrame ll5 = NextJob();
  EXPECT_EQ(ll5.content, Ll5("pkl", "/output/eval/1/index.pkl"));
  Barrier();
  // A changed eval output after the answer: a second copy would show in the deploy target.
  WriteFile(rootfs + "/output/eval/1/index.pkl", "CHANGED-AFTER-THE-DEPLOY");
  KillAndRestart();
  ASSERT_EQ(job->LastCondition(), "Deploy/Waiting");
  Sync();
  ExpectNoJobMessage("(Deploy, Waiting) answered again after the restart");
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-V1") << "copied twice";
  GmDeployReady(ll5);
  ExpectNoJobMessage("after the deploy");
  EXPECT_EQ(lc->Stop(), 0);
}

TEST_F(LlClusterTest, DeployCopyFailsThenNextVersion) {
  // LL-6: the eval result cannot be copied to <out>/deploy/index.pkl; the job goes on training.
  StartJob(600);
  UpstreamFrame ll1 = NextJob();
  EXPECT_EQ(ll1.content, Ll1(1));
  GmTrainReady(ll1);
  TrainCompletes(1, EvalRows(1, 600));
  EXPECT_EQ(PostWorker("eval-worker-m1ss1",
                       WorkerBody("eval-worker-m1ss1", "eval", "completed",
                                  R"([{"format": "pkl", "url": "/output/eval/1/missing.pkl"}])")),
            kOk);
  UpstreamFrame ll4 = NextJob();
  EXPECT_EQ(
      ll4.content,
      R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pkl","url":"/output/eval/1/missing.pkl"}],"ownerInfo":null}})");
  GmEvalCompleted(ll4);
  UpstreamFrame ll6 = NextJob();
  EXPECT_EQ(ll6.content, R"({"phase":"deploy","status":"failed","output":null})");
  EXPECT_FALSE(stdfs::exists(rootfs + "/output/deploy/index.pkl"));
  job->Report(ll6.content);
  EXPECT_EQ(job->LastCondition(), "Train/Waiting");
  Sync();
  ExpectNoJobMessage("after the failed deploy");

  ReplaceCsv(1100);
  WaitSampleCount(1100);
  UpstreamFrame ll1v2 = NextJob();
  EXPECT_EQ(ll1v2.content, Ll1(2));
  EXPECT_EQ(ReadFile(rootfs + "/output/data/train/2/data.csv"), WithHeader(TrainRows(601, 1100)));
  GmTrainReady(ll1v2);
  TrainCompletes(2, EvalRows(1, 600) + EvalRows(601, 1100));
  EvalCompletesAndDeploys(2, "EVAL-INDEX-V2");
  ExpectNoJobMessage("after version 2 was deployed");
  EXPECT_EQ(lc->Stop(), 0);
}

// A G1 GM (every update to the train-spec node, here the only LC) with [P:R1] on: the controller's
// writes land 300 ms after their sync. The 2021-style LC sent the eval ready and the deploy ready
// within milliseconds of the forwarded report, inside that window (§H2.2); answering the committed
// Waiting instead, nothing is erased and the round closes.
TEST_F(LlClusterTest, G1_R1_NothingErased) {
  using namespace std::chrono_literals;
  ReplaceCsv(600);
  gm->Send("insert", DatasetObject(kDatasetName, kCsvUrl, "CSV", kLlUid));
  GmJob g1(core::gm::JobKind::kLifelong, JobObject());
  g1.EnableR1(300ms);
  gm->Sync(g1);
  std::vector<std::string> frames;
  GmEmulator::RunOptions opts;
  opts.timeout = 8s;  // RunUntil checks `done` after frames only (see LlG2MultiNodeTest)
  opts.on_frame = [&](const UpstreamFrame& f) {
    frames.push_back(f.body.value("phase", "") + "/" + f.body.value("status", ""));
  };
  ASSERT_TRUE(gm->RunUntil(
      g1, [](const GmJob& j) { return j.LastCondition() == "Train/Running"; }, opts))
      << ::testing::PrintToString(g1.Conditions());
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  PostWorker("train-worker-g1r1a",
             WorkerBody("train-worker-g1r1a", "train", "completed",
                        R"([{"format": "pkl", "url": "/output/train/1/index.pkl"}])"));
  ASSERT_TRUE(gm->RunUntil(
      g1, [](const GmJob& j) { return j.LastCondition() == "Eval/Running"; }, opts))
      << ::testing::PrintToString(g1.Conditions());
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-V1");
  PostWorker("eval-worker-g1r1b",
             WorkerBody("eval-worker-g1r1b", "eval", "completed",
                        R"([{"format": "pkl", "url": "/output/eval/1/index.pkl"}])"));
  ASSERT_TRUE(gm->RunUntil(
      g1,
      [](const GmJob& j) {
        const auto c = j.Conditions();
        return c.size() >= 2 && c.back() == "Train/Waiting" &&
               c[c.size() - 2] == "Deploy/Completed";
      },
      opts))
      << ::testing::PrintToString(g1.Conditions());
  EXPECT_EQ(frames, (std::vector<std::string>{"train/ready", "train/completed", "eval/ready",
                                              "eval/completed", "deploy/ready"}));
  EXPECT_TRUE(g1.erased().empty()) << "an answer to a committed Waiting is never erased";
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-V1");
}

// [D:I23.6]: the GM's informer 500 ms late ([P:R1] writes 500 ms after their sync) re-sends
// objects of round 1 from its old cache, re-indexed (a condition a later status write erased
// still shows before the Waiting): its (Eval, Waiting) and (Deploy, Waiting) after the LC
// answered them, and after the round closed. Each is answered once per round (before: another
// eval ready, another copy and deploy ready).
TEST_F(LlClusterTest, G1_InformerLag_EachWaitingAnsweredOncePerRound) {
  using namespace std::chrono_literals;
  ReplaceCsv(600);
  gm->Send("insert", DatasetObject(kDatasetName, kCsvUrl, "CSV", kLlUid));
  GmJob g1(core::gm::JobKind::kLifelong, JobObject());
  g1.EnableR1(500ms);
  gm->Sync(g1);
  std::vector<std::string> frames;
  GmEmulator::RunOptions opts;
  opts.timeout = 8s;
  opts.on_frame = [&](const UpstreamFrame& f) {
    frames.push_back(f.body.value("phase", "") + "/" + f.body.value("status", ""));
  };
  // The latest object sent whose last condition is `last`, re-indexed before it.
  auto stale = [&](const std::string& last) {
    for (auto it = gm->sent_jobs().rbegin(); it != gm->sent_jobs().rend(); ++it) {
      const auto& c = it->object["status"]["conditions"];
      if (c.empty() || c.back().value("stage", "") + "/" + c.back().value("type", "") != last) {
        continue;
      }
      size_t tc = 0;
      for (size_t i = 0; i < c.size(); ++i) {
        if (c[i].value("stage", "") == "Train" && c[i].value("type", "") == "Completed") tc = i;
      }
      return GmEmulator::Reindexed(it->object, tc, 1, false);
    }
    ADD_FAILURE() << "no object ending with " << last << " was sent";
    return Json{};
  };
  ASSERT_TRUE(gm->RunUntil(
      g1, [](const GmJob& j) { return j.LastCondition() == "Train/Running"; }, opts));
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  PostWorker("train-worker-g1r1a",
             WorkerBody("train-worker-g1r1a", "train", "completed",
                        R"([{"format": "pkl", "url": "/output/train/1/index.pkl"}])"));
  ASSERT_TRUE(gm->RunUntil(
      g1, [](const GmJob& j) { return j.LastCondition() == "Eval/Running"; }, opts));
  for (int i = 0; i < 3; ++i) gm->Send("insert", stale("Eval/Waiting"));
  ExpectNoJobMessage("a stale (Eval, Waiting) of version 1 answered again");
  gm->Sync(g1);  // the informer catches up
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-V1");
  PostWorker("eval-worker-g1r1b",
             WorkerBody("eval-worker-g1r1b", "eval", "completed",
                        R"([{"format": "pkl", "url": "/output/eval/1/index.pkl"}])"));
  ASSERT_TRUE(gm->RunUntil(
      g1,
      [](const GmJob& j) {
        const auto c = j.Conditions();
        return c.size() >= 2 && c.back() == "Train/Waiting" &&
               c[c.size() - 2] == "Deploy/Completed";
      },
      opts))
      << ::testing::PrintToString(g1.Conditions());
  for (int i = 0; i < 3; ++i) {
    gm->Send("insert", stale("Deploy/Waiting"));
    gm->Send("insert", stale("Eval/Waiting"));
  }
  ExpectNoJobMessage("a stale Waiting of a closed round answered again");
  gm->Sync(g1);
  EXPECT_EQ(frames, (std::vector<std::string>{"train/ready", "train/completed", "eval/ready",
                                              "eval/completed", "deploy/ready"}));
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-V1");
}

// ---- a G2 GM, two nodes, the [P:R1] race on (docs/protocol.md §H1.7, §H2.0, §H3.4 test 7) ------

// The dataset-node LC (edge-node) and a worker-node LC against a v0.5-v0.7 GM whose status writes
// land 300 ms after the sync that computed them ([P:R1]). The train and eval pods run on the worker
// node, whose LC only forwards their reports; the dataset-node LC answers each Waiting the GM
// committed, so no answer is erased and the round closes.
class LlG2MultiNodeTest : public ClusterFixture {
 protected:
  void SetUp() override {
    MakeWorld("sedna-llg2-");
    barrier_uid = kLlUid;
    gm->SetMultiNode(true);
    stdfs::create_directories(rootfs + "/data/lifelong_learning");
    WriteFile(rootfs + "/data/barrier.txt", "barrier_images/1.jpg 1\n");
    StartLc();
  }

  // Every job message sent to `node` before this has been handled by its LC.
  void NodeBarrier(const std::string& node) {
    const std::string name = "barrier-" + node + "-" + std::to_string(++node_barriers_);
    ASSERT_TRUE(gm->SendTo(node, "insert", DatasetObject(name, kBarrierIndexUrl, "txt", kLlUid)));
    ASSERT_TRUE(NextDataset(name)) << "no answer from " << node;
  }

  int node_barriers_ = 0;
};

TEST_F(LlG2MultiNodeTest, WorkersOnAnotherNode_R1_EveryAnswerFollowsAWaiting) {
  using namespace std::chrono_literals;
  NodeLc& worker = StartNodeLc("worker-node");
  ASSERT_TRUE(gm->WaitForNode(kDefaultNode));
  ASSERT_TRUE(gm->WaitForNode("worker-node"));
  WriteFile(rootfs + kCsvUrl, Csv(600));
  ASSERT_TRUE(
      gm->SendTo(kDefaultNode, "insert", DatasetObject(kDatasetName, kCsvUrl, "CSV", kLlUid)));
  GmJob job(core::gm::JobKind::kLifelong, JobObject(), core::gm::Generation::kG2);
  job.Place(Stage::kTrain, "worker-node");
  job.Place(Stage::kEval, "worker-node");
  job.EnableR1(300ms);
  ASSERT_EQ(job.LastCondition(), "Train/Waiting");
  gm->Sync(job);  // (Train, Waiting) -> the dataset node

  std::vector<std::string> frames;  // "<node> <phase>/<status>" of every job message
  GmEmulator::RunOptions opts;
  // RunUntil checks `done` after frames only, so a step that ends with a landed write returns at
  // its timeout: keep it short (each step needs well under a second).
  opts.timeout = 8s;
  opts.on_frame = [&](const UpstreamFrame& f) {
    frames.push_back(f.node + " " + f.body.value("phase", "") + "/" + f.body.value("status", ""));
  };
  ASSERT_TRUE(gm->RunUntil(
      job, [](const GmJob& j) { return j.LastCondition() == "Train/Running"; }, opts))
      << ::testing::PrintToString(job.Conditions());
  NodeBarrier("worker-node");  // the worker node's LC has the job (sent at (Train, Running))
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  PostWorkerTo(worker, "train-worker-g2mn1",
               WorkerBody("train-worker-g2mn1", "train", "completed",
                          R"([{"format": "pkl", "url": "/output/train/1/index.pkl"}])"));
  ASSERT_TRUE(gm->RunUntil(
      job, [](const GmJob& j) { return j.LastCondition() == "Eval/Running"; }, opts))
      << ::testing::PrintToString(job.Conditions());
  NodeBarrier("worker-node");
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-V1-FROM-THE-WORKER-NODE");
  PostWorkerTo(worker, "eval-worker-g2mn2",
               WorkerBody("eval-worker-g2mn2", "eval", "completed",
                          R"([{"format": "pkl", "url": "/output/eval/1/index.pkl"}])"));
  ASSERT_TRUE(gm->RunUntil(
      job,
      [](const GmJob& j) {
        const auto c = j.Conditions();
        return c.size() >= 2 && c.back() == "Train/Waiting" &&
               c[c.size() - 2] == "Deploy/Completed";
      },
      opts))
      << ::testing::PrintToString(job.Conditions());

  EXPECT_EQ(frames,
            (std::vector<std::string>{"edge-node train/ready", "worker-node train/completed",
                                      "edge-node eval/ready", "worker-node eval/completed",
                                      "edge-node deploy/ready"}));
  EXPECT_TRUE(job.erased().empty()) << "an answer to a committed Waiting is never erased";
  const std::vector<std::string> conds = job.Conditions();
  for (size_t i = 1; i < conds.size(); ++i) {
    for (const char* stage : {"Train", "Eval", "Deploy"}) {
      if (conds[i] == std::string(stage) + "/Ready") {
        EXPECT_EQ(conds[i - 1], std::string(stage) + "/Waiting") << "condition " << i;
      }
    }
  }
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-V1-FROM-THE-WORKER-NODE");
  EXPECT_EQ(ReadFile(rootfs + "/output/data/eval/1/data.csv"), WithHeader(EvalRows(1, 600)));
  // The worker node's LC never answered anything: it forwarded its workers' reports.
  EXPECT_EQ(ReadFile(worker.log).find("reported train ready"), std::string::npos);
}

// [D:I23.5], LL: the eval pod on the worker node, whose LC was restarted (kill -9) before
// the GM sent it the job (G2 sends it at (Eval, Running)), and the eval worker's report reaches
// it before the job does. The report is kept (answered 200), survives a second kill -9, and is
// forwarded when the job arrives: the round deploys the eval output. Before: dropped as a message
// for an unknown job, and the round stayed at (Eval, Running).
TEST_F(LlG2MultiNodeTest, EvalReportBeforeTheJob_KeptAcrossKill9_Forwarded) {
  using namespace std::chrono_literals;
  NodeLc& worker = StartNodeLc("worker-node");
  ASSERT_TRUE(gm->WaitForNode(kDefaultNode));
  ASSERT_TRUE(gm->WaitForNode("worker-node"));
  WriteFile(rootfs + kCsvUrl, Csv(600));
  ASSERT_TRUE(
      gm->SendTo(kDefaultNode, "insert", DatasetObject(kDatasetName, kCsvUrl, "CSV", kLlUid)));
  GmJob job(core::gm::JobKind::kLifelong, JobObject(), core::gm::Generation::kG2);
  job.Place(Stage::kTrain, kDefaultNode);
  job.Place(Stage::kEval, "worker-node");
  gm->Sync(job);
  std::vector<std::string> frames;  // "<node> <phase>/<status>" of every job message
  GmEmulator::RunOptions opts;
  opts.timeout = 8s;
  opts.on_frame = [&](const UpstreamFrame& f) {
    frames.push_back(f.node + " " + f.body.value("phase", "") + "/" + f.body.value("status", ""));
  };
  auto at = [](const char* cond) {
    return [cond](const GmJob& j) { return j.LastCondition() == cond; };
  };
  ASSERT_TRUE(gm->RunUntil(job, at("Train/Running"), opts))
      << ::testing::PrintToString(job.Conditions());
  KillAndRestartNode(worker);  // the eval node's LC restarted; it never had the job
  stdfs::create_directories(rootfs + "/output/train/1");
  WriteFile(rootfs + "/output/train/1/index.pkl", "TRAIN-INDEX-V1");
  PostWorker("train-worker-e1",
             WorkerBody("train-worker-e1", "train", "completed",
                        R"([{"format": "pkl", "url": "/output/train/1/index.pkl"}])"));
  // The eval pod is created, not yet seen Running: the worker node has not been sent the job.
  GmEmulator::RunOptions pending = opts;
  pending.run_created_pods = false;
  ASSERT_TRUE(gm->RunUntil(job, at("Eval/Starting"), pending))
      << ::testing::PrintToString(job.Conditions());
  ASSERT_EQ(ReadFile(worker.log).find("LifelongLearningJob default/atcii-classifier-demo: loaded"),
            std::string::npos);
  stdfs::create_directories(rootfs + "/output/eval/1");
  WriteFile(rootfs + "/output/eval/1/index.pkl", "EVAL-INDEX-V1-KEPT-BEFORE-THE-JOB");
  EXPECT_EQ(PostWorkerTo(worker, "eval-worker-e2",
                         WorkerBody("eval-worker-e2", "eval", "completed",
                                    R"([{"format": "pkl", "url": "/output/eval/1/index.pkl"}])")),
            kOk);
  KillAndRestartNode(worker);  // the kept report survives kill -9
  job.SetPod(Stage::kEval, PodPhase::kRunning);
  gm->Sync(job);  // the job reaches the worker node at (Eval, Running)
  ASSERT_TRUE(gm->RunUntil(
      job,
      [](const GmJob& j) {
        const auto c = j.Conditions();
        return c.size() >= 2 && c.back() == "Train/Waiting" &&
               c[c.size() - 2] == "Deploy/Completed";
      },
      opts))
      << ::testing::PrintToString(job.Conditions());
  EXPECT_EQ(frames, (std::vector<std::string>{"edge-node train/ready", "edge-node train/completed",
                                              "edge-node eval/ready", "worker-node eval/completed",
                                              "edge-node deploy/ready"}));
  EXPECT_EQ(ReadFile(rootfs + "/output/deploy/index.pkl"), "EVAL-INDEX-V1-KEPT-BEFORE-THE-JOB");
  EXPECT_NE(ReadFile(worker.log).find("worker report(s) kept before the job arrived applied"),
            std::string::npos);
}

}  // namespace
}  // namespace sedna::testing
