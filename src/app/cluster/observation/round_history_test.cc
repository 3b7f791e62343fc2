#include "app/cluster/observation/round_history.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "adapters/clock/system_clock.h"
#include "app/cluster/observation/dashboard_feed.h"

namespace sedna::app {
namespace {

using core::DecisionKind;
using core::DeployDecided;
using core::Fact;
using core::ReportPhase;
using core::ReportSent;
using core::ReportStatus;
using core::StageReported;
using core::TrainTriggerFired;

Fact Fired(int64_t round, const std::string& reason, int64_t samples = 0) {
  return TrainTriggerFired{round, samples, reason};
}
Fact Sent(ReportPhase phase, ReportStatus status, int64_t round = 1) {
  ReportSent r{round, phase, status, "", ""};
  if (phase == ReportPhase::kTrain && status == ReportStatus::kReady) {
    r.data_url = "/out/data/train/1/data.txt";
    r.output_dir = "/out/train/1";
  }
  return r;
}
Fact Reported(ReportPhase stage, bool completed, std::string model,
              std::vector<core::MetricNumbers> metrics, int64_t round = 1) {
  return StageReported{round, stage, completed, std::move(model), std::move(metrics)};
}

struct Job {
  HistoryJob Facts() const {
    return HistoryJob{"default/incrementallearningjob/digits",
                      "IncrementalLearningJob",
                      "default",
                      "digits",
                      "num_of_samples > 300",
                      "precision_delta > 0.01"};
  }
};

// One IL round, step by step as the job runner reports it: each step's record.
TEST(RoundHistoryTest, RecordsAnIlRoundFromTheStepsItTakes) {
  Job j;
  JobHistory h;
  ASSERT_TRUE(
      RecordStep(h, j.Facts(), {Fired(1, "fired: num_of_samples = 312 > 300", 312)}, 1000, 10));
  ASSERT_EQ(h.rounds.size(), 1u);
  EXPECT_EQ(h.rounds[0].round, 1);
  EXPECT_EQ(h.rounds[0].samples, 312);
  EXPECT_EQ(h.rounds[0].fired, "fired: num_of_samples = 312 > 300");
  EXPECT_EQ(h.rounds[0].train_trigger, "num_of_samples > 300");
  EXPECT_EQ(h.rounds[0].fired_ms, 1000);

  ASSERT_TRUE(
      RecordStep(h, j.Facts(), {Sent(ReportPhase::kTrain, ReportStatus::kReady)}, 1100, 10));
  EXPECT_EQ(h.rounds[0].train_ready_ms, 1100);
  EXPECT_EQ(h.rounds[0].data_url, "/out/data/train/1/data.txt");
  EXPECT_EQ(h.rounds[0].output_dir, "/out/train/1");

  ASSERT_TRUE(RecordStep(
      h, j.Facts(),
      {Reported(ReportPhase::kTrain, true, "/out/train/1/m.pkl", {{{"spring/accuracy", 0.5}}})},
      3100, 10));
  EXPECT_EQ(h.rounds[0].train_status, "completed");
  EXPECT_EQ(h.rounds[0].train_done_ms, 3100);
  EXPECT_EQ(h.rounds[0].trained_model, "/out/train/1/m.pkl");
  EXPECT_EQ(h.rounds[0].train_metrics, (std::map<std::string, double>{{"spring/accuracy", 0.5}}));

  ASSERT_TRUE(RecordStep(h, j.Facts(), {Sent(ReportPhase::kEval, ReportStatus::kReady)}, 3200, 10));
  EXPECT_EQ(h.rounds[0].eval_ready_ms, 3200);

  // The eval report and the decision it allows, in one step (the facts in the core's order).
  ASSERT_TRUE(RecordStep(
      h, j.Facts(),
      {Reported(ReportPhase::kEval, true, "/out/train/1/m.pkl",
                {{{"precision", 0.85}, {"recall", 0.7}}, {{"precision", 0.8}, {"recall", 0.6}}}),
       DeployDecided{1,
                     DecisionKind::kDeploy,
                     "fired: precision_delta = 0.05 > 0.01",
                     {{"precision", 0.1}},
                     {{"precision", 0.2}},
                     "/deploy/m.pkl"}},
      4000, 10));
  const RoundRecord& r = h.rounds[0];
  EXPECT_EQ(r.eval_status, "completed");
  ASSERT_EQ(r.new_metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(r.new_metrics.at("precision"), 0.85);  // the report's, not the decision's
  EXPECT_DOUBLE_EQ(r.new_metrics.at("recall"), 0.7);
  ASSERT_EQ(r.deployed_metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(r.deployed_metrics.at("precision"), 0.8);
  EXPECT_DOUBLE_EQ(r.deployed_metrics.at("recall"), 0.6);
  EXPECT_EQ(r.decision, "deploy");
  EXPECT_EQ(r.decision_reason, "fired: precision_delta = 0.05 > 0.01");
  EXPECT_EQ(r.deploy_trigger, "precision_delta > 0.01");
  EXPECT_EQ(r.decided_ms, 4000);
  EXPECT_EQ(h.deploy_target, "/deploy/m.pkl");
  EXPECT_EQ(h.deploys, 0);

  ASSERT_TRUE(
      RecordStep(h, j.Facts(), {Sent(ReportPhase::kDeploy, ReportStatus::kReady)}, 4300, 10));
  EXPECT_EQ(h.rounds[0].decision, "deployed");
  EXPECT_EQ(h.rounds[0].deployed_ms, 4300);
  EXPECT_EQ(h.deploys, 1);
  // Sent again when the GM's answer was lost: one deploy, at its first time.
  EXPECT_FALSE(
      RecordStep(h, j.Facts(), {Sent(ReportPhase::kDeploy, ReportStatus::kReady)}, 64300, 10));
  EXPECT_EQ(h.deploys, 1);
  EXPECT_EQ(h.rounds[0].deployed_ms, 4300);
  EXPECT_FALSE(
      RecordStep(h, j.Facts(), {Sent(ReportPhase::kEval, ReportStatus::kReady)}, 64400, 10));
  EXPECT_EQ(h.rounds[0].eval_ready_ms, 3200);
  // A later decision without a copy (a hot update) does not move the deploy target.
  RecordStep(h, j.Facts(), {DeployDecided{1, DecisionKind::kDeploy, "x", {}, {}, ""}}, 1, 10);
  EXPECT_EQ(h.deploy_target, "/deploy/m.pkl");

  // A step with no fact (an ingest with nothing new) changes nothing (nothing to write).
  EXPECT_FALSE(RecordStep(h, j.Facts(), {}, 5000, 10));
}

TEST(RoundHistoryTest, DecisionKinds) {
  struct Row {
    DecisionKind kind;
    const char* reason;
    const char* decision;
  };
  const Row rows[] = {
      {DecisionKind::kKept, "not fired: precision_delta = 0 <= 0.01", "kept"},
      {DecisionKind::kNotDeployed, "no valid eval report for round 1", "not deployed"},
      {DecisionKind::kDeploy, "fired: x", "deploy"},
  };
  for (const Row& row : rows) {
    Job j;
    JobHistory h;
    RecordStep(h, j.Facts(), {Fired(1, "fired: x")}, 1, 10);
    ASSERT_TRUE(
        RecordStep(h, j.Facts(), {DeployDecided{1, row.kind, row.reason, {}, {}, ""}}, 2, 10))
        << row.reason;
    EXPECT_EQ(h.rounds[0].decision, row.decision) << row.reason;
    EXPECT_EQ(h.rounds[0].decision_reason, row.reason) << row.reason;
    EXPECT_EQ(h.rounds[0].decided_ms, 2) << row.reason;
  }
}

// A decision whose eval report never reached this LC (the eval ran on another node) shows the
// results it compared; a round the history did not see fire gets the latest record's.
TEST(RoundHistoryTest, ADecisionCarriesTheResultsItCompared) {
  Job j;
  JobHistory h;
  RecordStep(h, j.Facts(), {Fired(2, "f")}, 1, 10);
  RecordStep(h, j.Facts(),
             {DeployDecided{7, DecisionKind::kKept, "not fired", {{"acc", 0.5}}, {{"acc", 0.6}}}},
             2, 10);
  EXPECT_EQ(h.rounds[0].new_metrics, (std::map<std::string, double>{{"acc", 0.5}}));
  EXPECT_EQ(h.rounds[0].deployed_metrics, (std::map<std::string, double>{{"acc", 0.6}}));
  EXPECT_EQ(h.rounds[0].decision, "kept");
}

TEST(RoundHistoryTest, KeepsTheLastRoundsAndRetriesInPlace) {
  Job j;
  JobHistory h;
  for (int round = 1; round <= 5; ++round) {
    RecordStep(h, j.Facts(), {Fired(round, "f")}, round, 3);
    RecordStep(h, j.Facts(), {Fired(round, "f")}, round, 3);  // fired again: a retry
  }
  ASSERT_EQ(h.rounds.size(), 3u);
  EXPECT_EQ(h.rounds.front().round, 3);
  EXPECT_EQ(h.rounds.back().round, 5);
  EXPECT_EQ(h.rounds.back().attempts, 2);
}

// LL: versions, per-task metrics (flattened by the codec: upstream_codec_test), its deploy; a
// fact's metrics are bounded.
TEST(RoundHistoryTest, RecordsAnLlVersionWithinBounds) {
  HistoryJob f{"default/lifelonglearningjob/ll",
               "LifelongLearningJob",
               "default",
               "ll",
               "num_of_samples > 10",
               ""};
  JobHistory h;
  RecordStep(h, f, {Fired(2, "fired: n", 40)}, 1, 10);
  EXPECT_EQ(h.rounds[0].round, 2);
  EXPECT_EQ(h.rounds[0].samples, 40);
  core::MetricNumbers many;
  for (int i = 0; i < 100; ++i) many["m" + std::to_string(i)] = 1;
  RecordStep(h, f,
             {Reported(ReportPhase::kEval, true, "u",
                       {{{"task_a/acc", 0.9}, {"task_b/acc", 0.7}, {"f", 1.5}}, many}, 2)},
             2, 10);
  EXPECT_EQ(h.rounds[0].new_metrics,
            (std::map<std::string, double>{{"task_a/acc", 0.9}, {"task_b/acc", 0.7}, {"f", 1.5}}));
  EXPECT_EQ(h.rounds[0].deployed_metrics.size(), RoundHistory::kMaxMetrics);
  RecordStep(h, f,
             {DeployDecided{2, DecisionKind::kDeploy, "eval output", {}, {}, "/o/deploy/index.pkl"},
              Sent(ReportPhase::kDeploy, ReportStatus::kReady, 2)},
             3, 10);
  EXPECT_EQ(h.rounds[0].decision, "deployed");
  EXPECT_EQ(h.deploy_target, "/o/deploy/index.pkl");
  EXPECT_EQ(h.deploys, 1);
}

TEST(RoundHistoryTest, IgnoresReportsItCannotPlace) {
  Job j;
  JobHistory h;
  // No round yet: a worker report or a Ready has nowhere to go.
  RecordStep(h, j.Facts(),
             {Reported(ReportPhase::kTrain, true, "", {}),
              Sent(ReportPhase::kTrain, ReportStatus::kReady)},
             1, 10);
  EXPECT_TRUE(h.rounds.empty());
  RecordStep(h, j.Facts(), {Fired(1, "y")}, 1, 10);
  EXPECT_FALSE(
      RecordStep(h, j.Facts(), {Sent(ReportPhase::kDeploy, ReportStatus::kCompleted)}, 2, 10));
  EXPECT_EQ(h.rounds[0].train_status, "");
  EXPECT_EQ(h.rounds[0].decision, "");
}

TEST(RoundHistoryTest, EncodesAndDecodes) {
  Job j;
  JobHistory h;
  RecordStep(h, j.Facts(), {Fired(4, "fired: n = 7 > 5", 7)}, 10, 10);
  RecordStep(h, j.Facts(),
             {Reported(ReportPhase::kEval, true, "a", {{{"acc", 0.5}}, {{"acc", 0.25}}}, 4)}, 20,
             10);
  h.rounds[0].trained_model = "bad \xff utf-8";  // encodes (replaced), never throws
  h.deploys = 3;
  auto d = DecodeJobHistory(EncodeJobHistory(h));
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->rounds[0].new_metrics, h.rounds[0].new_metrics);
  EXPECT_EQ(d->rounds[0].fired, h.rounds[0].fired);
  EXPECT_EQ(d->deploys, 3);
  EXPECT_EQ(d->rounds[0].trained_model, "bad \xef\xbf\xbd utf-8");
  EXPECT_FALSE(DecodeJobHistory("[1]").ok());
  EXPECT_FALSE(DecodeJobHistory(R"({"rounds":[{"round":"x"}]})").ok());
}

// A record written before the typed facts (with decisionsSeen) loads, and keeps that field.
TEST(RoundHistoryTest, AnOldRecordLoads) {
  const std::string old =
      R"({"key":"default/incrementallearningjob/digits","kind":"IncrementalLearningJob",)"
      R"("namespace":"default","name":"digits","trainTrigger":"t","deployTrigger":"d",)"
      R"("deployTarget":"/d/m.pkl","deploys":2,"decisionsSeen":2,"updatedMs":5,"rounds":[)"
      R"({"round":2,"samples":9,"trainTrigger":"t","fired":"f","firedMs":1,"attempts":1,)"
      R"("dataURL":"u","outputDir":"o","trainReadyMs":2,"trainDoneMs":3,"trainStatus":"completed",)"
      R"("trainedModel":"m","trainMetrics":{},"evalReadyMs":4,"evalDoneMs":5,)"
      R"("evalStatus":"completed","newMetrics":{"acc":0.5},"deployedMetrics":{"acc":0.4},)"
      R"("decision":"deployed","decisionReason":"r","deployTrigger":"d","decidedMs":5,)"
      R"("deployedMs":6}]})";
  auto h = DecodeJobHistory(old);
  ASSERT_TRUE(h.ok()) << h.message();
  EXPECT_EQ(h->decisions_seen, 2);
  EXPECT_EQ(h->deploys, 2);
  ASSERT_EQ(h->rounds.size(), 1u);
  EXPECT_EQ(h->rounds[0].decision, "deployed");
  EXPECT_EQ(h->rounds[0].new_metrics, (std::map<std::string, double>{{"acc", 0.5}}));
  EXPECT_EQ(nlohmann::json::parse(EncodeJobHistory(*h)), nlohmann::json::parse(old));
  // Byte for byte what the nlohmann::json tree the records were first built with wrote.
  EXPECT_EQ(EncodeJobHistory(*h), nlohmann::json::parse(old).dump());
  h->rounds[0].decision_reason = "q\"\\\n\x01 \xc3\xa9";
  h->rounds[0].new_metrics["nan"] = std::nan("");  // not finite: not written
  h->rounds[0].new_metrics["small"] = 1e-7;
  const std::string text = EncodeJobHistory(*h);
  EXPECT_EQ(nlohmann::json::parse(text).dump(), text);
  EXPECT_EQ(nlohmann::json::parse(text)["rounds"][0]["newMetrics"].size(), 2u);
  EXPECT_EQ(JobHistoryJson(*h), nlohmann::json::parse(text));
  auto back = DecodeJobHistory(text);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->rounds[0].decision_reason, h->rounds[0].decision_reason);
  // The next round is recorded after it.
  Job j;
  RecordStep(*h, j.Facts(), {Fired(3, "g")}, 7, 10);
  EXPECT_EQ(h->rounds.back().round, 3);
}

class TempDb {
 public:
  TempDb() {
    std::string t = (std::filesystem::temp_directory_path() / "round_history_XXXXXX").string();
    dir_ = mkdtemp(t.data());
  }
  ~TempDb() { std::filesystem::remove_all(dir_); }
  std::string path() const { return dir_ + "/db.sqlite"; }

 private:
  std::string dir_;
};

std::unique_ptr<Context> OpenContext(boost::asio::io_context& io, const std::string& db,
                                     int64_t rounds) {
  Config c;
  c.db_path = db;
  c.history_rounds = rounds;
  auto ctx = std::make_unique<Context>(io, c, clock::System());
  auto st = store::Store::Open(db, {});
  EXPECT_TRUE(st.ok()) << st.message();
  if (st.ok()) ctx->store = std::move(*st);
  return ctx;
}

// The history is in the store: another RoundHistory over the same database (a restart) has it,
// bounded by --history-rounds.
TEST(RoundHistoryTest, SurvivesARestart) {
  TempDb db;
  Job j;
  {
    boost::asio::io_context io;
    auto ctx = OpenContext(io, db.path(), 2);
    RoundHistory rh(*ctx);
    for (int round = 1; round <= 3; ++round) {
      rh.OnStep(j.Facts(), {Fired(round, "f")}, round);
    }
    io.run();  // the posted flush
    EXPECT_EQ(rh.Find(std::string(j.Facts().key))->rounds.size(), 2u);
  }
  boost::asio::io_context io;
  auto ctx = OpenContext(io, db.path(), 2);
  RoundHistory rh(*ctx);
  const JobHistory* h = rh.Find(std::string(j.Facts().key));
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->rounds.size(), 2u);
  EXPECT_EQ(h->rounds[0].round, 2);
  EXPECT_EQ(h->rounds[1].round, 3);
  EXPECT_EQ(h->train_trigger, "num_of_samples > 300");
}

// The flush comes kFlushDelay after a step, not as the next handler: the handlers the step posted
// (its send, the next event) run first, and a round's steps share one commit.
TEST(RoundHistoryTest, FlushesAfterTheHandlersTheStepPosted) {
  TempDb db;
  Job j;
  boost::asio::io_context io;
  auto ctx = OpenContext(io, db.path(), 10);
  RoundHistory rh(*ctx);
  rh.OnStep(j.Facts(), {Fired(1, "f")}, 1);
  bool posted_ran = false;
  boost::asio::post(io, [&] { posted_ran = true; });
  io.poll();  // what is ready now: the posted handler, not the flush
  EXPECT_TRUE(posted_ran);
  const std::string key(j.Facts().key);
  EXPECT_EQ(*ctx->store->GetState(kScopeHistory, key), std::nullopt);
  rh.OnStep(j.Facts(), {Fired(2, "f")}, 2);
  io.restart();
  io.run();  // the flush, once
  auto stored = ctx->store->GetState(kScopeHistory, key);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  auto h = DecodeJobHistory(**stored);
  ASSERT_TRUE(h.ok()) << h.message();
  EXPECT_EQ(h->rounds.size(), 2u);
}

// Only the step's own facts are recorded: a job whose history starts late (an upgrade) has no
// decision on its first round.
TEST(RoundHistoryTest, OldDecisionsAreNotRecorded) {
  TempDb db;
  boost::asio::io_context io;
  auto ctx = OpenContext(io, db.path(), 10);
  RoundHistory rh(*ctx);
  Job j;
  rh.OnStep(j.Facts(), {Fired(5, "f")}, 1);
  EXPECT_EQ(rh.Find(std::string(j.Facts().key))->rounds[0].decision, "");
  rh.OnStep(j.Facts(), {}, 2);  // no fact: nothing recorded, nothing to write
  EXPECT_EQ(rh.Find(std::string(j.Facts().key))->updated_ms, 1);
}

TEST(DashboardFeedTest, JobGaugesFollowPrometheusNaming) {
  Job j;
  JobHistory h;
  RecordStep(h, j.Facts(), {Fired(1, "f")}, 1, 10);
  RecordStep(h, j.Facts(),
             {Reported(ReportPhase::kEval, true, "a", {{{"acc", 0.5}}, {{"acc", 0.25}}})}, 2, 10);
  RecordStep(h, j.Facts(), {Sent(ReportPhase::kDeploy, ReportStatus::kReady)}, 3, 10);
  std::map<std::string, JobHistory> all{{h.key, h}};
  JobView v;
  v.kind = "IncrementalLearningJob";
  v.ns = "default";
  v.name = "digits";
  v.round = 2;
  v.samples_waiting = 17;
  const std::string m = RenderJobGauges({v}, all);
  EXPECT_NE(m.find("# TYPE sedna_lc_job_round gauge\n"
                   "sedna_lc_job_round{job=\"default/digits\",kind=\"IL\"} 2\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("sedna_lc_job_samples_waiting{job=\"default/digits\",kind=\"IL\"} 17\n"),
            std::string::npos);
  EXPECT_NE(m.find("sedna_lc_job_eval_metric{job=\"default/digits\",kind=\"IL\",metric=\"acc\","
                   "model=\"new\"} 0.5\n"),
            std::string::npos);
  EXPECT_NE(m.find("sedna_lc_job_eval_metric{job=\"default/digits\",kind=\"IL\",metric=\"acc\","
                   "model=\"deployed\"} 0.25\n"),
            std::string::npos);
  EXPECT_NE(m.find("# TYPE sedna_lc_job_deploys_total counter\n"
                   "sedna_lc_job_deploys_total{job=\"default/digits\",kind=\"IL\"} 1\n"),
            std::string::npos);
}

TEST(DashboardFeedTest, FeedCarriesHistoryVersionsAndWorkers) {
  Job j;
  JobHistory h;
  RecordStep(h, j.Facts(),
             {Fired(1, "f"), DeployDecided{1, DecisionKind::kDeploy, "r", {}, {}, "/d/m.pkl"}}, 1,
             10);
  std::map<std::string, JobHistory> all{{h.key, h}};
  JobView v;
  v.kind = "IncrementalLearningJob";
  v.ns = "default";
  v.name = "digits";
  v.output_dirs = "/out: not a directory";
  std::vector<JobView> views{v};
  DashboardFiles files;
  files.versions["/d/m.pkl"] = {{2, "/d/.sedna-versions/m.pkl.2", 10, 100}};
  files.log_tails["/w/train.log"] = "epoch 3\n";
  DashboardInput in;
  in.jobs = &views;
  in.history = &all;
  in.files = &files;
  in.standalone = true;
  in.workers = {
      {"default", "digits", "train", "train-worker-x", "running", "", "/w/train.log", 1, 0}};
  const auto d = nlohmann::json::parse(EncodeDashboardJson(in));
  EXPECT_EQ(d["jobs"][0]["history"]["rounds"][0]["round"], 1);
  EXPECT_EQ(d["jobs"][0]["versions"][0]["command"], "sedna-lc rollback-model /d/m.pkl --version 2");
  EXPECT_EQ(d["workers"][0]["logTail"], "epoch 3\n");
  EXPECT_EQ(d["standalone"], true);
  EXPECT_EQ(d["jobs"][0]["outputDirs"], "/out: not a directory");
}

TEST(DashboardFeedTest, LogTailIsBoundedAndStartsAtALine) {
  TempDb db;
  const std::string p = db.path() + ".log";
  {
    FILE* f = fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    for (int i = 0; i < 1000; ++i) fprintf(f, "line %d\n", i);
    fclose(f);
  }
  const std::string tail = ReadLogTail(p, 100);
  EXPECT_LE(tail.size(), 100u);
  EXPECT_EQ(tail.substr(tail.size() - 9), "line 999\n");
  EXPECT_EQ(tail.rfind("line ", 0), 0u) << tail;
  EXPECT_EQ(ReadLogTail(p + ".missing", 100), "");
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace sedna::app
