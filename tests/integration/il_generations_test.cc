// IL rounds on both GM generations (docs/protocol.md §H3.4): the real sedna-lc binary
// against the GM emulator in G1 or G2 mode, single and multi-node, hot update on and off, the
// [P:R1] race of §H2.0, a restart during the deploy wait, and a GM upgraded from G1 to G2 while a
// round waits for its decision. Workers are simulated as lib/sedna posts.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "cluster_fixture.h"
#include "objects.h"
#include "samples.h"

namespace sedna::testing {
namespace {

using core::Stage;
using core::gm::Generation;
using core::gm::JobKind;
using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

constexpr const char* kNode2 = "edge-node-2";
const std::string kHotDir =
    "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet-detection-demo";

int Count(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<int>(std::count(v.begin(), v.end(), x));
}

class IlGenerationsTest : public ClusterFixture {
 protected:
  void World(bool multi_node, const std::vector<std::string>& lc_args) {
    MakeWorld("sedna-gen-");
    if (multi_node) gm->SetMultiNode(true);
    stdfs::create_directories(rootfs + "/data");
    stdfs::create_directories(rootfs + "/models/base_model");
    stdfs::create_directories(rootfs + "/models/deploy_model");
    WriteFile(rootfs + kDeployModelUrl, "OLD-DEPLOYED-MODEL");
    WriteFile(rootfs + kIlIndexUrl, "");
    WriteFile(rootfs + kBarrierIndexUrl, "barrier_images/1.jpg 1,1,2,2,1\n");
    args = lc_args;
    StartLc(0, args);
    if (multi_node) {
      node2 = &StartNodeLc(kNode2, false, 0, args);
      ASSERT_TRUE(gm->WaitForNode(kDefaultNode));
    }
    ASSERT_TRUE(gm->SendTo(kDefaultNode, "insert", DatasetObject()));
  }

  std::string PostOn(const std::string& node, const std::string& name, const std::string& body) {
    if (node == kNode2 && node2) {
      // G2 sends another node the job only at its stage's Running (and deletes it after): these
      // rounds post once that LC has loaded it. A report that comes first is kept and applied
      // when the job arrives ([D:I23.5]; G2_EvalReportBeforeTheJob_* posts first on
      // purpose). Bounded: the post goes ahead after 10 s.
      const auto until = GmClock::now() + 10s;
      while (!KnownOnNode2() && GmClock::now() < until) std::this_thread::sleep_for(10ms);
      return PostWorkerTo(*node2, name, body);
    }
    return PostWorker(name, body);
  }

  // Node 2's LC holds the job now: its last "loaded" line is after its last "deleted" one.
  bool KnownOnNode2() const {
    const std::string log = node2->lc->Log();
    const size_t loaded = log.rfind("IncrementalLearningJob default/helmet-detection-demo: loaded");
    const size_t deleted = log.rfind("incrementallearningjob/helmet-detection-demo: deleted");
    return loaded != std::string::npos && (deleted == std::string::npos || loaded > deleted);
  }

  // Runs the emulated GM until `done`, recording every frame of the job.
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
  // The job is back at (Train, Waiting) after `rounds` deploy decisions.
  static std::function<bool(const GmJob&)> Closed(int rounds) {
    return [rounds](const GmJob& j) {
      return j.LastCondition() == "Train/Waiting" &&
             Count(j.Conditions(), "Deploy/Completed") == rounds;
    };
  }
  // Cold rounds 1..n, each deploying a better model (NEW-MODEL-ROUND-<r>) with the train and eval
  // workers on the given nodes.
  void DeployingRounds(GmJob& job, int n, const std::string& train_node,
                       const std::string& eval_node) {
    for (int round = 1; round <= n; ++round) {
      const std::string bytes = "NEW-MODEL-ROUND-" + std::to_string(round);
      ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, round, bytes, true, train_node, eval_node));
      ASSERT_TRUE(Run(job, Closed(round))) << "round " << round << ": " << job.LastCondition();
      EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), bytes);
    }
  }

  // One round from new samples to the eval report: the train worker (on `train_node`) writes
  // <out>/model.pb with `model_bytes` and reports; the eval worker (on `eval_node`) reports the
  // new model better (deploy) or worse.
  void RoundToEvalReport(GmJob& job, int round, const std::string& model_bytes, bool better,
                         const std::string& train_node = kDefaultNode,
                         const std::string& eval_node = kDefaultNode) {
    const int from = round == 1 ? 1 : 1001 + (round - 2) * 700;
    const int to = round == 1 ? 1000 : from + 699;
    AppendFile(rootfs + kIlIndexUrl, IndexLines(from, to));
    ASSERT_TRUE(Run(job, At("Train/Running")))
        << "round " << round << " never trained; at " << job.LastCondition();
    const std::string out = "/output/train/" + std::to_string(round);
    stdfs::create_directories(rootfs + out);
    WriteFile(rootfs + out + "/model.pb", model_bytes);
    const std::string train_report =
        R"({"name":"train-worker-a)" + std::to_string(round) +
        R"(","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"train","status":"completed","results":[{"format":"pb","url":")" +
        out + R"(/model.pb","metrics":{"loss":0.5}},{"format":"ckpt","url":")" + out +
        R"(","metrics":{"loss":0.5}}]})";
    EXPECT_EQ(PostOn(train_node, "train-worker-a" + std::to_string(round), train_report), kOk);
    ASSERT_TRUE(Run(job, At("Eval/Running")))
        << "round " << round << " never evaluated; at " << job.LastCondition();
    const std::string eval_report =
        R"({"name":"eval-worker-b)" + std::to_string(round) +
        R"(","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"eval","status":"completed","results":[{"format":"pb","url":")" +
        out + R"(/model.pb","metrics":{"precision":[)" + (better ? "0.9" : "0.4") +
        R"(]}},{"format":"pb","url":"/models/deploy_model/saved_model.pb","metrics":{"precision":[0.5]}}]})";
    EXPECT_EQ(PostOn(eval_node, "eval-worker-b" + std::to_string(round), eval_report), kOk);
  }

  // The frames of phase/status (case-insensitive phase), in order.
  std::vector<UpstreamFrame> FramesOf(const std::string& phase, const std::string& status) {
    std::vector<UpstreamFrame> v;
    for (const auto& f : frames) {
      std::string p = f.body.value("phase", ""), s = f.body.value("status", "");
      std::transform(p.begin(), p.end(), p.begin(), ::tolower);
      std::transform(s.begin(), s.end(), s.begin(), ::tolower);
      if (p == phase && s == status) v.push_back(f);
    }
    return v;
  }
  int DeployDecisions() {
    return static_cast<int>(FramesOf("deploy", "ready").size() +
                            FramesOf("deploy", "completed").size() +
                            FramesOf("deploy", "failed").size());
  }
  static bool LcConditionErased(const GmJob& job) {
    for (const auto& c : job.erased()) {
      if (c.message == core::gm::kReportedByLcMessage) return true;
    }
    return false;
  }

  // Index of the last `stage/type` condition of a job object, or its size when none.
  static size_t LastIndexOf(const Json& object, const std::string& cond) {
    const Json& c = object["status"]["conditions"];
    for (size_t i = c.size(); i-- > 0;) {
      if (c[i].value("stage", "") + "/" + c[i].value("type", "") == cond) return i;
    }
    return c.size();
  }

  // [D:I23.6]: rounds 1 and 2 with the GM's informer 500 ms behind. When the round's
  // decision arrives, the GM re-sends the round's (Deploy, Waiting) from its lagging cache twice,
  // re-indexed (a status write erased a condition before it, or it still shows one a later write
  // erased; once with the eval output erased); after the round closed (the next round's (Train,
  // Waiting) was sent) three more times in 0.6 s. Each round is decided once, with one report.
  void StaleDeployWaitingRounds(GmJob& job, const std::string& deploy_node,
                                const std::string& eval_node) {
    for (int round = 1; round <= 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const std::string bytes = "NEW-MODEL-ROUND-" + std::to_string(round);
      ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, round, bytes, true, kDefaultNode, eval_node));
      bool stale_sent = false;
      GmEmulator::RunOptions o;
      o.on_frame = [&](const UpstreamFrame& f) {
        frames.push_back(f);
        std::string phase = f.body.value("phase", "");
        std::transform(phase.begin(), phase.end(), phase.begin(), ::tolower);
        if (stale_sent || phase != "deploy") return;
        const Json* dw = gm->SentBefore(deploy_node, "Deploy/Waiting");
        if (!dw) return;
        stale_sent = true;
        const size_t tc = LastIndexOf(*dw, "Train/Completed");
        EXPECT_TRUE(gm->SendStale(deploy_node, GmEmulator::Reindexed(*dw, tc, 1, false)));
        EXPECT_TRUE(gm->SendStale(deploy_node, GmEmulator::Reindexed(*dw, tc, -1, true)));
        gm->Sync(job);  // the informer catches up
      };
      ASSERT_TRUE(gm->RunUntil(job, Closed(round), o)) << job.LastCondition();
      EXPECT_TRUE(stale_sent);
      EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), bytes);
      const Json* dw = gm->SentBefore(deploy_node, "Deploy/Waiting", 500ms);
      if (!dw) dw = gm->SentBefore(deploy_node, "Deploy/Waiting");
      ASSERT_NE(dw, nullptr);
      const size_t tc = LastIndexOf(*dw, "Train/Completed");
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(
            gm->SendStale(deploy_node, GmEmulator::Reindexed(*dw, tc, i == 1 ? -1 : 1, i == 2)));
      }
      gm->Sync(job);  // the informer catches up
      // Nothing answers them (no answer comes within milliseconds on an LC that does; each made
      // the GM start another (Train, Waiting)).
      auto extra = gm->Next("IncrementalLearningJob", 1500ms);
      EXPECT_FALSE(extra) << "answered a stale (Deploy, Waiting): " << extra->content;
      while (extra) {
        frames.push_back(*extra);
        extra = gm->Next("IncrementalLearningJob", 300ms);
      }
      EXPECT_EQ(DeployDecisions(), round);
      EXPECT_EQ(FramesOf("deploy", "ready").size(), static_cast<size_t>(round));
    }
    EXPECT_EQ(DeployDecisions(), 2);
    for (const auto& f : FramesOf("deploy", "ready")) EXPECT_EQ(f.node, deploy_node);
  }

  std::vector<std::string> args;
  NodeLc* node2 = nullptr;
  std::vector<UpstreamFrame> frames;
};

// §H3.4 test 1: G1 never sends (Deploy, Waiting); the decision is written --deploy-wait after the
// eval forward, so with the GM's stale-cache write ([P:R1], 300 ms) nothing the LC sent is erased
// and the conditions end as a 2021 GM's round does.
TEST_F(IlGenerationsTest, G1_ColdRoundDecidedAfterTheDeployWait_R1EraseNothing) {
  World(false, {"--deploy-wait", "1.5"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG1);
  SetIlModels(job);
  job.EnableR1(300ms);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "NEW-MODEL-ROUND-1", true));
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  auto eval = FramesOf("eval", "completed");
  auto ready = FramesOf("deploy", "ready");
  ASSERT_EQ(eval.size(), 1u);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_GE(ready[0].received - eval[0].received, 1500ms) << "decided before --deploy-wait";
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
  EXPECT_FALSE(LcConditionErased(job));
  // The 2021 GM's cold deploy (§P4.2): Ready, Starting, Completed, after its (Deploy, Waiting).
  const auto c = job.Conditions();
  ASSERT_GE(c.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(c.end() - 6, c.end()),
            (std::vector<std::string>{"Eval/Completed", "Deploy/Waiting", "Deploy/Ready",
                                      "Deploy/Starting", "Deploy/Completed", "Train/Waiting"}));
}

// [D:I23.3]: a 2021 GM, shown as such on this connection (S5: an LL job with no
// conditions), under --gm-protocol auto. The deploy decision follows --deploy-report-delay, not
// the 30 s --deploy-wait kept for a (Deploy, Waiting) such a GM never sends; round 2 retrains from
// models[1] of round 1's (Train, Completed), as the 2021 LC's getTrainOrEvalModel does, although
// the initial model has the format of models[0] (the v0.5+ format rule would take that one).
TEST_F(IlGenerationsTest, G1_EvidentUnderAuto_DecidedAfterTheReportDelayAndRetrainsFromModels1) {
  World(false, {"--deploy-wait", "30", "--deploy-report-delay", "1"});
  ASSERT_TRUE(gm->SendTo(kDefaultNode, "insert", LlJobObject()));  // S5: G1
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG1);
  SetIlModels(job);
  job.SetModel(core::gm::EdgeSend::What::kInitialModel,
               ModelObject("initial-model", kBaseModelUrl, "pb"));
  gm->Sync(job);
  for (int round = 1; round <= 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, round, "NEW-" + std::to_string(round), true));
    // On a LC that waits for --deploy-wait the round closes 30 s after the eval report.
    ASSERT_TRUE(Run(job, Closed(round), 15s)) << job.LastCondition();
    auto eval = FramesOf("eval", "completed");
    auto ready = FramesOf("deploy", "ready");
    ASSERT_EQ(eval.size(), static_cast<size_t>(round));
    ASSERT_EQ(ready.size(), static_cast<size_t>(round));
    const auto took = ready.back().received - eval.back().received;
    EXPECT_GE(took, 1000ms) << "decided before --deploy-report-delay";
    EXPECT_LT(took, 10s) << "waited for a (Deploy, Waiting) a 2021 GM never sends";
    std::printf("round %d: deploy decision %lld ms after the eval report was forwarded\n", round,
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  }
  auto train = FramesOf("train", "ready");
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[1].body["input"]["models"][0].value("url", ""), "/output/train/1");
  EXPECT_EQ(train[1].body["input"]["models"][0].value("format", ""), "ckpt");
}

// The same job on a GM whose generation is not evident (no LL job): the v0.5+ format rule
// retrains from models[0] (pb, the initial model's format).
TEST_F(IlGenerationsTest, GenerationUnknownUnderAuto_RetrainsByTheFormatRule) {
  World(false, {"--deploy-wait", "1.5"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG1);
  SetIlModels(job);
  job.SetModel(core::gm::EdgeSend::What::kInitialModel,
               ModelObject("initial-model", kBaseModelUrl, "pb"));
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "NEW-1", true));
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  AppendFile(rootfs + kIlIndexUrl, IndexLines(1001, 1700));
  ASSERT_TRUE(Run(job, At("Train/Running"))) << job.LastCondition();
  auto train = FramesOf("train", "ready");
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[1].body["input"]["models"][0].value("url", ""), "/output/train/1/model.pb");
}

// §H3.4 test 2: G2 publishes (Deploy, Waiting); the LC answers it (long before a 30 s wait could
// fire), for two rounds (deploy, then keep); with [P:R1] on nothing the LC sent is erased.
TEST_F(IlGenerationsTest, G2_ColdRoundsAnswerDeployWaiting_R1EraseNothing) {
  World(false, {"--deploy-wait", "30"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.EnableR1(300ms);
  gm->Sync(job);
  const auto t0 = GmClock::now();
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "NEW-MODEL-ROUND-1", true));
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  EXPECT_LT(GmClock::now() - t0, 25s) << "the decision waited for the timer";
  auto ready = FramesOf("deploy", "ready");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(
      ready[0].content,
      R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}]},"output":null})");
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
  // G2 cold: no Starting detour.
  const auto c = job.Conditions();
  EXPECT_EQ(std::vector<std::string>(c.end() - 4, c.end()),
            (std::vector<std::string>{"Deploy/Waiting", "Deploy/Ready", "Deploy/Completed",
                                      "Train/Waiting"}));
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 2, "NEW-MODEL-ROUND-2", false));
  ASSERT_TRUE(Run(job, Closed(2))) << job.LastCondition();
  EXPECT_EQ(FramesOf("deploy", "completed").size(), 1u) << "round 2 kept the deployed model";
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
  EXPECT_EQ(DeployDecisions(), 2);
  EXPECT_FALSE(LcConditionErased(job));
}

// §H3.4 test 3 and upstream [P:U381]: G2 hot update, the inference pod on another node. That node's
// LC writes the model and model_config.json (the v0.7.0 bytes) on (Deploy, Running) in every
// round; the inference worker's deploy report is forwarded and the next round starts.
TEST_F(IlGenerationsTest, G2_HotUpdateOnAnotherNodeEveryRound_Upstream381) {
  World(true, {"--deploy-wait", "30"});
  IlJobSpec spec;
  spec.hot_update = true;
  GmJob job(JobKind::kIncremental, IlJobObject(spec), Generation::kG2);
  SetIlModels(job);
  job.Place(Stage::kDeploy, kNode2);
  job.SetPod(Stage::kDeploy, core::gm::PodPhase::kRunning);  // the first sync's inference pod
  gm->Sync(job);
  const std::regex config_re(
      "\\{\n \"model_config\": \\{\n  \"model_path\": \"/model-hot-update/model\\.pb\",\n  "
      "\"model_update_time\": \"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ [+-][0-9]{4} [A-Z]+ "
      "m=\\+[0-9.]+\"\n \\}\n\\}");
  std::string previous_config;
  for (int round = 1; round <= 2; ++round) {
    const std::string bytes = "HOT-MODEL-ROUND-" + std::to_string(round);
    ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, round, bytes, true));
    ASSERT_TRUE(Run(job, At("Deploy/Running"))) << "round " << round << ": " << job.LastCondition();
    // The deploy node's LC writes the files; wait for them as the inference worker polls.
    const std::string cfg = rootfs + kHotDir + "/model_config.json";
    std::string config;
    for (auto until = GmClock::now() + 20s; GmClock::now() < until;) {
      config = stdfs::exists(cfg) ? ReadFile(cfg) : "";
      if (!config.empty() && config != previous_config) break;
      std::this_thread::sleep_for(20ms);  // a file on shared storage: polled, as the worker does
    }
    ASSERT_NE(config, previous_config) << "round " << round << ": model_config.json not written";
    EXPECT_TRUE(std::regex_match(config, config_re)) << config;
    EXPECT_EQ(ReadFile(rootfs + kHotDir + "/model.pb"), bytes);
    EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), bytes) << "the deploy model is updated too";
    EXPECT_EQ((stdfs::status(cfg).permissions() & stdfs::perms::all),
              stdfs::perms::owner_read | stdfs::perms::owner_write | stdfs::perms::group_read |
                  stdfs::perms::others_read);
    previous_config = config;
    EXPECT_EQ(
        PostWorkerTo(
            *node2, "inferworker-x1y2z",
            R"({"name":"inferworker-x1y2z","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"deploy","status":"completed"})"),
        kOk);
    ASSERT_TRUE(Run(job, Closed(round))) << "round " << round << ": " << job.LastCondition();
  }
  auto forwarded = FramesOf("deploy", "completed");
  ASSERT_EQ(forwarded.size(), 2u);
  for (const auto& f : forwarded) {
    EXPECT_EQ(f.node, kNode2);
    EXPECT_EQ(
        f.content,
        R"({"phase":"deploy","status":"completed","output":{"models":null,"ownerInfo":null}})");
  }
  for (const auto& f : FramesOf("deploy", "ready")) EXPECT_EQ(f.node, kDefaultNode);
}

// §H3.4 test 4: the eval pod on another node; that node's LC receives the eval report and the
// (Deploy, Waiting) and decides (2021: "no eval was dispatched by this LC", stuck); round 2 too.
TEST_F(IlGenerationsTest, G2_EvalOnAnotherNodeDecides) {
  World(true, {"--deploy-wait", "30"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.Place(Stage::kEval, kNode2);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(DeployingRounds(job, 2, kDefaultNode, kNode2));
  auto ready = FramesOf("deploy", "ready");
  ASSERT_EQ(ready.size(), 2u);
  for (const auto& f : ready) EXPECT_EQ(f.node, kNode2) << "the eval node's LC decides";
  for (const auto& f : FramesOf("eval", "ready")) EXPECT_EQ(f.node, kDefaultNode);
}

// [D:I23.6], G2, two nodes: train on the dataset node, the eval pod and so the (Deploy,
// Waiting) on the other; the GM's informers 500 ms late ([P:R1] writes land 500 ms after their
// sync, stale re-indexed objects). Before: the deploy node's LC answered each stale (Deploy,
// Waiting) (another copy and Deploy Ready, or "not deployed: no eval result" once it had forgotten
// the round's eval report).
TEST_F(IlGenerationsTest, G2_InformerLag_TwoNodes_OneDecisionPerRound) {
  World(true, {"--deploy-wait", "30"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.Place(Stage::kEval, kNode2);
  job.EnableR1(500ms);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(StaleDeployWaitingRounds(job, kNode2, kNode2));
}

// The same on one node (train, eval and the decision on the dataset node's LC).
TEST_F(IlGenerationsTest, G2_InformerLag_OneNode_OneDecisionPerRound) {
  World(false, {"--deploy-wait", "30"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.EnableR1(500ms);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(StaleDeployWaitingRounds(job, kDefaultNode, kDefaultNode));
}

// §H3.3: the LC killed during the deploy wait: after the restart the round is decided once.
TEST_F(IlGenerationsTest, G1_RestartDuringTheWait_DecidedOnce) {
  World(false, {"--deploy-wait", "2"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG1);
  SetIlModels(job);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "NEW-MODEL-ROUND-1", true));
  ASSERT_TRUE(Run(job, At("Deploy/Waiting"))) << job.LastCondition();  // the forward arrived
  // The kill falls inside the wait: no decision yet (the 2021 LC sent it with the forward).
  auto early = gm->Next("IncrementalLearningJob", 300ms);
  ASSERT_FALSE(early) << early->content;
  KillAndRestart(0, args);
  gm->Sync(job);  // the GM's resync after the reconnect (G1 sends no Deploy stage: nothing)
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  EXPECT_EQ(DeployDecisions(), 1);
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
}

// §H3.4 test 8: the GM is upgraded from G1 to G2 while a round waits for its decision: G2's
// resync publishes (Deploy, Waiting), which is answered at once, and the wait sends nothing more.
TEST_F(IlGenerationsTest, GmUpgradedG1ToG2DuringTheWait_AnsweredOnce) {
  World(false, {"--deploy-wait", "8"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG1);
  SetIlModels(job);
  // The 2021 IL GM annotates sedna.io/Train|Eval with the pods' node too, so G2 knows the eval
  // node after the upgrade (without it, (Deploy, Waiting) goes to node "" and the wait rescues).
  job.Place(Stage::kTrain, kDefaultNode);
  job.Place(Stage::kEval, kDefaultNode);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "NEW-MODEL-ROUND-1", true));
  ASSERT_TRUE(Run(job, At("Deploy/Waiting"))) << job.LastCondition();
  auto early = gm->Next("IncrementalLearningJob", 300ms);
  ASSERT_FALSE(early) << "decided before the upgrade: " << early->content;
  const auto forwarded = FramesOf("eval", "completed").at(0).received;
  job.SetGeneration(Generation::kG2);
  const int connections = gm->server().connection_count();
  gm->server().DropConnection();  // a GM upgrade is a GM restart
  ASSERT_TRUE(gm->server().WaitForConnection(20s));
  EXPECT_GT(gm->server().connection_count(), connections);
  const auto synced = GmClock::now();
  gm->Sync(job);  // G2's initial list: (Deploy, Waiting) to the eval node
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  auto ready = FramesOf("deploy", "ready");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_LT(ready[0].received - forwarded, 8s) << "answered by the wait, not (Deploy, Waiting)";
  EXPECT_GE(ready[0].received, synced);
  // Past the wait: no second decision.
  auto more = gm->Next(
      "IncrementalLearningJob",
      std::chrono::duration_cast<std::chrono::milliseconds>(forwarded + 9s - GmClock::now()));
  EXPECT_FALSE(more) << more->content;
}

// §H3.4 test 5 (§H1.4): the eval pod finished before the GM saw it Running, so `sedna.io/Eval` is
// unset and G2 sends (Deploy, Waiting) to node "" (v0.7.0 stalls there); the wait rescues it.
TEST_F(IlGenerationsTest, G2_EvalNodeUnknown_DeployWaitingToNobody_TheWaitDecides) {
  World(false, {"--deploy-wait", "1"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.Place(Stage::kEval, "");
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "NEW-MODEL-ROUND-1", true));
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  bool to_nobody = false;
  for (const auto& u : gm->undelivered()) {
    to_nobody |= u.node.empty() && u.kind == core::kKindIlJob && u.op == "insert";
  }
  EXPECT_TRUE(to_nobody) << "the GM's (Deploy, Waiting) was delivered after all";
  auto eval = FramesOf("eval", "completed");
  auto ready = FramesOf("deploy", "ready");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_GE(ready[0].received - eval.at(0).received, 1s);
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
}

// §H1.4: the train pod on another node. G2 sends that node the job at (Train, Running) and a
// delete at (Eval, Running); its LC only forwards, and the delete costs the dataset node's LC
// nothing. Round 2 trains there again.
TEST_F(IlGenerationsTest, G2_TrainOnAnotherNode_DeletedThereBetweenRounds) {
  World(true, {"--deploy-wait", "30"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.Place(Stage::kTrain, kNode2);
  gm->Sync(job);
  ASSERT_NO_FATAL_FAILURE(DeployingRounds(job, 2, kNode2, kDefaultNode));
  auto train = FramesOf("train", "completed");
  ASSERT_EQ(train.size(), 2u);
  for (const auto& f : train) EXPECT_EQ(f.node, kNode2);
  for (const auto& f : FramesOf("train", "ready")) EXPECT_EQ(f.node, kDefaultNode);
  ASSERT_EQ(FramesOf("train", "ready").size(), 2u) << "the dataset node's round count kept";
  EXPECT_EQ(FramesOf("train", "ready")[1].body["input"]["outputDir"], "/output/train/2");
}

// §H3.4 test 6 / §H3.3: the deploy node's LC killed at (Deploy, Running) after writing the config.
// After the restart and the GM's resync it does not write again (the worker would report a
// stray deploy completed); the worker's report ends the round and round 2 writes once more.
TEST_F(IlGenerationsTest, G2_HotKilledAtDeployRunning_NoSecondWriteRoundTwoWrites) {
  World(false, {"--deploy-wait", "30"});
  IlJobSpec spec;
  spec.hot_update = true;
  GmJob job(JobKind::kIncremental, IlJobObject(spec), Generation::kG2);
  SetIlModels(job);
  job.SetPod(Stage::kDeploy, core::gm::PodPhase::kRunning);
  gm->Sync(job);
  const std::string cfg = rootfs + kHotDir + "/model_config.json";
  auto wait_config = [&](const std::string& not_this) {
    std::string c;
    for (auto until = GmClock::now() + 20s; GmClock::now() < until;) {
      c = stdfs::exists(cfg) ? ReadFile(cfg) : "";
      if (!c.empty() && c != not_this) break;
      std::this_thread::sleep_for(20ms);  // a file on the host: polled, as the worker does
    }
    return c;
  };
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 1, "HOT-1", true));
  ASSERT_TRUE(Run(job, At("Deploy/Running"))) << job.LastCondition();
  const std::string first = wait_config("");
  ASSERT_FALSE(first.empty());
  // Killed as soon as the config is there: before or after the core has recorded the write. Before,
  // the write resumed on restart finds its own config in place (the ledger's record of it) and
  // does not write again; after, no write is resumed.
  KillAndRestart(0, args);
  gm->Sync(job);  // the resync: still (Deploy, Running)
  Barrier();      // the LC has handled it
  Barrier();      // and any write it started has had a loop turn to land
  EXPECT_EQ(ReadFile(cfg), first) << "rewritten after the restart";
  EXPECT_EQ(
      PostWorker(
          "inferworker-x1y2z",
          R"({"name":"inferworker-x1y2z","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"deploy","status":"completed"})"),
      kOk);
  ASSERT_TRUE(Run(job, At("Train/Waiting"))) << job.LastCondition();
  ASSERT_NO_FATAL_FAILURE(RoundToEvalReport(job, 2, "HOT-2", true));
  ASSERT_TRUE(Run(job, At("Deploy/Running"))) << job.LastCondition();
  EXPECT_NE(wait_config(first), first);
  EXPECT_EQ(ReadFile(rootfs + kHotDir + "/model.pb"), "HOT-2");
}

// [D:I23.5]: the eval node's LC restarted (kill -9) before the GM sent it the job, and the
// eval worker's report reaches it before the job does (the GM has not yet seen the eval pod
// Running, so it has not sent that node the job; PostOn's wait is deliberately not used). The
// report is kept (answered 200), survives a second kill -9, and is applied in order when the job
// arrives: the round is decided on its metrics. Before: "message for unknown
// incrementallearningjob ... dropped", and the round decided "not deployed: no eval result".
TEST_F(IlGenerationsTest, G2_EvalReportBeforeTheJob_KeptAcrossKill9_DecidedOnIt) {
  World(true, {"--deploy-wait", "30"});
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.Place(Stage::kEval, kNode2);
  gm->Sync(job);
  AppendFile(rootfs + kIlIndexUrl, IndexLines(1, 1000));
  ASSERT_TRUE(Run(job, At("Train/Running"))) << job.LastCondition();
  KillAndRestartNode(*node2);  // the eval node's LC restarted; it never had the job
  const std::string out = "/output/train/1";
  stdfs::create_directories(rootfs + out);
  WriteFile(rootfs + out + "/model.pb", "NEW-MODEL-ROUND-1");
  EXPECT_EQ(
      PostWorker(
          "train-worker-a1",
          R"({"name":"train-worker-a1","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"train","status":"completed","results":[{"format":"pb","url":"/output/train/1/model.pb","metrics":{"loss":0.5}},{"format":"ckpt","url":"/output/train/1","metrics":{"loss":0.5}}]})"),
      kOk);
  // The eval pod is created, not yet seen Running: node 2 has not been sent the job.
  GmEmulator::RunOptions o;
  o.run_created_pods = false;
  o.on_frame = [&](const UpstreamFrame& f) { frames.push_back(f); };
  ASSERT_TRUE(gm->RunUntil(job, At("Eval/Starting"), o))
      << ::testing::PrintToString(job.Conditions());
  ASSERT_FALSE(KnownOnNode2());
  EXPECT_EQ(
      PostWorkerTo(
          *node2, "eval-worker-b1",
          R"({"name":"eval-worker-b1","namespace":"default","ownerName":"helmet-detection-demo","ownerKind":"incrementallearningjob","kind":"eval","status":"completed","results":[{"format":"pb","url":"/output/train/1/model.pb","metrics":{"precision":[0.9]}},{"format":"pb","url":"/models/deploy_model/saved_model.pb","metrics":{"precision":[0.5]}}]})"),
      kOk);
  KillAndRestartNode(*node2);  // the kept report survives kill -9
  EXPECT_NE(node2->lc->Log().find("1 worker report(s) kept before their job arrived"),
            std::string::npos);
  job.SetPod(Stage::kEval, core::gm::PodPhase::kRunning);
  gm->Sync(job);  // the job reaches node 2 at (Eval, Running)
  ASSERT_TRUE(Run(job, Closed(1))) << job.LastCondition();
  EXPECT_EQ(ReadFile(rootfs + kDeployModelUrl), "NEW-MODEL-ROUND-1");
  auto eval = FramesOf("eval", "completed");
  ASSERT_EQ(eval.size(), 1u) << "the kept report is forwarded once";
  EXPECT_EQ(eval[0].node, kNode2);
  auto ready = FramesOf("deploy", "ready");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].node, kNode2) << "the eval node's LC decides, on the kept report";
  EXPECT_EQ(ready[0].body["input"]["models"][0].value("url", ""), "/output/train/1/model.pb")
      << "deployed on the kept report's metrics (0.9 against 0.5)";
  EXPECT_EQ(DeployDecisions(), 1);
  const std::string log = node2->lc->Log();
  EXPECT_EQ(log.find("no eval result"), std::string::npos);
  EXPECT_NE(log.find("worker report(s) kept before the job arrived applied"), std::string::npos);
}

}  // namespace
}  // namespace sedna::testing
