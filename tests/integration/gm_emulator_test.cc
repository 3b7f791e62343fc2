// Self-tests of the GM emulator's G2, multi-node and [P:R1] modes (docs/protocol.md §H1.3, §H1.4,
// §H1.7, §H2.0, §H4.1), driven by hand-written LC frames from raw websocket clients, so they hold
// whatever sedna-lc does. The last test runs two real sedna-lc processes against one emulator.
#include "gm_emulator.h"

#include <gtest/gtest.h>

#include <utility>  // before Asio: Boost 1.74 + g++ 12

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "adapters/json/envelope.h"
#include "cluster_fixture.h"
#include "objects.h"

namespace sedna::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ws = beast::websocket;
using asio::ip::tcp;
using core::Stage;
using core::gm::EdgeSend;
using core::gm::Generation;
using core::gm::JobKind;
using core::gm::PodPhase;
using namespace std::chrono_literals;

// A websocket client standing in for an LC: the Node-Name header on the handshake, text frames
// up, and the GM's frames decoded into a queue by a reader thread.
class RawLc {
 public:
  RawLc(uint16_t port, const std::string& node) : ws_(io_) {
    tcp::resolver resolver(io_);
    asio::connect(ws_.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    ws_.set_option(
        ws::stream_base::decorator([node](ws::request_type& req) { req.set("Node-Name", node); }));
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/");
    ws_.text(true);
    reader_ = std::thread([this] {
      for (;;) {
        beast::flat_buffer buf;
        beast::error_code ec;
        ws_.read(buf, ec);
        std::lock_guard<std::mutex> lock(mu_);
        if (ec) {
          closed_ = true;
          cv_.notify_all();
          return;
        }
        frames_.push_back(beast::buffers_to_string(buf.data()));
        cv_.notify_all();
      }
    });
  }
  ~RawLc() {
    beast::error_code ec;
    ws_.next_layer().shutdown(tcp::socket::shutdown_both, ec);
    ws_.next_layer().close(ec);
    reader_.join();
  }

  // An upstream "status" message for a job, as the LC sends it.
  void Status(const std::string& kind, const std::string& name, const std::string& content) {
    const std::string text = json::EncodeFrame({"default", kind, name, "status"}, content);
    std::lock_guard<std::mutex> lock(write_mu_);
    ws_.write(asio::buffer(text));
  }
  void IlStatus(const std::string& content) {
    Status("IncrementalLearningJob", kIlJobName, content);
  }

  // The next GM frame: "<op> <kind>/<name>" and its decoded object.
  struct Got {
    std::string what;
    Json object;
  };
  std::optional<Got> Next(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !frames_.empty() || closed_; })) {
      return std::nullopt;
    }
    if (frames_.empty()) return std::nullopt;
    std::string text = std::move(frames_.front());
    frames_.pop_front();
    auto f = json::DecodeFrame(text);
    if (!f.ok()) return Got{"undecodable " + text, Json()};
    return Got{f->header.operation + " " + f->header.resource_kind + "/" + f->header.resource_name,
               Json::parse(f->content)};
  }
  bool WaitClosed(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_; });
  }

 private:
  asio::io_context io_;
  ws::stream<tcp::socket> ws_;
  std::thread reader_;
  std::mutex write_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> frames_;
  bool closed_ = false;
};

// The LC's upstream contents of one IL round (docs/protocol.md §H1.9 N1-N5, shortened).
const std::string kTrainReady =
    R"({"phase":"Train","status":"Ready","input":{"models":[{"format":"ckpt","url":"/models/base_model"}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"},"output":null})";
const std::string kTrainDone =
    R"({"phase":"train","status":"completed","output":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"ckpt","url":"/output/train/1"}],"ownerInfo":null}})";
const std::string kEvalReady =
    R"({"phase":"Eval","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}],"dataURL":"/output/data/eval/1/data.txt"},"output":null})";
const std::string kEvalDone =
    R"({"phase":"eval","status":"completed","output":{"models":[{"format":"pb","url":"/output/train/1/model.pb","metrics":{"precision":[0.9]}},{"format":"pb","url":"/models/deploy_model/saved_model.pb","metrics":{"precision":[0.5]}}],"ownerInfo":null}})";
const std::string kDeployReady =
    R"({"phase":"Deploy","status":"Ready","input":{"models":[{"format":"pb","url":"/output/train/1/model.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}]},"output":null})";
const std::string kDeployDone =
    R"({"phase":"deploy","status":"completed","output":{"models":null,"ownerInfo":null}})";

std::vector<std::string> Names(const std::vector<EdgeSend>& sends) {
  std::vector<std::string> out;
  for (const auto& s : sends) out.push_back(core::gm::ToString(s));
  return out;
}

// The last n conditions, "Stage/Type".
std::vector<std::string> Tail(const GmJob& job, size_t n) {
  std::vector<std::string> all = job.Conditions();
  if (all.size() > n) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(n));
  return all;
}

// Drives a job from (Train, Waiting) to (Deploy, Waiting) with hand-written reports, pods on
// their placed nodes.
void RunToDeployWaiting(GmJob& job) {
  job.Report(kTrainReady);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  job.Report(kTrainDone);
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  job.Report(kEvalReady);
  job.SetPod(Stage::kEval, PodPhase::kRunning);
  job.Report(kEvalDone);
  job.SetPod(Stage::kEval, PodPhase::kSucceeded);
}

class GmEmulatorTest : public ::testing::Test {
 protected:
  GmEmulator gm;
};

// ---- G2 (§H1.3, §H1.4, §H4.1) -----------------------------------------------------------------

// A hot-update IL round on a G2 GM, single node, driven by hand: the first sync annotates the
// hot-update config, (Deploy, Waiting) goes to the eval node, Deploy Ready leads to
// (Deploy, Running) with sedna.io/Deploy, the deploy node gets the deploy Model and the job, and
// the forwarded "deploy completed" closes the round.
TEST_F(GmEmulatorTest, G2HotRoundSingleNode) {
  IlJobSpec spec;
  spec.hot_update = true;
  GmJob job(JobKind::kIncremental, IlJobObject(spec), Generation::kG2);
  SetIlModels(job);
  RawLc lc(gm.server().port(), kDefaultNode);
  ASSERT_TRUE(gm.WaitForNode(kDefaultNode));

  const std::string cfg =
      "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet-detection-demo/"
      "model_config.json";
  EXPECT_EQ(job.state().annotations.at(core::kHotUpdateConfigAnnotation), cfg);
  EXPECT_EQ(Names(gm.Sync(job)), (std::vector<std::string>{"insert initialModel -> edge-node",
                                                           "insert job -> edge-node"}));
  EXPECT_EQ(lc.Next()->what, "insert model/initial-model");
  auto first = lc.Next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->what, "insert incrementallearningjob/helmet-detection-demo");
  EXPECT_EQ(first->object["metadata"]["annotations"][core::kHotUpdateConfigAnnotation], cfg);

  job.SetPod(Stage::kDeploy, PodPhase::kRunning);  // the inference pod of the first sync
  RunToDeployWaiting(job);
  EXPECT_EQ(job.LastCondition(), "Deploy/Waiting");
  EXPECT_EQ(job.state().annotations.at("sedna.io/Train"), kDefaultNode);
  EXPECT_EQ(job.state().annotations.at("sedna.io/Eval"), kDefaultNode);
  EXPECT_EQ(Names(gm.Sync(job)), (std::vector<std::string>{"insert deployModel -> edge-node",
                                                           "insert job -> edge-node"}));
  EXPECT_EQ(lc.Next()->what, "insert model/deploy-model");
  EXPECT_EQ(lc.Next()->object["status"]["conditions"].back()["type"], "Waiting");

  // Hot: no inference restart; the running inference pod takes the job to (Deploy, Running).
  EXPECT_TRUE(job.Report(kDeployReady).empty());
  EXPECT_EQ(job.LastCondition(), "Deploy/Running");
  EXPECT_EQ(job.state().annotations.at("sedna.io/Deploy"), kDefaultNode);
  EXPECT_EQ(Names(gm.Sync(job)), (std::vector<std::string>{"insert deployModel -> edge-node",
                                                           "insert job -> edge-node"}));
  EXPECT_EQ(lc.Next()->what, "insert model/deploy-model");
  auto running = lc.Next();
  ASSERT_TRUE(running);
  EXPECT_EQ(running->object["status"]["conditions"].back()["stage"], "Deploy");
  EXPECT_EQ(running->object["status"]["conditions"].back()["type"], "Running");
  EXPECT_EQ(running->object["metadata"]["annotations"]["sedna.io/Deploy"], kDefaultNode);

  // A resync changes nothing; the inference worker's report (forwarded) ends the round.
  EXPECT_TRUE(job.Settle().empty());
  EXPECT_EQ(job.LastCondition(), "Deploy/Running");
  job.Report(kDeployDone);
  EXPECT_EQ(job.LastCondition(), "Train/Waiting");
  const std::vector<std::string> tail = Tail(job, 6);
  EXPECT_EQ(tail,
            (std::vector<std::string>{"Deploy/Waiting", "Deploy/Ready", "Deploy/Starting",
                                      "Deploy/Running", "Deploy/Completed", "Train/Waiting"}));
  EXPECT_TRUE(gm.undelivered().empty());
}

// G2 cold: (Deploy, Ready) restarts the inference pod and goes to (Deploy, Completed) directly;
// G1 takes the Starting detour and never syncs the Deploy stage.
TEST_F(GmEmulatorTest, ColdDeployPerGeneration) {
  for (Generation g : {Generation::kG1, Generation::kG2}) {
    SCOPED_TRACE(core::gm::GenerationName(g));
    GmJob job(JobKind::kIncremental, IlJobObject(), g);
    job.Place(Stage::kTrain, kDefaultNode);
    job.Place(Stage::kEval, kDefaultNode);
    RunToDeployWaiting(job);
    EXPECT_EQ(Names(job.Sends()).size(), g == Generation::kG2 ? 2u : 0u);
    auto actions = job.Report(kDeployReady);
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<core::gm::RestartInferencePod>(actions[0]));
    if (g == Generation::kG2) {
      const std::vector<std::string> tail = Tail(job, 3);
      EXPECT_EQ(tail,
                (std::vector<std::string>{"Deploy/Ready", "Deploy/Completed", "Train/Waiting"}));
    } else {
      EXPECT_EQ(job.LastCondition(), "Deploy/Starting");
      job.SetPod(Stage::kDeploy, PodPhase::kRunning);
      EXPECT_EQ(job.LastCondition(), "Train/Waiting");
    }
  }
}

// A GM upgraded G1 -> G2 while the job waits at (Deploy, Waiting): G1 sends nothing for it, G2
// sends it to the eval node.
TEST_F(GmEmulatorTest, GenerationSwitchMidRound) {
  GmJob job(JobKind::kIncremental, IlJobObject());
  job.Place(Stage::kTrain, kDefaultNode);
  job.Place(Stage::kEval, "eval-node");
  RunToDeployWaiting(job);
  EXPECT_TRUE(job.Sends().empty());
  job.SetGeneration(Generation::kG2);
  EXPECT_EQ(Names(job.Sends()), (std::vector<std::string>{"insert deployModel -> eval-node",
                                                          "insert job -> eval-node"}));
}

// ---- multi-node (§H1.4) ------------------------------------------------------------------------

// Two LCs at once: each send reaches only its node's connection; upstream frames carry the node
// they came from; a send to "" or to an absent node is kept undelivered and counted.
TEST_F(GmEmulatorTest, MultiNodeRoutesEachSendToItsNode) {
  gm.SetMultiNode(true);
  RawLc a(gm.server().port(), "node-a");
  RawLc b(gm.server().port(), "node-b");
  ASSERT_TRUE(gm.WaitForNode("node-a"));
  ASSERT_TRUE(gm.WaitForNode("node-b"));
  EXPECT_EQ(gm.server().connected_nodes(), (std::vector<std::string>{"node-a", "node-b"}));

  // Dataset on node-a, eval pod on node-b.
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.SetDatasetNode("node-a");
  job.Place(Stage::kTrain, "node-a");
  job.Place(Stage::kEval, "node-b");
  RunToDeployWaiting(job);
  ASSERT_EQ(job.LastCondition(), "Deploy/Waiting");
  gm.Sync(job);
  EXPECT_EQ(b.Next()->what, "insert model/deploy-model");
  EXPECT_EQ(b.Next()->what, "insert incrementallearningjob/helmet-detection-demo");
  // node-a got nothing: the next frame it sees is one sent to it afterwards.
  ASSERT_TRUE(gm.SendTo("node-a", "insert", DatasetObject("marker")));
  EXPECT_EQ(a.Next()->what, "insert dataset/marker");

  EXPECT_FALSE(gm.SendTo("", "insert", job.Object()));
  EXPECT_FALSE(gm.SendTo("node-c", "delete", job.Object()));
  ASSERT_EQ(gm.undelivered().size(), 2u);
  EXPECT_EQ(gm.undelivered()[0].node, "");
  EXPECT_EQ(gm.undelivered()[1].node, "node-c");
  EXPECT_EQ(gm.undelivered()[1].op, "delete");
  EXPECT_EQ(gm.undelivered()[1].kind, "incrementallearningjob");

  b.IlStatus(kDeployReady);
  auto f = gm.Next("IncrementalLearningJob");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->node, "node-b");
  a.Status("Dataset", "marker", R"({"numberOfSamples":0})");
  auto d = gm.Next("Dataset");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->node, "node-a");

  // The CR deleted: one delete per distinct node, "" included (kept undelivered).
  EXPECT_EQ(Names(gm.Sync(job, true)),
            (std::vector<std::string>{"delete job -> \"\"", "delete job -> node-a",
                                      "delete job -> node-b"}));
  EXPECT_EQ(a.Next()->what, "delete incrementallearningjob/helmet-detection-demo");
  EXPECT_EQ(b.Next()->what, "delete incrementallearningjob/helmet-detection-demo");
  EXPECT_EQ(gm.undelivered().size(), 3u);
}

// A reconnecting node replaces only its own connection.
TEST_F(GmEmulatorTest, MultiNodeReconnectReplacesOnlyThatNode) {
  gm.SetMultiNode(true);
  RawLc a(gm.server().port(), "node-a");
  auto b1 = std::make_unique<RawLc>(gm.server().port(), "node-b");
  ASSERT_TRUE(gm.WaitForNode("node-a"));
  ASSERT_TRUE(gm.WaitForNode("node-b"));
  RawLc b2(gm.server().port(), "node-b");
  EXPECT_TRUE(b1->WaitClosed(10s)) << "the older node-b connection stays open";
  ASSERT_TRUE(gm.SendTo("node-b", "insert", DatasetObject("to-b")));
  ASSERT_TRUE(gm.SendTo("node-a", "insert", DatasetObject("to-a")));
  EXPECT_EQ(b2.Next()->what, "insert dataset/to-b");
  EXPECT_EQ(a.Next()->what, "insert dataset/to-a");
}

// LL on G2 with the train pod on another node: Waiting goes to the dataset node, Running to the
// train node, and Completed deletes the job from the train node (§H1.7).
TEST_F(GmEmulatorTest, G2LifelongTrainOnAnotherNode) {
  GmJob job(JobKind::kLifelong, LlJobObject(), Generation::kG2);
  job.Place(Stage::kTrain, "train-node");
  EXPECT_EQ(Names(job.Sends()), (std::vector<std::string>{"insert job -> edge-node"}));
  job.Report(
      R"({"phase":"Train","status":"Ready","input":{"dataURL":"/output/data/train/1/data.csv","outputDir":"/output/train/1"},"output":null})");
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  EXPECT_EQ(job.LastCondition(), "Train/Running");
  EXPECT_EQ(Names(job.Sends()), (std::vector<std::string>{"insert job -> train-node"}));
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  // (Train, Completed) is immediately followed by (Eval, Waiting): check each sync's sends.
  auto conds = job.Conditions();
  EXPECT_EQ(conds.back(), "Eval/Waiting");
  EXPECT_EQ(conds[conds.size() - 2], "Train/Completed");
  core::gm::GmJobState at_completed = job.state();
  at_completed.conditions.pop_back();
  EXPECT_EQ(Names(core::gm::SyncSends(job.spec(), at_completed, kDefaultNode)),
            (std::vector<std::string>{"delete job -> train-node"}));
  EXPECT_EQ(Names(job.Sends()), (std::vector<std::string>{"insert job -> edge-node"}));
}

// §H4.4: a v0.6+ GM computes status.knowledgeBase from the output models of each LC message and
// gives the round-2 train pod HAS_COMPLETED_INITIAL_TRAINING and CLOUD_KB_INDEX.
TEST_F(GmEmulatorTest, G2LifelongKnowledgeBaseAndTrainPodEnv) {
  GmJob job(JobKind::kLifelong, LlJobObject(), Generation::kG2);
  EXPECT_EQ(
      job.Object()["status"]["knowledgeBase"],
      Json::parse(
          R"({"AIModels":{"numberOfAIModels":0},"AIClasses":{"numberOfAIClasses":0},"samples":{"numberOfLabeledUnseenSample":0,"numberOfUnseenSample":0}})"));
  EXPECT_EQ(job.TrainPodEnv(),
            (std::map<std::string, std::string>{{"HAS_COMPLETED_INITIAL_TRAINING", "false"}}));
  job.Report(
      R"({"phase":"Train","status":"Ready","input":{"dataURL":"/output/data/train/1/data.csv","outputDir":"/output/train/1"},"output":null})");
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  job.Report(
      R"({"phase":"train","status":"completed","output":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl","classes":["road","sidewalk"],"current_metric":{"front_model":{"mIoU":0.61}},"number_of_labeled_unseen_sample":12}],"ownerInfo":null}})");
  EXPECT_EQ(
      job.Object()["status"]["knowledgeBase"],
      Json::parse(
          R"({"AIModels":{"numberOfAIModels":1,"listOfAIModels":[{"modelID":"front_model","averagePrecision":0.61,"numberOfTrainSamples":12}]},"AIClasses":{"numberOfAIClasses":2,"listOfAIClasses":["road","sidewalk"]},"samples":{"numberOfLabeledUnseenSample":12,"numberOfUnseenSample":0}})"));
  EXPECT_EQ(job.TrainPodEnv(),
            (std::map<std::string, std::string>{{"HAS_COMPLETED_INITIAL_TRAINING", "true"},
                                                {"CLOUD_KB_INDEX", "/output/train/1/index.pkl"}}));
  // G1 sends no knowledge base.
  GmJob g1(JobKind::kLifelong, LlJobObject());
  EXPECT_FALSE(g1.Object()["status"].contains("knowledgeBase"));
  EXPECT_TRUE(g1.TrainPodEnv().empty());
}

// ---- [P:R1] (§H2.0) ----------------------------------------------------------------------------

// With the controller's write landing 500 ms after its sync started, a Deploy Ready sent 5 ms
// after the eval report is erased; sent 600 ms after, it is kept and closes the round.
TEST_F(GmEmulatorTest, R1ErasesAReportAppendedBeforeTheWriteLands) {
  for (auto delay : {5ms, 600ms}) {
    SCOPED_TRACE(delay.count());
    GmJob job(JobKind::kIncremental, IlJobObject());
    job.Place(Stage::kTrain, kDefaultNode);
    job.Place(Stage::kEval, kDefaultNode);
    job.Report(kTrainReady);
    job.SetPod(Stage::kTrain, PodPhase::kRunning);
    job.Report(kTrainDone);
    job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
    job.Report(kEvalReady);
    job.SetPod(Stage::kEval, PodPhase::kRunning);
    job.EnableR1(500ms);
    const auto t0 = GmClock::now();
    job.Report(kEvalDone, t0);  // sync at t0 computes (Deploy, Waiting); lands at t0 + 500 ms
    ASSERT_TRUE(job.next_write());
    EXPECT_EQ(*job.next_write(), t0 + 500ms);
    EXPECT_EQ(job.LastCondition(), "Eval/Completed") << "the write has not landed yet";
    job.Report(kDeployReady, t0 + delay);
    job.AdvanceTo(t0 + 1500ms);
    job.SetPod(Stage::kDeploy, PodPhase::kRunning, t0 + 2s);  // the restarted inference pod
    job.AdvanceTo(t0 + 5s);
    if (delay < 500ms) {
      EXPECT_EQ(job.LastCondition(), "Deploy/Waiting");
      ASSERT_EQ(job.erased().size(), 1u);
      EXPECT_EQ(job.erased()[0].stage, Stage::kDeploy);
      EXPECT_EQ(job.erased()[0].type, core::ConditionType::kReady);
      EXPECT_EQ(job.erased()[0].message, core::gm::kReportedByLcMessage);
    } else {
      EXPECT_TRUE(job.erased().empty());
      const std::vector<std::string> tail = Tail(job, 6);
      EXPECT_EQ(tail,
                (std::vector<std::string>{"Eval/Completed", "Deploy/Waiting", "Deploy/Ready",
                                          "Deploy/Starting", "Deploy/Completed", "Train/Waiting"}));
    }
    EXPECT_FALSE(job.next_write());
  }
}

// The pod-event form: the train pod's Succeeded starts a sync from a status without the LC's
// forwarded report; its data-less (Train, Completed) lands over the report.
TEST_F(GmEmulatorTest, R1PodEventWritesADatalessCompletedOverTheReport) {
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  job.Report(kTrainReady);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  ASSERT_EQ(job.LastCondition(), "Train/Running");
  job.EnableR1(200ms);
  const auto t0 = GmClock::now();
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded, t0);
  job.Report(kTrainDone, t0 + 10ms);
  job.AdvanceTo(t0 + 2s);
  ASSERT_EQ(job.erased().size(), 1u);
  EXPECT_EQ(job.erased()[0].message, core::gm::kReportedByLcMessage);
  EXPECT_NE(job.erased()[0].data_json.find("model.pb"), std::string::npos);
  const auto& conds = job.state().conditions;
  ASSERT_GE(conds.size(), 2u);
  EXPECT_EQ(job.LastCondition(), "Eval/Waiting");
  const auto& completed = conds[conds.size() - 2];
  EXPECT_EQ(completed.type, core::ConditionType::kCompleted);
  EXPECT_TRUE(completed.data_json.empty()) << "the GM's own Completed carries no data";
  for (const auto& c : conds) EXPECT_EQ(c.data_json.find("model.pb"), std::string::npos);
}

// [P:R1] through real frames: two reports written back to back by an LC are received within the
// lag, so NextFor returns the second before the first's write lands, and the landing erases it;
// NextFor then syncs the landed (Deploy, Waiting) to the LC.
TEST_F(GmEmulatorTest, R1WithFramesAndNextFor) {
  RawLc lc(gm.server().port(), kDefaultNode);
  ASSERT_TRUE(gm.WaitForNode(kDefaultNode));
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  job.Report(kTrainReady);
  job.SetPod(Stage::kTrain, PodPhase::kRunning);
  job.Report(kTrainDone);
  job.SetPod(Stage::kTrain, PodPhase::kSucceeded);
  job.Report(kEvalReady);
  job.SetPod(Stage::kEval, PodPhase::kRunning);
  job.EnableR1(1s);  // far above the microseconds between the two writes below
  lc.IlStatus(kEvalDone);
  lc.IlStatus(kDeployReady);
  auto a = gm.NextFor(job, "IncrementalLearningJob");
  ASSERT_TRUE(a);
  job.Report(*a);
  auto b = gm.NextFor(job, "IncrementalLearningJob");
  ASSERT_TRUE(b);
  ASSERT_LT(b->received - a->received, 1s);
  job.Report(*b);
  EXPECT_EQ(job.LastCondition(), "Deploy/Ready") << "appended, not yet overwritten";
  // No further frame: NextFor lands the write (erasing Deploy Ready) and syncs the job.
  EXPECT_FALSE(gm.NextFor(job, "IncrementalLearningJob", 2s));
  EXPECT_EQ(job.LastCondition(), "Deploy/Waiting");
  ASSERT_EQ(job.erased().size(), 1u);
  EXPECT_EQ(job.erased()[0].type, core::ConditionType::kReady);
  EXPECT_EQ(lc.Next()->what, "insert model/deploy-model");
  auto synced = lc.Next();
  ASSERT_TRUE(synced);
  EXPECT_EQ(synced->object["status"]["conditions"].back()["stage"], "Deploy");
  EXPECT_EQ(synced->object["status"]["conditions"].back()["type"], "Waiting");
}

// RunUntil plays the GM for a job: reports each frame, runs created pods, syncs.
TEST_F(GmEmulatorTest, RunUntilDrivesTheJobFromFrames) {
  RawLc lc(gm.server().port(), kDefaultNode);
  ASSERT_TRUE(gm.WaitForNode(kDefaultNode));
  GmJob job(JobKind::kIncremental, IlJobObject(), Generation::kG2);
  SetIlModels(job);
  lc.IlStatus(kTrainReady);
  int frames = 0;
  GmEmulator::RunOptions opts;
  opts.timeout = 10s;
  opts.on_frame = [&](const UpstreamFrame&) { ++frames; };
  ASSERT_TRUE(gm.RunUntil(
      job, [](const GmJob& j) { return j.LastCondition() == "Train/Running"; }, opts));
  EXPECT_EQ(frames, 1);
  EXPECT_EQ(job.pods().train, PodPhase::kRunning);
  EXPECT_EQ(job.state().annotations.at("sedna.io/Train"), kDefaultNode);
  auto got = lc.Next();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->object["status"]["conditions"].back()["type"], "Running");
}

// ---- two real sedna-lc processes against one emulator -----------------------------------------

class GmEmulatorTwoLcTest : public ClusterFixture {};

TEST_F(GmEmulatorTwoLcTest, EachLcAnswersOnItsOwnConnection) {
  MakeWorld("sedna-gm2lc-");
  gm->SetMultiNode(true);
  std::filesystem::create_directories(rootfs + "/data");
  WriteFile(rootfs + "/data/a.txt", "a/1.jpg 1,1,2,2,1\n");
  WriteFile(rootfs + "/data/b.txt", "b/1.jpg 1,1,2,2,1\nb/2.jpg 1,1,2,2,1\n");
  StartLc();
  NodeLc& second = StartNodeLc("edge-node-2");
  ASSERT_TRUE(gm->WaitForNode(kDefaultNode));
  EXPECT_EQ(gm->server().connected_nodes(), (std::vector<std::string>{"edge-node", "edge-node-2"}));
  Json ds_b = DatasetObject("ds-b", "/data/b.txt");
  ds_b["spec"]["nodeName"] = "edge-node-2";
  ASSERT_TRUE(gm->SendTo(kDefaultNode, "insert", DatasetObject("ds-a", "/data/a.txt")));
  ASSERT_TRUE(gm->SendTo("edge-node-2", "insert", ds_b));
  std::map<std::string, std::pair<std::string, int64_t>> seen;  // dataset -> node, count
  while (seen.size() < 2 || seen["ds-a"].second < 1 || seen["ds-b"].second < 2) {
    auto f = gm->Next("Dataset");
    ASSERT_TRUE(f) << "no Dataset status from both LCs";
    seen[f->header.resource_name] = {f->node, f->body.at("numberOfSamples").get<int64_t>()};
  }
  EXPECT_EQ(seen["ds-a"].first, "edge-node");
  EXPECT_EQ(seen["ds-b"].first, "edge-node-2");
  EXPECT_NE(second.port, port);

  // The second node's LC killed and restarted: it reconnects as its node and answers there.
  const int connections = gm->server().connection_count();
  KillAndRestartNode(second);
  EXPECT_EQ(gm->server().connection_count(), connections + 1);
  Json ds_c = DatasetObject("ds-c", "/data/a.txt");
  ds_c["spec"]["nodeName"] = "edge-node-2";
  ASSERT_TRUE(gm->SendTo("edge-node-2", "insert", ds_c));
  for (;;) {
    auto f = gm->Next("Dataset");
    ASSERT_TRUE(f) << "no Dataset status from the restarted LC";
    if (f->header.resource_name != "ds-c") continue;
    EXPECT_EQ(f->node, "edge-node-2");
    break;
  }
}

}  // namespace
}  // namespace sedna::testing
