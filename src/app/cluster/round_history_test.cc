#include "app/cluster/round_history.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "adapters/json/envelope.h"
#include "app/cluster/dashboard_feed.h"

namespace sedna::app {
namespace {

using core::il::Action;
using core::il::Log;
using core::il::SendReport;

// A forwarded worker report frame as the job runner commits it (EncodeForwardedWorkerMessage).
std::string Forwarded(const std::string& phase, const std::string& status,
                      const std::string& models) {
  return json::EncodeFrame({"default", "incrementallearningjob", "digits", "status"},
                           R"({"phase":")" + phase + R"(","status":")" + status +
                               R"(","output":{"models":)" + models + R"(,"ownerInfo":null}})");
}

Action Info(const std::string& text) { return Log{Log::Level::kInfo, text}; }
Action Report(const std::string& phase, const std::string& status) {
  core::StatusReport r{phase, status};
  if (phase == "Train") {
    r.has_input = true;
    r.data_url = "/out/data/train/1/data.txt";
    r.output_dir = "/out/train/1";
  }
  return SendReport{r};
}

struct Job {
  core::il::State s;
  StepFacts Facts() const {
    StepFacts f{"default/incrementallearningjob/digits",
                "IncrementalLearningJob",
                "default",
                "digits",
                &s,
                nullptr,
                "num_of_samples > 300",
                "precision_delta > 0.01"};
    return f;
  }
};

// One IL round, step by step as the job runner reports it: each step's record.
TEST(RoundHistoryTest, RecordsAnIlRoundFromTheStepsItTakes) {
  Job j;
  JobHistory h;
  j.s.work_range.count = 312;
  ASSERT_TRUE(RecordStep(
      h, j.Facts(), {},
      {Info("train trigger fired for round 1: fired: num_of_samples = 312 > 300")}, 1000, 10));
  ASSERT_EQ(h.rounds.size(), 1u);
  EXPECT_EQ(h.rounds[0].round, 1);
  EXPECT_EQ(h.rounds[0].samples, 312);
  EXPECT_EQ(h.rounds[0].fired, "fired: num_of_samples = 312 > 300");
  EXPECT_EQ(h.rounds[0].train_trigger, "num_of_samples > 300");
  EXPECT_EQ(h.rounds[0].fired_ms, 1000);

  ASSERT_TRUE(RecordStep(h, j.Facts(), {}, {Report("Train", "Ready")}, 1100, 10));
  EXPECT_EQ(h.rounds[0].train_ready_ms, 1100);
  EXPECT_EQ(h.rounds[0].data_url, "/out/data/train/1/data.txt");
  EXPECT_EQ(h.rounds[0].output_dir, "/out/train/1");

  ASSERT_TRUE(RecordStep(h, j.Facts(),
                         {Forwarded("train", "completed",
                                    R"([{"format":"pkl","url":"/out/train/1/m.pkl",)"
                                    R"("metrics":{"spring":{"accuracy":0.5}}}])")},
                         {}, 3100, 10));
  EXPECT_EQ(h.rounds[0].train_status, "completed");
  EXPECT_EQ(h.rounds[0].train_done_ms, 3100);
  EXPECT_EQ(h.rounds[0].trained_model, "/out/train/1/m.pkl");
  EXPECT_EQ(h.rounds[0].train_metrics, (std::map<std::string, double>{{"spring/accuracy", 0.5}}));

  ASSERT_TRUE(RecordStep(h, j.Facts(), {}, {Report("Eval", "Ready")}, 3200, 10));
  EXPECT_EQ(h.rounds[0].eval_ready_ms, 3200);

  j.s.decisions = 1;
  j.s.decided_round = 1;
  j.s.last_decision = "deploying trained model: fired: precision_delta = 0.05 > 0.01";
  ASSERT_TRUE(RecordStep(
      h, j.Facts(),
      {Forwarded("eval", "completed",
                 R"([{"url":"/out/train/1/m.pkl","metrics":{"precision":[0.9,0.8],"recall":0.7}},)"
                 R"({"url":"/deploy/m.pkl","metrics":{"precision":[0.85,0.75],"recall":0.6}}])")},
      {Info("round 1 deploying trained model: fired: precision_delta = 0.05 > 0.01"),
       core::il::CopyModel{"/out/train/1/m.pkl", "/deploy/m.pkl"}},
      4000, 10));
  const RoundRecord& r = h.rounds[0];
  EXPECT_EQ(r.eval_status, "completed");
  ASSERT_EQ(r.new_metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(r.new_metrics.at("precision"), 0.85);  // a list: its mean
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

  ASSERT_TRUE(RecordStep(h, j.Facts(), {}, {Report("Deploy", "Ready")}, 4300, 10));
  EXPECT_EQ(h.rounds[0].decision, "deployed");
  EXPECT_EQ(h.rounds[0].deployed_ms, 4300);
  EXPECT_EQ(h.deploys, 1);
  // Sent again when the GM's answer was lost: one deploy, at its first time.
  EXPECT_FALSE(RecordStep(h, j.Facts(), {}, {Report("Deploy", "Ready")}, 64300, 10));
  EXPECT_EQ(h.deploys, 1);
  EXPECT_EQ(h.rounds[0].deployed_ms, 4300);
  EXPECT_FALSE(RecordStep(h, j.Facts(), {}, {Report("Eval", "Ready")}, 64400, 10));
  EXPECT_EQ(h.rounds[0].eval_ready_ms, 3200);
  // A second copy of the same deploy (initialEvalModel's) does not move the deploy target.
  j.s.work_copies_done = 1;
  EXPECT_FALSE(RecordStep(h, j.Facts(), {}, {core::il::CopyModel{"/out/e", "/eval/m"}}, 1, 10));
  EXPECT_EQ(h.deploy_target, "/deploy/m.pkl");

  // An ingest step with nothing new changes nothing (nothing to write).
  EXPECT_FALSE(RecordStep(h, j.Facts(), {}, {}, 5000, 10));
}

TEST(RoundHistoryTest, DecisionKinds) {
  struct Row {
    const char* last_decision;
    const char* decision;
    const char* reason;
  };
  const Row rows[] = {
      {"kept deployed model: not fired: precision_delta = 0 <= 0.01", "kept",
       "not fired: precision_delta = 0 <= 0.01"},
      {"not deployed: no valid eval report for round 1", "not deployed",
       "no valid eval report for round 1"},
      {"something new", "decided", "something new"},
  };
  for (const Row& row : rows) {
    Job j;
    JobHistory h;
    RecordStep(h, j.Facts(), {}, {Info("train trigger fired for round 1: fired: x")}, 1, 10);
    j.s.decisions = 1;
    j.s.decided_round = 1;
    j.s.last_decision = row.last_decision;
    ASSERT_TRUE(RecordStep(h, j.Facts(), {}, {}, 2, 10)) << row.last_decision;
    EXPECT_EQ(h.rounds[0].decision, row.decision) << row.last_decision;
    EXPECT_EQ(h.rounds[0].decision_reason, row.reason) << row.last_decision;
  }
}

TEST(RoundHistoryTest, KeepsTheLastRoundsAndRetriesInPlace) {
  Job j;
  JobHistory h;
  for (int round = 1; round <= 5; ++round) {
    const std::string fired = "train trigger fired for round " + std::to_string(round) + ": f";
    RecordStep(h, j.Facts(), {}, {Info(fired)}, round, 3);
    RecordStep(h, j.Facts(), {}, {Info(fired)}, round, 3);  // fired again: a retry
  }
  ASSERT_EQ(h.rounds.size(), 3u);
  EXPECT_EQ(h.rounds.front().round, 3);
  EXPECT_EQ(h.rounds.back().round, 5);
  EXPECT_EQ(h.rounds.back().attempts, 2);
}

// LL reports metrics per task (nested objects); a hostile report is bounded.
TEST(RoundHistoryTest, FlattensNestedMetricsWithinBounds) {
  core::ll::State ll;
  ll.train_range.count = 40;
  StepFacts f{"default/lifelonglearningjob/ll",
              "LifelongLearningJob",
              "default",
              "ll",
              nullptr,
              &ll,
              "num_of_samples > 10",
              ""};
  JobHistory h;
  RecordStep(h, f, {}, {Info("train trigger fired for version 2: fired: n")}, 1, 10);
  EXPECT_EQ(h.rounds[0].round, 2);
  EXPECT_EQ(h.rounds[0].samples, 40);
  std::string many = "{";
  for (int i = 0; i < 100; ++i) many += (i ? ",\"m" : "\"m") + std::to_string(i) + "\":1";
  many += "}";
  RecordStep(
      h, f,
      {Forwarded(
          "eval", "completed",
          R"([{"url":"u","metrics":{"task_a":{"acc":0.9},"task_b":{"acc":0.7,"deep":{"x":{"y":1}}},"f":[1,"x",2]}},)"
          R"({"url":"v","metrics":)" +
              many + "}]")},
      {}, 2, 10);
  EXPECT_EQ(h.rounds[0].new_metrics,
            (std::map<std::string, double>{{"task_a/acc", 0.9}, {"task_b/acc", 0.7}, {"f", 1.5}}));
  EXPECT_EQ(h.rounds[0].deployed_metrics.size(), RoundHistory::kMaxMetrics);
  RecordStep(h, f, {}, {Report("deploy", "ready")}, 3, 10);
  EXPECT_EQ(h.rounds[0].decision, "deployed");
  EXPECT_EQ(h.deploys, 1);
}

TEST(RoundHistoryTest, IgnoresReportsItCannotPlace) {
  Job j;
  JobHistory h;
  // No round yet: a worker report or a Ready has nowhere to go.
  RecordStep(h, j.Facts(), {Forwarded("train", "completed", "[]")}, {Report("Train", "Ready")}, 1,
             10);
  EXPECT_TRUE(h.rounds.empty());
  RecordStep(h, j.Facts(), {}, {Info("train trigger fired for round x: y")}, 1, 10);
  EXPECT_TRUE(h.rounds.empty());
  RecordStep(h, j.Facts(), {}, {Info("train trigger fired for round 1: y")}, 1, 10);
  EXPECT_FALSE(
      RecordStep(h, j.Facts(), {"not a frame", Forwarded("train", "running", "[]")}, {}, 2, 10));
  EXPECT_EQ(h.rounds[0].train_status, "");
}

TEST(RoundHistoryTest, EncodesAndDecodes) {
  Job j;
  JobHistory h;
  j.s.work_range.count = 7;
  RecordStep(h, j.Facts(), {}, {Info("train trigger fired for round 4: fired: n = 7 > 5")}, 10, 10);
  RecordStep(
      h, j.Facts(),
      {Forwarded("eval", "completed",
                 R"([{"url":"a","metrics":{"acc":0.5}},{"url":"b","metrics":{"acc":0.25}}])")},
      {}, 20, 10);
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
  auto ctx = std::make_unique<Context>(io, c);
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
      rh.OnStep(j.Facts(), {},
                {Info("train trigger fired for round " + std::to_string(round) + ": f")}, round);
    }
    io.run();  // the posted flush
    EXPECT_EQ(rh.Find(j.Facts().key)->rounds.size(), 2u);
  }
  boost::asio::io_context io;
  auto ctx = OpenContext(io, db.path(), 2);
  RoundHistory rh(*ctx);
  const JobHistory* h = rh.Find(j.Facts().key);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->rounds.size(), 2u);
  EXPECT_EQ(h->rounds[0].round, 2);
  EXPECT_EQ(h->rounds[1].round, 3);
  EXPECT_EQ(h->train_trigger, "num_of_samples > 300");
}

// Decisions taken before the history knew the job (an upgrade) are not put on its first round.
TEST(RoundHistoryTest, OldDecisionsAreNotRecorded) {
  TempDb db;
  boost::asio::io_context io;
  auto ctx = OpenContext(io, db.path(), 10);
  RoundHistory rh(*ctx);
  Job j;
  j.s.decisions = 4;
  j.s.last_decision = "kept deployed model: x";
  rh.OnStep(j.Facts(), {}, {Info("train trigger fired for round 5: f")}, 1);
  EXPECT_EQ(rh.Find(j.Facts().key)->rounds[0].decision, "");
}

TEST(DashboardFeedTest, JobGaugesFollowPrometheusNaming) {
  Job j;
  JobHistory h;
  RecordStep(h, j.Facts(), {}, {Info("train trigger fired for round 1: f")}, 1, 10);
  RecordStep(
      h, j.Facts(),
      {Forwarded("eval", "completed",
                 R"([{"url":"a","metrics":{"acc":0.5}},{"url":"b","metrics":{"acc":0.25}}])")},
      {}, 2, 10);
  RecordStep(h, j.Facts(), {}, {Report("Deploy", "Ready")}, 3, 10);
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
  RecordStep(h, j.Facts(), {},
             {Info("train trigger fired for round 1: f"), core::il::CopyModel{"/o/m", "/d/m.pkl"}},
             1, 10);
  std::map<std::string, JobHistory> all{{h.key, h}};
  JobView v;
  v.kind = "IncrementalLearningJob";
  v.ns = "default";
  v.name = "digits";
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
