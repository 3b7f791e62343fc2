// The kind runners (kind_runner.h) behind their one interface: an IL and an LL job each step
// through the first stage of a round on ingest (trigger, train samples written, Train Ready), and
// their records and snapshots round-trip. The job runner's share (transaction, timers, pool) is
// not involved: the runner is driven directly, as the job runner drives it.
#include "app/cluster/jobs/kind_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/cluster/part_test_env.h"

namespace sedna::app {
namespace {

using core::ConditionType;
using core::Stage;
using testing::ClusterTestEnv;

core::JobCondition Cond(Stage stage, ConditionType type) {
  core::JobCondition c;
  c.stage = stage;
  c.type = type;
  return c;
}

core::TriggerSpec MoreThan(double n) {
  core::TriggerSpec t;
  t.op = ">";
  t.threshold = n;
  t.metric = "num_of_samples";
  return t;
}

template <class T>
std::vector<const T*> Actions(const KindStep& k) {
  std::vector<const T*> out;
  for (const auto& a : k.actions) {
    if (const auto* t = std::get_if<T>(&a)) out.push_back(t);
  }
  return out;
}

class KindRunnerTest : public ::testing::Test {
 protected:
  KindRunnerTest() {
    json::Decoded<core::Model> m;
    m.object.meta.ns = "default";
    m.object.meta.name = "initial-model";
    m.object.spec.format = "ckpt";
    m.object.spec.url = "/models/base";
    models.Upsert(std::move(m), false);
    ds.ns = "default";
    ds.name = "d1";
    ds.local_path = "/data/index.txt";
    now.unix_ms = 1'000'000;
    now.rfc3339 = "2026-12-02T08:00:00Z";
  }
  KindWorld World() {
    KindWorld w;
    w.models = &models;
    w.dataset = &ds;
    w.train_trigger = &train;
    w.deploy_wait_ms = 30000;
    return w;
  }
  // A job of either kind with the fields both have: on Dataset d1, output /output/, trained
  // after more than 3 samples, waiting to train.
  template <class Job>
  static json::Decoded<Job> Decoded(const char* name) {
    json::Decoded<Job> d;
    d.object.meta.ns = "default";
    d.object.meta.name = name;
    d.object.spec.dataset_name = "d1";
    d.object.spec.train_prob = 0.8;
    d.object.spec.output_dir = "/output/";
    d.object.spec.train_trigger = MoreThan(3);
    d.object.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
    return d;
  }
  std::unique_ptr<KindRunner> Il() {
    auto d = Decoded<core::IlJob>("helmet");
    d.object.spec.initial_model_name = "initial-model";
    d.object.spec.deploy_model_name = "deploy-model";
    d.object.spec.deploy_trigger = MoreThan(0);  // any compiling trigger
    auto r = MakeIlRunner(std::move(d));
    EXPECT_TRUE(r->Validate(&train).ok());
    return r;
  }
  std::unique_ptr<KindRunner> Ll() {
    auto d = Decoded<core::LlJob>("atcii");
    auto r = MakeLlRunner(std::move(d));
    EXPECT_TRUE(r->Validate(&train).ok());
    return r;
  }

  ClusterTestEnv env;
  ModelRegistry models{env.ctx(), [](const std::string&, const std::string&) {}};
  DatasetSource ds;
  core::Trigger train;
  core::il::Now now;
};

// 5 new samples, 4 of them train (spool bytes [0, 40)), against a trigger of more than 3: the
// train samples are written, and once they are, Train Ready is sent.
void StepsThroughTheTrainStageOnIngest(KindRunner& r, const KindWorld& w, const core::il::Now& now,
                                       int64_t round) {
  KindStep k = r.Plan(w, core::il::SamplesIngested{5, 4, 40, 1, 10}, now);
  EXPECT_TRUE(k.state_changed);
  auto writes = Actions<core::il::WriteSamples>(k);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0]->stage, Stage::kTrain);
  EXPECT_EQ(writes[0]->round, round);
  ASSERT_EQ(writes[0]->ranges.size(), 1u);
  EXPECT_EQ(writes[0]->ranges[0], (core::il::SpoolRange{0, 40, 4}));
  EXPECT_EQ(r.samples_seen(), 0);  // planned, not adopted
  r.Adopt();
  EXPECT_EQ(r.samples_seen(), 5);
  EXPECT_EQ(r.train_committed(), 40);
  EXPECT_EQ(r.eval_committed(), 10);

  k = r.Plan(w, core::il::FileWritten{core::il::Work::kWriteTrain, round, true, ""}, now);
  r.Adopt();
  auto reports = Actions<core::il::SendReport>(k);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0]->report.phase, core::ReportPhase::kTrain);
  EXPECT_EQ(reports[0]->report.status, core::ReportStatus::kReady);
  EXPECT_EQ(reports[0]->report.output_dir, "/output/train/" + std::to_string(round));
}

TEST_F(KindRunnerTest, AnIlJobStepsThroughTheTrainStageOnIngest) {
  auto r = Il();
  EXPECT_EQ(r->kind(), JobKind::kIl);
  EXPECT_EQ(r->spelling(), json::ReportSpelling::kIl);
  StepsThroughTheTrainStageOnIngest(*r, World(), now, 1);
}

TEST_F(KindRunnerTest, AnLlJobStepsThroughTheTrainStageOnIngest) {
  auto r = Ll();
  EXPECT_EQ(r->kind(), JobKind::kLl);
  EXPECT_EQ(r->spelling(), json::ReportSpelling::kLl);
  StepsThroughTheTrainStageOnIngest(*r, World(), now, 1);
}

TEST_F(KindRunnerTest, AnIlJobWaitsForItsInitialModel) {
  auto r = Il();
  ModelRegistry none{env.ctx(), [](const std::string&, const std::string&) {}};
  KindWorld w = World();
  w.models = &none;
  KindStep k = r->Plan(w, core::il::SamplesIngested{5, 4, 40, 1, 10}, now);
  EXPECT_TRUE(Actions<core::il::WriteSamples>(k).empty());
}

TEST_F(KindRunnerTest, TheRecordRoundTripsIntoAFreshRunner) {
  for (bool il : {true, false}) {
    auto r = il ? Il() : Ll();
    r->Plan(World(), core::il::SamplesIngested{5, 4, 40, 1, 10}, now);
    r->Adopt();
    dataset::IndexCursor c;
    c.path = "/data/index.txt";
    c.offset = 77;
    const std::string record = r->EncodeRecord(c);
    auto fresh = il ? Il() : Ll();
    dataset::IndexCursor back;
    auto loaded = fresh->LoadRecord(record, &back);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    EXPECT_EQ(fresh->samples_seen(), 5);
    EXPECT_EQ(back.offset, 77);
    EXPECT_EQ(fresh->EncodeRecord(back), record);
    // A record of the other kind is refused, leaving the state as it was.
    auto other = il ? Ll() : Il();
    dataset::IndexCursor untouched;
    EXPECT_FALSE(other->LoadRecord(record, &untouched).ok());
    EXPECT_EQ(other->samples_seen(), 0);
  }
}

TEST_F(KindRunnerTest, ASnapshotRestoresTheStateBeforeItsSteps) {
  auto r = Il();
  const KindState before = r->Snapshot();
  r->Plan(World(), core::il::SamplesIngested{5, 4, 40, 1, 10}, now);
  r->Adopt();
  EXPECT_EQ(r->samples_seen(), 5);
  r->Restore(before);
  EXPECT_EQ(r->samples_seen(), 0);
}

TEST_F(KindRunnerTest, WhatTheKindsDifferIn) {
  auto il = Il();
  auto ll = Ll();
  EXPECT_TRUE(il->reads_model("default", "initial-model"));
  EXPECT_FALSE(il->reads_model("other", "initial-model"));
  EXPECT_FALSE(ll->reads_model("default", "initial-model"));
  EXPECT_TRUE(il->has_hot_updates());
  EXPECT_FALSE(ll->has_hot_updates());
  EXPECT_EQ(ll->output_subdirs().back(), "deploy");
  EXPECT_EQ(il->output_subdirs().size(), 4u);
  EXPECT_EQ(ll->deploy_trigger_text(), "");
  EXPECT_FALSE(il->deploy_trigger_text().empty());
  EXPECT_FALSE(il->RefusalEndsRound("eval"));  // no eval outstanding
  EXPECT_FALSE(ll->RefusalEndsRound("eval"));
}

}  // namespace
}  // namespace sedna::app
