#include "app/standalone/started_workers.h"

#include <gtest/gtest.h>

#include <string>

namespace sedna::app {
namespace {

using core::Stage;
using std::chrono::seconds;

const std::string kJob = core::ResourceKey("default", core::kKindIlJob, "j");

core::WorkerReport Report(const std::string& name, const std::string& kind,
                          const std::string& job = "j", const std::string& ns = "default",
                          const std::string& owner_kind = core::kKindIlJob) {
  core::WorkerReport r;
  r.worker_name = name;
  r.kind = kind;
  r.ns = ns;
  r.owner_name = job;
  r.owner_kind = owner_kind;
  r.status = "completed";
  return r;
}

class StartedWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w.Started(kJob, Stage::kTrain, "train-worker-aaaaa");
    w.Started(kJob, Stage::kEval, "eval-worker-bbbbb");
    w.Started(kJob, Stage::kDeploy, "inferworker-ccccc");
  }
  StartedWorkers w;
  StartedWorkers::Clock::time_point t0 = StartedWorkers::Clock::now();
};

TEST_F(StartedWorkersTest, EachRunningWorkerMayReportItsOwnKind) {
  EXPECT_TRUE(w.MayReport(Report("train-worker-aaaaa", "train"), t0).ok());
  EXPECT_TRUE(w.MayReport(Report("train-worker-aaaaa", "Train"), t0).ok()) << "any case";
  EXPECT_TRUE(w.MayReport(Report("eval-worker-bbbbb", "eval"), t0).ok());
  EXPECT_TRUE(w.MayReport(Report("inferworker-ccccc", "inference"), t0).ok());
}

TEST_F(StartedWorkersTest, RefusalsNameTheField) {
  struct Row {
    const char* what;
    core::WorkerReport report;
    std::string message;
  } rows[] = {
      {"made-up name", Report("eval-worker-x", "eval"),
       "name: \"eval-worker-x\" is not a worker this LC started for IncrementalLearningJob "
       "default/j (stage eval)"},
      {"a worker of the job, for another job", Report("train-worker-aaaaa", "train", "other"),
       "name: \"train-worker-aaaaa\" is not a worker this LC started for IncrementalLearningJob "
       "default/other (stage train)"},
      {"another namespace", Report("train-worker-aaaaa", "train", "j", "prod"),
       "name: \"train-worker-aaaaa\" is not a worker this LC started for IncrementalLearningJob "
       "prod/j (stage train)"},
      {"another job kind", Report("train-worker-aaaaa", "train", "j", "default", core::kKindLlJob),
       "name: \"train-worker-aaaaa\" is not a worker this LC started for LifelongLearningJob "
       "default/j (stage train)"},
      {"train worker reporting eval", Report("train-worker-aaaaa", "eval"),
       "kind: \"eval\" is not what worker \"train-worker-aaaaa\" of IncrementalLearningJob "
       "default/j reports: it was started for stage train (kind train)"},
      {"eval worker reporting train", Report("eval-worker-bbbbb", "train"),
       "kind: \"train\" is not what worker \"eval-worker-bbbbb\" of IncrementalLearningJob "
       "default/j reports: it was started for stage eval (kind eval)"},
      {"inference worker reporting deploy", Report("inferworker-ccccc", "deploy"),
       "kind: \"deploy\" is not what worker \"inferworker-ccccc\" of IncrementalLearningJob "
       "default/j reports: it was started for stage deploy (kind inference; deploy only with "
       "model hot update)"},
      {"unknown kind, unknown name", Report("x\n", "bogus"),
       "name: \"x?\" is not a worker this LC started for IncrementalLearningJob default/j (kind "
       "\"bogus\")"},
  };
  for (const auto& row : rows) {
    Status s = w.MayReport(row.report, t0);
    EXPECT_FALSE(s.ok()) << row.what;
    EXPECT_EQ(s.message(), row.message) << row.what;
  }
}

// lib/sedna's hot-update thread reports each model reload as kind deploy (§H4.1).
TEST_F(StartedWorkersTest, HotUpdateInferenceWorkerMayReportDeploy) {
  w.Started(kJob, Stage::kDeploy, "inferworker-hhhhh", /*hot_update=*/true);
  EXPECT_TRUE(w.MayReport(Report("inferworker-hhhhh", "deploy"), t0).ok());
  EXPECT_TRUE(w.MayReport(Report("inferworker-hhhhh", "Deploy"), t0).ok()) << "any case";
  EXPECT_TRUE(w.MayReport(Report("inferworker-hhhhh", "inference"), t0).ok());
  EXPECT_FALSE(w.MayReport(Report("inferworker-hhhhh", "train"), t0).ok());
  // A hot flag on another stage's worker allows nothing more.
  w.Started(kJob, Stage::kEval, "eval-worker-hhhhh", /*hot_update=*/true);
  EXPECT_FALSE(w.MayReport(Report("eval-worker-hhhhh", "deploy"), t0).ok());
}

TEST_F(StartedWorkersTest, ExitedWorkerMayReportDuringTheGraceOnly) {
  w.Exited(kJob, "train-worker-aaaaa", t0);
  EXPECT_TRUE(w.MayReport(Report("train-worker-aaaaa", "train"), t0 + seconds(1)).ok());
  EXPECT_TRUE(w.MayReport(Report("train-worker-aaaaa", "train"),
                          t0 + StartedWorkers::kExitGrace - seconds(1))
                  .ok());
  EXPECT_FALSE(
      w.MayReport(Report("train-worker-aaaaa", "train"), t0 + StartedWorkers::kExitGrace).ok());
  // Other stages are untouched.
  EXPECT_TRUE(w.MayReport(Report("eval-worker-bbbbb", "eval"), t0 + seconds(60)).ok());
}

TEST_F(StartedWorkersTest, NextWorkerOfTheStageReplacesTheExitedOne) {
  w.Exited(kJob, "train-worker-aaaaa", t0);
  w.Started(kJob, Stage::kTrain, "train-worker-ddddd");
  EXPECT_FALSE(w.MayReport(Report("train-worker-aaaaa", "train"), t0).ok());
  EXPECT_TRUE(w.MayReport(Report("train-worker-ddddd", "train"), t0).ok());
  EXPECT_TRUE(w.MayReport(Report("eval-worker-bbbbb", "eval"), t0).ok()) << "other stage kept";
}

TEST_F(StartedWorkersTest, ReplacedRunningWorkerMayNotReport) {
  // The inference worker is restarted on each deploy: the old one is terminated, not waited for.
  w.Started(kJob, Stage::kDeploy, "inferworker-eeeee");
  EXPECT_FALSE(w.MayReport(Report("inferworker-ccccc", "inference"), t0).ok());
  EXPECT_TRUE(w.MayReport(Report("inferworker-eeeee", "inference"), t0).ok());
}

TEST_F(StartedWorkersTest, ForgottenJobAndStaleWorkersAreDropped) {
  EXPECT_EQ(w.size(), 3u);
  w.Exited(kJob, "train-worker-aaaaa", t0);
  w.Exited(kJob, "eval-worker-bbbbb", t0 + StartedWorkers::kExitGrace);  // sweeps the train one
  EXPECT_EQ(w.size(), 2u);
  w.ForgetJob(kJob);
  EXPECT_EQ(w.size(), 0u);
  EXPECT_FALSE(w.MayReport(Report("inferworker-ccccc", "inference"), t0).ok());
  w.Exited(kJob, "inferworker-ccccc", t0);  // a late exit of a forgotten job is ignored
  EXPECT_EQ(w.size(), 0u);
}

}  // namespace
}  // namespace sedna::app
