// The IL deploy decision on both GM generations (docs/protocol.md §H3.2, §H3.3), model hot
// update (§H4.1) and initialEvalModel (§H4.2), in the pure core. Integration tests against the GM
// emulator pin the same rules end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>

#include "core/il_job.h"

namespace sedna::core::il {
namespace {

JobCondition Cond(Stage stage, ConditionType type) {
  JobCondition c;
  c.stage = stage;
  c.type = type;
  return c;
}

JobCondition WithOutput(JobCondition c, std::vector<ModelRef> out) {
  c.data.has_output = true;
  c.data.output_models = std::move(out);
  return c;
}

ModelRef M(std::string format, std::string url, Metrics metrics = {}) {
  return ModelRef{std::move(format), std::move(url), std::move(metrics), {}};
}

ModelRef Precision(ModelRef m, std::vector<double> p) {
  m.metrics = {{"precision", MetricValue::List(std::move(p))}};
  return m;
}

template <typename T>
std::vector<T> All(const Output& o) {
  std::vector<T> v;
  for (const auto& a : o.actions) {
    if (auto* x = std::get_if<T>(&a)) v.push_back(*x);
  }
  return v;
}

const ModelRef kInitial = M("ckpt", "/models/base_model");
const ModelRef kDeploy = M("pb", "/models/deploy_model/saved_model.pb");
const ModelRef kTrainedPb = M("pb", "/output/train/1/model.pb");
const ModelRef kTrainedCkpt = M("ckpt", "/output/train/1");

class IlDeployTest : public ::testing::Test {
 protected:
  IlDeployTest() {
    job.meta.name = "helmet";
    job.meta.ns = "default";
    job.spec.dataset_name = "ds";
    job.spec.initial_model_name = "initial-model";
    job.spec.deploy_model_name = "deploy-model";
    job.spec.output_dir = "/output";
    train = *CompileTrigger(TriggerSpec{std::nullopt, std::nullopt, ">", 10, "num_of_samples"});
    deploy =
        *CompileTrigger(TriggerSpec{std::nullopt, std::nullopt, ">", 0.1, "precision_delta[0]"});
    now = Now{1'000'000, 600, "2026-12-01T10:00:00Z"};
    job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
  }

  Spec MakeSpec() {
    Spec s;
    s.job = &job;
    s.train_trigger = &train;
    s.deploy_trigger = &deploy;
    s.initial_model = &kInitial;
    s.deploy_model = deploy_model ? &*deploy_model : nullptr;
    s.initial_eval_model = initial_eval_model ? &*initial_eval_model : nullptr;
    s.dataset_known = true;
    s.deploy_wait_ms = deploy_wait_ms;
    s.conditions_fresh = fresh;
    s.job_received_ms = job_received_ms;
    return s;
  }
  Output Run(const Event& e) {
    Output o = Step(MakeSpec(), state, e, now);
    state = o.state;
    return o;
  }
  void Push(JobCondition c) { job.conditions.push_back(std::move(c)); }

  // Round 1 up to the eval worker's report: Train Ready, train completed with `train_out`, Eval
  // Ready answered at the (Eval, Waiting) whose index is returned.
  int64_t ToEvalReport(std::vector<ModelRef> train_out, std::vector<ModelRef> eval_results) {
    state.train_pending = {0, 200, 20};
    Output o = Run(JobChanged{});
    EXPECT_EQ(All<WriteSamples>(o).size(), 1u);
    Run(FileWritten{Work::kWriteTrain, 1, true, ""});
    Push(Cond(Stage::kTrain, ConditionType::kReady));
    Push(WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted), train_out));
    Push(Cond(Stage::kEval, ConditionType::kWaiting));
    const int64_t eval_waiting = static_cast<int64_t>(job.conditions.size()) - 1;
    Run(JobChanged{});
    EXPECT_EQ(state.work, Work::kWriteEval);
    Output r = Run(FileWritten{Work::kWriteEval, 2, true, ""});
    EXPECT_EQ(All<SendReport>(r).size(), 1u);
    Push(Cond(Stage::kEval, ConditionType::kReady));
    Push(Cond(Stage::kEval, ConditionType::kRunning));
    if (!eval_results.empty()) {
      WorkerReport w;
      w.worker_name = "eval-worker-1";
      w.kind = "eval";
      w.status = "completed";
      w.results = std::move(eval_results);
      Output e = Run(WorkerReported{w});
      EXPECT_TRUE(All<SendReport>(e).empty()) << "no decision on the report itself";
      EXPECT_TRUE(All<CopyModel>(e).empty());
    }
    return eval_waiting;
  }
  std::vector<ModelRef> Better() {
    return {Precision(kTrainedPb, {0.9}), Precision(kDeploy, {0.5})};
  }
  // The GM's answer to the forwarded report: (Eval, Completed) (with `out` if given), then
  // (Deploy, Waiting).
  void GmPublishesDeployWaiting(std::vector<ModelRef> out = {}) {
    Push(out.empty() ? Cond(Stage::kEval, ConditionType::kCompleted)
                     : WithOutput(Cond(Stage::kEval, ConditionType::kCompleted), out));
    Push(Cond(Stage::kDeploy, ConditionType::kWaiting));
  }

  IlJob job;
  Trigger train, deploy;
  std::optional<ModelRef> deploy_model = kDeploy;
  std::optional<ModelRef> initial_eval_model;
  int64_t deploy_wait_ms = 30000;
  bool fresh = true;
  int64_t job_received_ms = 0;
  State state;
  Now now;
};

// §H3.4 test 2 (G2): the decision follows the (Deploy, Waiting); no timer fires afterwards.
TEST_F(IlDeployTest, G2_DeployWaitingDecides_CopyThenReadyWithTrainedAndDeployModels) {
  ToEvalReport({kTrainedPb, kTrainedCkpt}, Better());
  Run(EvalForwardWritten{now.unix_ms});
  GmPublishesDeployWaiting();
  now.unix_ms += 800;
  Output o = Run(JobChanged{});
  auto c = All<CopyModel>(o);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, kTrainedPb.url);
  EXPECT_EQ(c[0].dst_url, kDeploy.url);
  EXPECT_TRUE(All<SendReport>(o).empty()) << "Ready only after the copy";
  auto r = All<SendReport>(Run(ModelCopied{true, ""}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(
      r[0].report,
      (StatusReport{ReportPhase::kDeploy, ReportStatus::kReady, true, {kTrainedPb, kDeploy}}));
  EXPECT_EQ(state.decided_by, "(Deploy, Waiting)");
  ASSERT_EQ(state.deployments.size(), 1u);
  EXPECT_EQ(state.deployments[0].round, 1);
  now.unix_ms += 60000;
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty()) << "the wait does not fire after a decision";
  EXPECT_EQ(NextWakeMs(MakeSpec(), state), 0);
}

// §H3.4 test 1 (G1): no (Deploy, Waiting) ever comes; the decision is sent deploy_wait after the
// forwarded eval report was written, not after the worker's POST.
TEST_F(IlDeployTest, G1_DecidedDeployWaitAfterTheForwardWasWritten) {
  ToEvalReport({kTrainedPb, kTrainedCkpt}, Better());
  now.unix_ms += 5000;  // the GM link was down: the forward is written 5 s after the POST
  Run(EvalForwardWritten{now.unix_ms});
  EXPECT_EQ(NextWakeMs(MakeSpec(), state), now.unix_ms + 30000);
  now.unix_ms += 29999;
  EXPECT_TRUE(All<CopyModel>(Run(Tick{})).empty());
  now.unix_ms += 1;
  auto c = All<CopyModel>(Run(Tick{}));
  ASSERT_EQ(c.size(), 1u);
  auto r = All<SendReport>(Run(ModelCopied{true, ""}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report.status, ReportStatus::kReady);
  EXPECT_EQ(state.decided_by, "deploy-wait");
  // A G2 GM that was slower than the wait: its (Deploy, Waiting) for the decided round is not
  // answered again (idempotency, §H3.2).
  GmPublishesDeployWaiting();
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty());
}

TEST_F(IlDeployTest, WaitZeroMeansNoTimer_PureV070) {
  deploy_wait_ms = 0;
  ToEvalReport({kTrainedPb}, Better());
  Run(EvalForwardWritten{now.unix_ms});
  EXPECT_EQ(NextWakeMs(MakeSpec(), state), 0);
  now.unix_ms += 3'600'000;
  EXPECT_TRUE(All<CopyModel>(Run(Tick{})).empty());
  GmPublishesDeployWaiting();
  EXPECT_EQ(All<CopyModel>(Run(JobChanged{})).size(), 1u);
}

TEST_F(IlDeployTest, NotFired_DeployCompleted) {
  ToEvalReport({kTrainedPb}, {Precision(kTrainedPb, {0.55}), Precision(kDeploy, {0.5})});
  GmPublishesDeployWaiting();
  Output o = Run(JobChanged{});
  EXPECT_TRUE(All<CopyModel>(o).empty());
  auto r = All<SendReport>(o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report, (StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted}));
  EXPECT_NE(state.last_decision.find("kept"), std::string::npos);
}

TEST_F(IlDeployTest, CopyFails_DeployFailedWithInputModels) {
  ToEvalReport({kTrainedPb}, Better());
  GmPublishesDeployWaiting();
  Run(JobChanged{});
  auto r = All<SendReport>(Run(ModelCopied{false, "Permission denied"}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(
      r[0].report,
      (StatusReport{ReportPhase::kDeploy, ReportStatus::kFailed, true, {kTrainedPb, kDeploy}}));
  EXPECT_TRUE(state.deployments.empty());
}

TEST_F(IlDeployTest, B9_ShortDeployedMetrics_NoCrashNotDeployed) {
  deploy = *CompileTrigger(TriggerSpec{std::nullopt, std::nullopt, ">", 0.1, "precision_delta[3]"});
  ToEvalReport({kTrainedPb},
               {Precision(kTrainedPb, {0.8, 0.7, 0.6, 0.5}), Precision(kDeploy, {0.6})});
  GmPublishesDeployWaiting();
  auto r = All<SendReport>(Run(JobChanged{}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report.status, ReportStatus::kCompleted);
}

TEST_F(IlDeployTest, OneEvalResult_NotDeployed) {
  ToEvalReport({kTrainedPb}, {Precision(kTrainedPb, {0.9})});
  GmPublishesDeployWaiting();
  auto r = All<SendReport>(Run(JobChanged{}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report.status, ReportStatus::kCompleted);
  EXPECT_NE(state.last_decision.find("1 result"), std::string::npos) << state.last_decision;
}

// §H3.2: the eval metrics come from the round's (Eval, Completed) output when it is there.
TEST_F(IlDeployTest, EvalMetricsFromTheConditionWhenPresent) {
  ToEvalReport({kTrainedPb}, {Precision(kTrainedPb, {0.5}), Precision(kDeploy, {0.5})});
  GmPublishesDeployWaiting(Better());  // the GM's copy says better: it wins
  EXPECT_EQ(All<CopyModel>(Run(JobChanged{})).size(), 1u);
}

// ... but never an older round's (v0.7.0 falls back to any earlier (Eval, Completed)).
TEST_F(IlDeployTest, AnOlderRoundsEvalOutputIsNotUsed) {
  job.conditions = {WithOutput(Cond(Stage::kEval, ConditionType::kCompleted), Better()),
                    Cond(Stage::kDeploy, ConditionType::kCompleted),
                    Cond(Stage::kTrain, ConditionType::kWaiting)};
  ToEvalReport({kTrainedPb}, {});  // the worker's report never reached this LC
  GmPublishesDeployWaiting();
  auto r = All<SendReport>(Run(JobChanged{}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report, (StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted}));
  EXPECT_NE(state.last_decision.find("no eval result"), std::string::npos) << state.last_decision;
}

// §H2.0 / §H3.2: the answer was erased by the GM's stale write; a resync >= 60 s later that still
// shows the same (Deploy, Waiting) as latest gets the same report again, without a second copy.
TEST_F(IlDeployTest, LostAnswer_ResentOnceAfterSixtySecondsWithoutCopying) {
  ToEvalReport({kTrainedPb}, Better());
  GmPublishesDeployWaiting();
  job_received_ms = now.unix_ms;
  Run(JobChanged{});
  Output ready = Run(ModelCopied{true, ""});
  const StatusReport answer = All<SendReport>(ready).at(0).report;
  now.unix_ms += 59000;
  job_received_ms = now.unix_ms;
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty()) << "a resync within 60 s";
  now.unix_ms += 31000;  // max(deploy_wait, 60 s) passed, but only a Model changed
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty()) << "no job object since: no proof";
  job_received_ms = now.unix_ms;  // the GM's resync of the job: still (Deploy, Waiting)
  Output again = Run(JobChanged{});
  EXPECT_TRUE(All<CopyModel>(again).empty());
  auto r = All<SendReport>(again);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report, answer);
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty()) << "not on every message after that";
  EXPECT_EQ(state.decisions, 1);
}

// §H3.3: the GM moved on (e.g. the eval pod failed and it went back to train) before a decision:
// the pending decision is void, and the wait never fires into the next round.
TEST_F(IlDeployTest, GmMovedOn_PendingDecisionDropped) {
  ToEvalReport({kTrainedPb}, Better());
  Run(EvalForwardWritten{now.unix_ms});
  Push(Cond(Stage::kEval, ConditionType::kFailed));
  Push(Cond(Stage::kTrain, ConditionType::kWaiting));
  Run(JobChanged{});
  now.unix_ms += 120000;
  Output o = Run(Tick{});
  EXPECT_TRUE(All<SendReport>(o).empty());
  EXPECT_TRUE(All<CopyModel>(o).empty());
}

// §H3.3: a restart during the wait: the forward is re-sent from the outbox; Resume restarts the
// wait at that write when none was recorded.
TEST_F(IlDeployTest, ResumeStartsTheWaitAtTheReplayedWrite) {
  ToEvalReport({kTrainedPb}, Better());
  ASSERT_EQ(state.eval_written_ms, 0);
  now.unix_ms += 1000;
  Run(Resume{});
  EXPECT_EQ(state.eval_written_ms, now.unix_ms);
}

TEST_F(IlDeployTest, ResumeDuringTheCopy_ReissuesIt) {
  ToEvalReport({kTrainedPb}, Better());
  GmPublishesDeployWaiting();
  Run(JobChanged{});
  ASSERT_EQ(state.work, Work::kDeploy);
  auto c = All<CopyModel>(Run(Resume{}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].dst_url, kDeploy.url);
}

// §H1.4 multi-node: the eval pod ran on this node, the Eval Ready came from the dataset node's LC.
// This LC receives the job at (Eval, Running), the eval report, then (Deploy, Waiting): it decides.
TEST_F(IlDeployTest, MultiNode_EvalNodeDecidesFromTheConditions) {
  JobCondition ready = Cond(Stage::kEval, ConditionType::kReady);
  ready.data.input_models = {kTrainedPb, kDeploy};
  job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting),
                    Cond(Stage::kTrain, ConditionType::kReady),
                    WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted), {kTrainedPb}),
                    Cond(Stage::kEval, ConditionType::kWaiting),
                    ready,
                    Cond(Stage::kEval, ConditionType::kRunning)};
  deploy_model.reset();  // a G2 GM syncs the deploy Model to the eval node only with Deploy
  WorkerReport w;
  w.worker_name = "eval-worker-9";
  w.kind = "eval";
  w.status = "completed";
  w.results = Better();
  Output o = Run(WorkerReported{w});
  EXPECT_TRUE(All<SendReport>(o).empty());
  EXPECT_EQ(state.pending_round_id, 3);
  EXPECT_TRUE(state.eval_reported);
  deploy_model = kDeploy;
  GmPublishesDeployWaiting();
  auto c = All<CopyModel>(Run(JobChanged{}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, kTrainedPb.url);
  EXPECT_EQ(c[0].dst_url, kDeploy.url);
}

// §H3.2: a (Deploy, Waiting) with no local record (fresh DB, other node) is decided from the
// conditions alone.
TEST_F(IlDeployTest, NoLocalRecord_DecidedFromTheConditions) {
  job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting),
                    WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted), {kTrainedPb}),
                    Cond(Stage::kEval, ConditionType::kWaiting),
                    Cond(Stage::kEval, ConditionType::kReady),
                    WithOutput(Cond(Stage::kEval, ConditionType::kCompleted), Better()),
                    Cond(Stage::kDeploy, ConditionType::kWaiting)};
  EXPECT_EQ(All<CopyModel>(Run(JobChanged{})).size(), 1u);
}

// §H4.3 in the deploy: the trained model is the output matching the deploy Model's format and
// device, not models[0].
TEST_F(IlDeployTest, DeployCopiesTheOutputMatchingFormatAndDevice) {
  ModelRef om_deploy = M("om", "/models/deploy.om");
  om_deploy.devices = {"Ascend710"};
  deploy_model = om_deploy;
  ModelRef x = M("om", "/output/train/1/x.om");
  x.devices = {"Ascend310"};
  ModelRef y = M("om", "/output/train/1/y.om");
  y.devices = {"Ascend710"};
  ToEvalReport({x, y, M("pb", "/output/train/1/z.pb")},
               {Precision(M("om", x.url), {0.9}), Precision(om_deploy, {0.5})});
  GmPublishesDeployWaiting();
  auto c = All<CopyModel>(Run(JobChanged{}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, y.url);
}

// §H4.2's test: deploy Model {om, /models/deploy.om}, initialEvalModel {pb, /models/eval.pb},
// train report [{pb,a.pb},{om,a.om},{ckpt,dir}] -> Eval Ready [a.pb, /models/eval.pb]; after a
// fired deploy /models/deploy.om = a.om and /models/eval.pb = a.pb.
TEST_F(IlDeployTest, InitialEvalModel_EvalBaselineAndSecondCopy) {
  job.spec.initial_eval_model_name = "eval-model";
  deploy_model = M("om", "/models/deploy.om");
  const ModelRef eval_model = M("pb", "/models/eval.pb");
  const ModelRef a_pb = M("pb", "/output/train/1/a.pb");
  const ModelRef a_om = M("om", "/output/train/1/a.om");
  // Unknown initialEvalModel CR: the eval waits, naming it.
  state.train_pending = {0, 200, 20};
  Run(JobChanged{});
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  Push(WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted),
                  {a_pb, a_om, M("ckpt", "/output/train/1")}));
  Push(Cond(Stage::kEval, ConditionType::kWaiting));
  Output blocked = Run(JobChanged{});
  EXPECT_EQ(state.work, Work::kNone);
  ASSERT_EQ(All<Log>(blocked).size(), 1u);
  EXPECT_NE(All<Log>(blocked)[0].text.find("eval-model"), std::string::npos);
  initial_eval_model = eval_model;
  Run(JobChanged{});
  auto r = All<SendReport>(Run(FileWritten{Work::kWriteEval, 2, true, ""}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report.input_models, (std::vector<ModelRef>{a_pb, eval_model}));
  WorkerReport w;
  w.worker_name = "eval-worker-1";
  w.kind = "eval";
  w.status = "completed";
  w.results = {Precision(a_pb, {0.9}), Precision(eval_model, {0.5})};
  Run(WorkerReported{w});
  GmPublishesDeployWaiting();
  auto c1 = All<CopyModel>(Run(JobChanged{}));
  ASSERT_EQ(c1.size(), 1u);
  EXPECT_EQ(c1[0].src_url, a_om.url);
  EXPECT_EQ(c1[0].dst_url, "/models/deploy.om");
  Output second = Run(ModelCopied{true, ""});
  EXPECT_TRUE(All<SendReport>(second).empty()) << "Ready after both copies";
  auto c2 = All<CopyModel>(second);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].src_url, a_pb.url);
  EXPECT_EQ(c2[0].dst_url, "/models/eval.pb");
  auto ready = All<SendReport>(Run(ModelCopied{true, ""}));
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(
      ready[0].report,
      (StatusReport{ReportPhase::kDeploy, ReportStatus::kReady, true, {a_om, *deploy_model}}));
}

// [D:I15]: a refused eval report (not forwarded) arms the wait; without a valid one the round is
// decided "not deployed" then, so a G1 GM (no Deploy-stage conditions) still ends it.
TEST_F(IlDeployTest, RefusedEvalReport_DecidedNotDeployedAfterTheDeployWait) {
  ToEvalReport({kTrainedPb}, {});
  Output o = Run(EvalReportRefused{"eval-worker-x", "results[0].url: missing"});
  EXPECT_TRUE(All<SendReport>(o).empty()) << "not decided at once";
  EXPECT_EQ(NextWakeMs(MakeSpec(), state), now.unix_ms + 30000) << "a tick comes at the deadline";
  now.unix_ms += 29999;
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty());
  now.unix_ms += 1;
  auto r = All<SendReport>(Run(Tick{}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report, (StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted}));
  EXPECT_EQ(state.decisions, 1);
  EXPECT_NE(state.last_decision.find("not deployed"), std::string::npos);
  EXPECT_EQ(NextWakeMs(MakeSpec(), state), 0) << "the next round is not held back";
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty()) << "decided once";
}

TEST_F(IlDeployTest, RefusedEvalReport_AValidReportBeforeTheDeadlineDecides) {
  ToEvalReport({kTrainedPb}, {});
  Run(EvalReportRefused{"eval-worker-x", "results[0].url: missing"});
  WorkerReport w;
  w.worker_name = "eval-worker-1";
  w.kind = "eval";
  w.status = "completed";
  w.results = Better();
  Run(WorkerReported{w});
  EXPECT_EQ(state.eval_refused_deadline_ms, 0);
  GmPublishesDeployWaiting();
  EXPECT_EQ(All<CopyModel>(Run(JobChanged{})).size(), 1u) << "the valid report deploys";
  Run(ModelCopied{true, ""});
  now.unix_ms += 30000;
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty()) << "no second decision at the deadline";
}

TEST_F(IlDeployTest, DuplicateEvalReport_RecordedOnce) {
  ToEvalReport({kTrainedPb}, Better());
  WorkerReport w;
  w.worker_name = "eval-worker-1";
  w.kind = "eval";
  w.status = "completed";
  w.results = {Precision(kTrainedPb, {0.1}), Precision(kDeploy, {0.5})};
  Output again = Run(WorkerReported{w});
  EXPECT_EQ(state.eval_report, Better()) << "the first report stays";
  ASSERT_EQ(All<Log>(again).size(), 1u);
}

// ---- one decision per round, whatever the GM re-sends ([D:I23.6])
// --------------------------

// The data the LC wrote into round `n`'s Ready conditions (the GM stores it): the (Train, Ready)
// outputDir <out>/train/<n> and the (Eval, Ready) dataURL <out>/data/eval/<n+1>/data.txt.
void StampRound(IlJob& job, int64_t n) {
  for (auto& c : job.conditions) {
    if (c.type != ConditionType::kReady) continue;
    if (c.stage == Stage::kTrain && c.data.output_dir.empty()) {
      c.data.output_dir = "/output/train/" + std::to_string(n);
    } else if (c.stage == Stage::kEval && c.data.data_url.empty()) {
      c.data.data_url = "/output/data/eval/" + std::to_string(n + 1) + "/data.txt";
    }
  }
}

// A stale GM object of round 1 (informer lag, §H2.0): its conditions up to the round's (Deploy,
// Waiting), re-indexed by `shift` (+1: a condition a later status write erased still shows; -1:
// the LC's (Train, Completed) report already erased), with the eval output erased if asked.
std::vector<JobCondition> StaleView(std::vector<JobCondition> c, int shift, bool erase_output) {
  size_t dw = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].stage == Stage::kDeploy && c[i].type == ConditionType::kWaiting) dw = i + 1;
  }
  c.resize(dw);
  const auto tc = std::find_if(c.begin(), c.end(), [](const JobCondition& x) {
    return x.stage == Stage::kTrain && x.type == ConditionType::kCompleted;
  });
  if (shift > 0) c.insert(tc, Cond(Stage::kTrain, ConditionType::kCompleted));
  if (shift < 0) c.erase(tc);
  if (erase_output) {
    for (auto& x : c) {
      if (x.stage == Stage::kEval && x.type == ConditionType::kCompleted) x = Cond(x.stage, x.type);
    }
  }
  return c;
}

struct StaleCase {
  const char* name;
  bool closed;        // the GM's (Train, Waiting) of round 2 was seen before the stale objects
  int shift;          // re-indexing of the stale object (0: the very object answered)
  bool erase_output;  // its (Eval, Completed) has no output (the pod's condition won, §H2.0)
  int64_t later_ms;   // the first stale object comes this long after the answer
  int sends;          // stale objects, 200 ms apart
  bool same_report;   // the first one gets the decision's report again (lost-answer rule)
};

// Round 1 decided Deploy Ready on its (Deploy, Waiting); then stale objects of round 1. Before
// [D:I23.6], a re-indexed one was decided again (another copy, or "not deployed: no eval
// result" once the round's eval report was forgotten), and a closed round's was re-answered.
TEST_F(IlDeployTest, StaleDeployWaitingOfADecidedRound_SameAnswerOrNone) {
  const StaleCase cases[] = {
      {"reindexed +1, 0.6 s later, x3", false, 1, false, 200, 3, false},
      {"reindexed -1, eval output erased, 1.1 s later", false, -1, true, 1100, 1, false},
      {"reindexed +1, 61 s later: the lost answer, same report", false, 1, false, 61000, 2, true},
      {"reindexed -1, eval output erased, 61 s later: same report", false, -1, true, 61000, 1,
       true},
      {"closed, reindexed +1, 0.6 s later, x3", true, 1, false, 200, 3, false},
      {"closed, the very object, 61 s later: nothing", true, 0, false, 61000, 2, false},
      {"closed, reindexed -1, eval output erased, 61 s later", true, -1, true, 61000, 1, false},
  };
  for (const StaleCase& tc : cases) {
    SCOPED_TRACE(tc.name);
    job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
    state = State{};
    now.unix_ms = 1'000'000;
    ToEvalReport({kTrainedPb}, Better());
    GmPublishesDeployWaiting({Precision(kTrainedPb, {0.9}), Precision(kDeploy, {0.5})});
    StampRound(job, 1);
    job_received_ms = now.unix_ms;
    ASSERT_EQ(All<CopyModel>(Run(JobChanged{})).size(), 1u);
    const auto answer = All<SendReport>(Run(ModelCopied{true, ""}));
    ASSERT_EQ(answer.size(), 1u);
    ASSERT_EQ(answer[0].report.status, ReportStatus::kReady);
    const std::vector<JobCondition> answered = job.conditions;
    if (tc.closed) {
      Push(Cond(Stage::kDeploy, ConditionType::kReady));
      Push(Cond(Stage::kDeploy, ConditionType::kCompleted));
      Push(Cond(Stage::kTrain, ConditionType::kWaiting));
      job_received_ms = now.unix_ms += 100;
      EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty());
    }
    now.unix_ms += tc.later_ms;
    for (int i = 0; i < tc.sends; ++i, now.unix_ms += 200) {
      job.conditions = StaleView(answered, tc.shift, tc.erase_output);
      job_received_ms = now.unix_ms;
      Output o = Run(JobChanged{});
      EXPECT_TRUE(All<CopyModel>(o).empty()) << "send " << i;
      auto r = All<SendReport>(o);
      if (tc.same_report && i == 0) {
        EXPECT_EQ(r.size(), 1u);  // not ASSERT: every row runs
        if (!r.empty()) {
          EXPECT_EQ(r[0].report, answer[0].report);
        }
      } else {
        EXPECT_TRUE(r.empty()) << "send " << i << ": "
                               << (r.empty() ? "" : ReportStatusName(r[0].report.status));
      }
    }
    EXPECT_EQ(state.decisions, 1);
    EXPECT_EQ(state.deployments.size(), 1u);
  }
}

// The pending round's (Deploy, Waiting) in an object whose status write erased the LC's (Train,
// Completed) report: its (Eval, Waiting) is at another index than the one this LC answered. It is
// the same round (same Eval Ready): decided from the eval report this LC received. Before issue
// 23 item 6: "not deployed: no eval result for the round".
TEST_F(IlDeployTest, PendingRoundSeenAtAnotherIndex_DecidedWithItsEvalReport) {
  ToEvalReport({kTrainedPb}, Better());
  StampRound(job, 1);
  job.conditions.erase(job.conditions.begin() + 2);  // the (Train, Completed)
  GmPublishesDeployWaiting();                        // no eval output: the pod's condition won
  auto c = All<CopyModel>(Run(JobChanged{}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, kTrainedPb.url);
  EXPECT_EQ(All<SendReport>(Run(ModelCopied{true, ""})).at(0).report.status, ReportStatus::kReady);
}

// The eval node of a multi-node job decides from the conditions and the eval report it forwarded;
// a stale re-indexed object of that round, and a repeated eval report, change nothing.
TEST_F(IlDeployTest, MultiNode_StaleReindexedDeployWaiting_DecidedOnce) {
  JobCondition train_ready = Cond(Stage::kTrain, ConditionType::kReady);
  JobCondition ready = Cond(Stage::kEval, ConditionType::kReady);
  ready.data.input_models = {kTrainedPb, kDeploy};
  job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting),
                    train_ready,
                    WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted), {kTrainedPb}),
                    Cond(Stage::kEval, ConditionType::kWaiting),
                    ready,
                    Cond(Stage::kEval, ConditionType::kRunning)};
  StampRound(job, 1);
  WorkerReport w;
  w.worker_name = "eval-worker-9";
  w.kind = "eval";
  w.status = "completed";
  w.results = Better();
  Run(WorkerReported{w});
  EXPECT_EQ(state.pending_round_key, 1);
  GmPublishesDeployWaiting();
  ASSERT_EQ(All<CopyModel>(Run(JobChanged{})).size(), 1u);
  ASSERT_EQ(All<SendReport>(Run(ModelCopied{true, ""})).size(), 1u);
  const std::vector<JobCondition> answered = job.conditions;
  for (int shift : {1, -1}) {
    now.unix_ms += 600;
    job.conditions = StaleView(answered, shift, true);
    Output o = Run(JobChanged{});
    EXPECT_TRUE(All<SendReport>(o).empty()) << "shift " << shift;
    EXPECT_TRUE(All<CopyModel>(o).empty()) << "shift " << shift;
    // The eval worker's report re-sent (its retry) while the stale object is the latest.
    EXPECT_TRUE(All<SendReport>(Run(WorkerReported{w})).empty());
    EXPECT_FALSE(state.eval_reported) << "a decided round's report is forwarded only";
  }
  EXPECT_EQ(state.decisions, 1);
}

// ---- hot update (§H4.1) ------------------------------------------------------------------------

class IlHotUpdateTest : public IlDeployTest {
 protected:
  void SetUp() override {
    job.spec.hot_update_enabled = true;
    job.meta.annotations[kHotUpdateConfigAnnotation] =
        "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet/model_config.json";
  }
  int64_t ToDeployRunning() {
    ToEvalReport({kTrainedPb, kTrainedCkpt}, Better());
    GmPublishesDeployWaiting();
    Output d = Run(JobChanged{});
    EXPECT_TRUE(All<CopyModel>(d).empty()) << "hot update: Ready without copying";
    auto r = All<SendReport>(d);
    EXPECT_EQ(r.size(), 1u);
    if (!r.empty()) {
      EXPECT_EQ(
          r[0].report,
          (StatusReport{ReportPhase::kDeploy, ReportStatus::kReady, true, {kTrainedPb, kDeploy}}));
    }
    Push(Cond(Stage::kDeploy, ConditionType::kReady));
    Push(Cond(Stage::kDeploy, ConditionType::kStarting));
    Push(Cond(Stage::kDeploy, ConditionType::kRunning));
    return static_cast<int64_t>(job.conditions.size()) - 1;
  }
};

TEST_F(IlHotUpdateTest, DeployRunningWritesModelAndConfigOncePerIndex) {
  const int64_t idx = ToDeployRunning();
  Output o = Run(JobChanged{});
  auto w = All<WriteHotUpdate>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(All<SendReport>(o).empty()) << "the hot update sends nothing";
  EXPECT_EQ(w[0].condition, idx);
  EXPECT_EQ(w[0].config_path, job.meta.annotations[kHotUpdateConfigAnnotation]);
  EXPECT_EQ(w[0].model_path, "/model-hot-update/model.pb");
  ASSERT_EQ(w[0].copies.size(), 2u);
  EXPECT_EQ(w[0].copies[0].src_url, kTrainedPb.url);
  EXPECT_EQ(w[0].copies[0].dst_url,
            "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet/model.pb");
  EXPECT_EQ(w[0].copies[1].dst_url, kDeploy.url);
  EXPECT_TRUE(All<WriteHotUpdate>(Run(JobChanged{})).empty()) << "in flight: not twice";
  Run(HotUpdateWritten{idx, true, ""});
  EXPECT_EQ(state.answered_hot_update, idx);
  EXPECT_TRUE(All<WriteHotUpdate>(Run(JobChanged{})).empty()) << "a resync: once per index";
}

// Upstream [P:U381]: round 2's (Deploy, Running) is a new index and is written too.
TEST_F(IlHotUpdateTest, SecondRoundIsWrittenToo_Upstream381) {
  const int64_t idx1 = ToDeployRunning();
  Run(JobChanged{});
  Run(HotUpdateWritten{idx1, true, ""});
  Push(Cond(Stage::kDeploy, ConditionType::kCompleted));
  Push(Cond(Stage::kTrain, ConditionType::kWaiting));
  state.train_pending = {200, 400, 20};
  Run(JobChanged{});
  Run(FileWritten{Work::kWriteTrain, 2, true, ""});
  const ModelRef round2 = M("pb", "/output/train/2/model.pb");
  Push(WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted), {round2}));
  Push(Cond(Stage::kEval, ConditionType::kWaiting));
  Run(JobChanged{});
  Run(FileWritten{Work::kWriteEval, 3, true, ""});
  WorkerReport w;
  w.worker_name = "eval-worker-2";
  w.kind = "eval";
  w.status = "completed";
  w.results = {Precision(round2, {0.95}), Precision(kDeploy, {0.5})};
  Run(WorkerReported{w});
  GmPublishesDeployWaiting();
  EXPECT_EQ(All<SendReport>(Run(JobChanged{})).size(), 1u);
  Push(Cond(Stage::kDeploy, ConditionType::kRunning));
  auto h = All<WriteHotUpdate>(Run(JobChanged{}));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].copies[0].src_url, round2.url);
}

// §H3.3: after a restart a persisted (Deploy, Running) is not acted on until a GM message of this
// connection confirms it.
TEST_F(IlHotUpdateTest, StaleConditionsAreNotActedOn) {
  ToDeployRunning();
  fresh = false;
  EXPECT_TRUE(All<WriteHotUpdate>(Run(Resume{})).empty());
  fresh = true;
  EXPECT_EQ(All<WriteHotUpdate>(Run(JobChanged{})).size(), 1u);
}

TEST_F(IlHotUpdateTest, FailureRetriesAfterTenSecondsLoggedOnce) {
  const int64_t idx = ToDeployRunning();
  Run(JobChanged{});
  Output f = Run(HotUpdateWritten{idx, false, "No space left on device"});
  ASSERT_EQ(All<Log>(f).size(), 1u);
  EXPECT_TRUE(All<WriteHotUpdate>(Run(JobChanged{})).empty()) << "not before 10 s";
  now.unix_ms += 10000;
  EXPECT_EQ(All<WriteHotUpdate>(Run(Tick{})).size(), 1u);
}

TEST_F(IlHotUpdateTest, MissingAnnotation_LoggedOnceNamingItNothingWritten) {
  ToDeployRunning();
  job.meta.annotations.clear();
  Output o = Run(JobChanged{});
  EXPECT_TRUE(All<WriteHotUpdate>(o).empty());
  ASSERT_EQ(All<Log>(o).size(), 1u);
  EXPECT_NE(All<Log>(o)[0].text.find(kHotUpdateConfigAnnotation), std::string::npos);
  EXPECT_TRUE(All<Log>(Run(JobChanged{})).empty()) << "logged once";
}

TEST_F(IlHotUpdateTest, ColdJobIgnoresDeployRunning) {
  job.spec.hot_update_enabled = false;
  ToEvalReport({kTrainedPb}, Better());
  Push(Cond(Stage::kDeploy, ConditionType::kRunning));
  Output o = Run(JobChanged{});
  EXPECT_TRUE(All<WriteHotUpdate>(o).empty());
}

// ---- facts (core/facts.h): what each transition of a round tells the round history

std::string Describe(const Fact& f) {
  std::ostringstream o;
  auto metrics = [&](const MetricNumbers& m) {
    o << "{";
    for (const auto& [k, v] : m) o << k << "=" << v << " ";
    o << "}";
  };
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, TrainTriggerFired>) {
          o << "fired{" << x.round << ", " << x.samples << ", " << x.reason << "}";
        } else if constexpr (std::is_same_v<X, ReportSent>) {
          o << "sent{" << x.round << ", " << ReportPhaseName(x.phase) << ", "
            << ReportStatusName(x.status) << ", " << x.data_url << ", " << x.output_dir << "}";
        } else if constexpr (std::is_same_v<X, StageReported>) {
          o << "reported{" << x.round << ", " << ReportPhaseName(x.stage) << ", " << x.completed
            << ", " << x.model_url << ", ";
          for (const auto& m : x.metrics) metrics(m);
          o << "}";
        } else {
          o << "decided{" << x.round << ", " << static_cast<int>(x.kind) << ", " << x.reason
            << ", ";
          metrics(x.new_metrics);
          metrics(x.deployed_metrics);
          o << ", " << x.copy_to << "}";
        }
      },
      f);
  return o.str();
}

std::string Describe(const std::vector<Fact>& facts) {
  std::string s;
  for (const Fact& f : facts) s += Describe(f) + "\n";
  return s;
}

struct FactRow {
  const char* what;
  std::function<Output()> step;
  std::vector<Fact> want;
};

void ExpectFacts(const std::vector<FactRow>& rows) {
  for (const FactRow& row : rows) {
    const Output o = row.step();
    EXPECT_EQ(o.facts, row.want) << row.what << ": got\n"
                                 << Describe(o.facts) << "want\n"
                                 << Describe(row.want);
  }
}

// One cold round that deploys, transition by transition.
TEST_F(IlDeployTest, Facts_ADeployedRound) {
  WorkerReport train_done;
  train_done.worker_name = "train-worker-1";
  train_done.kind = "train";
  train_done.status = "completed";
  train_done.results = {kTrainedPb, kTrainedCkpt};
  WorkerReport eval_done = train_done;
  eval_done.worker_name = "eval-worker-1";
  eval_done.kind = "eval";
  eval_done.results = Better();
  ExpectFacts({
      {"samples fire the train trigger",
       [&] {
         state.train_pending = {0, 200, 20};
         return Run(JobChanged{});
       },
       {TrainTriggerFired{1, 20, "fired: num_of_samples = 20 > 10"}}},
      {"the train file is written",
       [&] {
         return Run(FileWritten{Work::kWriteTrain, 1, true, ""});
       },
       {ReportSent{1, ReportPhase::kTrain, ReportStatus::kReady, "/output/data/train/1/data.txt",
                   "/output/train/1"}}},
      {"the train worker completes",
       [&] {
         Push(Cond(Stage::kTrain, ConditionType::kReady));
         return Run(WorkerReported{train_done});
       },
       {StageReported{1, ReportPhase::kTrain, true, kTrainedPb.url, {{}, {}}}}},
      {"(Eval, Waiting) starts the eval file: no fact",
       [&] {
         Push(WithOutput(Cond(Stage::kTrain, ConditionType::kCompleted),
                         {kTrainedPb, kTrainedCkpt}));
         Push(Cond(Stage::kEval, ConditionType::kWaiting));
         return Run(JobChanged{});
       },
       {}},
      {"the eval file is written",
       [&] {
         return Run(FileWritten{Work::kWriteEval, 2, true, ""});
       },
       {ReportSent{1, ReportPhase::kEval, ReportStatus::kReady, "/output/data/eval/1/data.txt",
                   ""}}},
      {"the eval worker completes",
       [&] {
         Push(Cond(Stage::kEval, ConditionType::kReady));
         return Run(WorkerReported{eval_done});
       },
       {StageReported{1,
                      ReportPhase::kEval,
                      true,
                      kTrainedPb.url,
                      {{{"precision", 0.9}}, {{"precision", 0.5}}}}}},
      {"(Deploy, Waiting): the decision, a copy",
       [&] {
         GmPublishesDeployWaiting();
         return Run(JobChanged{});
       },
       {DeployDecided{1,
                      DecisionKind::kDeploy,
                      "fired: precision_delta[0] = 0.4 > 0.1",
                      {{"precision", 0.9}},
                      {{"precision", 0.5}},
                      kDeploy.url}}},
      {"the copy is done",
       [&] {
         return Run(ModelCopied{true, ""});
       },
       {ReportSent{1, ReportPhase::kDeploy, ReportStatus::kReady, "", ""}}},
      {"the GM's re-send of the Waiting: nothing", [&] { return Run(JobChanged{}); }, {}},
  });
}

// The other ends of a round: kept, not deployed, a failed copy, failed workers.
TEST_F(IlDeployTest, Facts_RoundsThatDoNotDeploy) {
  struct Case {
    const char* what;
    std::vector<ModelRef> eval_results;
    bool copy_fails;
    std::vector<Fact> want;
  };
  const Case cases[] = {
      {"worse: kept",
       {Precision(kTrainedPb, {0.5}), Precision(kDeploy, {0.9})},
       false,
       {DeployDecided{1,
                      DecisionKind::kKept,
                      "not fired: precision_delta[0] = -0.4, not > 0.1",
                      {{"precision", 0.5}},
                      {{"precision", 0.9}},
                      ""},
        ReportSent{1, ReportPhase::kDeploy, ReportStatus::kCompleted, "", ""}}},
      {"no eval result: not deployed",
       {},
       false,
       {DeployDecided{1,
                      DecisionKind::kNotDeployed,
                      "no eval result for round 1 (no (Eval, Completed) output and no valid eval "
                      "report reached this LC)",
                      {},
                      {},
                      ""},
        ReportSent{1, ReportPhase::kDeploy, ReportStatus::kCompleted, "", ""}}},
      {"better, the copy fails",
       Better(),
       true,
       {ReportSent{1, ReportPhase::kDeploy, ReportStatus::kFailed, "", ""}}},
  };
  for (const Case& c : cases) {
    state = State{};
    job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
    ToEvalReport({kTrainedPb, kTrainedCkpt}, c.eval_results);
    GmPublishesDeployWaiting();
    Output o = Run(JobChanged{});
    std::vector<Fact> got = o.facts;
    if (c.copy_fails) got = Run(ModelCopied{false, "disk full"}).facts;
    EXPECT_EQ(got, c.want) << c.what << ": got\n" << Describe(got) << "want\n" << Describe(c.want);
  }
  // A failed worker report is a fact of its stage.
  WorkerReport failed;
  failed.worker_name = "eval-worker-1";
  failed.kind = "eval";
  failed.status = "failed";
  state = State{};
  job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
  ToEvalReport({kTrainedPb, kTrainedCkpt}, {});
  EXPECT_EQ(Run(WorkerReported{failed}).facts,
            (std::vector<Fact>{StageReported{1, ReportPhase::kEval, false, "", {}}}));
  failed.kind = "train";
  failed.worker_name = "train-worker-1";
  EXPECT_EQ(Run(WorkerReported{failed}).facts,
            (std::vector<Fact>{StageReported{1, ReportPhase::kTrain, false, "", {}}}));
  failed.kind = "inference";  // no stage of a round: no fact
  EXPECT_TRUE(Run(WorkerReported{failed}).facts.empty());
}

}  // namespace
}  // namespace sedna::core::il
