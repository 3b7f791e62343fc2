#include "app/cluster/observation/status_view.h"

#include <gtest/gtest.h>

namespace sedna::app {
namespace {

using core::il::Work;

// `work` tells a job idle at its trigger ("none") from one whose answer to the GM's Waiting
// condition is out and not yet acted on ("reported"): the stage alone cannot, since it is the
// GM's and stays Waiting until the GM moves it.
TEST(StatusViewTest, WorkShowsAReportedWaitingCondition) {
  struct Row {
    const char* name;
    Work work;
    int64_t answered_train, answered_eval, last_condition;
    const char* want;
  };
  const Row rows[] = {
      {"no conditions yet", Work::kNone, -1, -1, -1, "none"},
      {"waiting, not answered", Work::kNone, -1, -1, 0, "none"},
      {"train waiting answered", Work::kNone, 3, -1, 3, "reported"},
      {"eval waiting answered", Work::kNone, 3, 6, 6, "reported"},
      {"a newer condition since the answer", Work::kNone, 3, -1, 7, "none"},
      {"eval answer is older", Work::kNone, 8, 6, 9, "none"},
      {"train file being written", Work::kWriteTrain, -1, -1, 3, "write-train"},
      {"work in flight wins over reported", Work::kDeploy, 3, 6, 6, "deploy"},
  };
  for (const Row& r : rows) {
    core::il::State s;
    s.work = r.work;
    s.answered_train_waiting = r.answered_train;
    s.answered_eval_waiting = r.answered_eval;
    JobView v;
    FillIlView(s, r.last_condition, v);
    EXPECT_EQ(v.work, r.want) << r.name;
  }
}

TEST(StatusViewTest, StatusJsonRoundTrips) {
  JobView v;
  v.kind = "IncrementalLearningJob";
  v.ns = "default";
  v.name = "job";
  v.stage = "Train/Waiting";
  v.round = 3;
  v.samples_waiting = 7;
  v.samples_seen = 40;
  v.work = "reported";
  v.last_decision = "deployed";
  v.decisions = 2;
  v.decided_round = 2;
  v.last_error = "e";
  core::ModelRef m;
  m.url = "/m/1";
  m.format = "pb";
  m.metrics["precision"] = core::MetricValue::Number(0.5);
  m.metrics["recall"] = core::MetricValue::List({0.25, 0.75});
  v.last_eval.push_back(m);
  v.deployed_url = "/m/1";
  v.deployed_at = "2026-11-30T06:00:00Z";
  v.output_dirs = "making";
  auto back = DecodeStatusJson(EncodeStatusJson({v}));
  ASSERT_TRUE(back.ok()) << back.message();
  ASSERT_EQ(back->size(), 1u);
  const JobView& b = (*back)[0];
  EXPECT_EQ(b.kind, v.kind);
  EXPECT_EQ(b.ns, v.ns);
  EXPECT_EQ(b.name, v.name);
  EXPECT_EQ(b.stage, v.stage);
  EXPECT_EQ(b.round, 3);
  EXPECT_EQ(b.samples_waiting, 7);
  EXPECT_EQ(b.samples_seen, 40);
  EXPECT_EQ(b.work, "reported");
  EXPECT_EQ(b.last_decision, "deployed");
  EXPECT_EQ(b.decisions, 2);
  EXPECT_EQ(b.decided_round, 2);
  EXPECT_EQ(b.last_error, "e");
  ASSERT_EQ(b.last_eval.size(), 1u);
  EXPECT_EQ(b.last_eval[0], m);
  EXPECT_EQ(b.deployed_url, v.deployed_url);
  EXPECT_EQ(b.deployed_at, v.deployed_at);
  EXPECT_EQ(b.output_dirs, "making");
  EXPECT_FALSE(DecodeStatusJson("{").ok());
}

TEST(StatusViewTest, TableHasOneAlignedLinePerJob) {
  JobView a;
  a.kind = "IncrementalLearningJob";
  a.ns = "default";
  a.name = "helmet";
  a.stage = "Train/Waiting";
  a.round = 2;
  a.samples_waiting = 12;
  a.work = "reported";
  JobView b;
  b.kind = "LifelongLearningJob";
  b.ns = "ns";
  b.name = "ll";
  b.stage = "Eval/Running";
  b.round = 10;
  b.work = "train/none";
  b.last_error = "boom";
  EXPECT_EQ(RenderStatusTable({a, b}),
            "KIND  NAMESPACE/NAME  STAGE          ROUND  WAITING  WORK        "
            "LAST EVAL [new | deployed]  DEPLOYED  NOTE\n"
            "IL    default/helmet  Train/Waiting  2      12       reported    "
            "-                           -         -\n"
            "LL    ns/ll           Eval/Running   10     0        train/none  "
            "-                           -         boom\n");
}

}  // namespace
}  // namespace sedna::app
