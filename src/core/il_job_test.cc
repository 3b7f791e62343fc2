// Table-driven tests of the IL state machine (docs/protocol.md §P8.2) and the §P8.5 IL items.
#include "core/il_job.h"

#include <gtest/gtest.h>

namespace sedna::core::il {
namespace {

JobCondition Cond(Stage stage, ConditionType type) {
  JobCondition c;
  c.stage = stage;
  c.type = type;
  return c;
}

JobCondition TrainCompleted(std::vector<ModelRef> out) {
  JobCondition c = Cond(Stage::kTrain, ConditionType::kCompleted);
  c.data.has_output = true;
  c.data.output_models = std::move(out);
  return c;
}

const ModelRef kInitial{"ckpt", "/models/base_model", {}};
const ModelRef kDeploy{"pb", "/models/deploy_model/saved_model.pb", {}};
const ModelRef kTrainedPb{"pb", "/output/train/1/model_finetune_tensorflow.pb", {}};
const ModelRef kTrainedCkpt{"ckpt", "/output/train/1", {}};

Trigger MustCompile(TriggerSpec s) {
  auto t = CompileTrigger(s);
  EXPECT_TRUE(t.ok()) << t.message();
  return t.ok() ? *t : Trigger{};
}

class IlJobTest : public ::testing::Test {
 protected:
  IlJobTest() {
    job.meta.name = "helmet-detection-demo";
    job.meta.ns = "default";
    job.spec.dataset_name = "incremental-dataset";
    job.spec.train_prob = 0.8;
    job.spec.initial_model_name = "initial-model";
    job.spec.deploy_model_name = "deploy-model";
    job.spec.output_dir = "/output/";
    TriggerSpec ts;
    ts.op = ">";
    ts.threshold = 500;
    ts.metric = "num_of_samples";
    train = MustCompile(ts);
    TriggerSpec ds;
    ds.op = ">";
    ds.threshold = 0.1;
    ds.metric = "precision_delta[0]";
    deploy = MustCompile(ds);
    job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
    now.unix_ms = 1'000'000;
    now.minute_of_day = 600;
    now.rfc3339 = "2026-11-29T10:00:00Z";
  }

  Spec MakeSpec() {
    Spec s;
    s.job = &job;
    s.train_trigger = &train;
    s.deploy_trigger = &deploy;
    s.initial_model = &initial;
    s.deploy_model = &kDeploy;
    s.dataset_known = true;
    s.dataset_s3 = dataset_s3;
    s.g1_rules = g1_rules;
    s.layout = layout;
    return s;
  }

  Output Run(const Event& e) {
    Spec s = MakeSpec();
    Output o = Step(s, state, e, now);
    state = o.state;
    return o;
  }

  // n new samples split 80/20 into spools that grow by 10 bytes per sample.
  Output Ingest(int64_t train_n, int64_t eval_n) {
    SamplesIngested e;
    e.samples_seen = state.samples_seen + train_n + eval_n;
    e.train_added = train_n;
    e.train_end = state.train_pending.end + 10 * train_n;
    e.eval_added = eval_n;
    e.eval_end = state.eval_open.end + 10 * eval_n;
    return Run(e);
  }

  template <class A>
  static std::vector<A> All(const Output& o) {
    std::vector<A> v;
    for (const auto& a : o.actions) {
      if (auto* p = std::get_if<A>(&a)) v.push_back(*p);
    }
    return v;
  }

  // Drives one full train dispatch: samples, trigger, file written. Returns the IL-1 report.
  StatusReport DispatchTrain(int64_t train_n = 501, int64_t eval_n = 125) {
    Output o = Ingest(train_n, eval_n);
    auto writes = All<WriteSamples>(o);
    EXPECT_EQ(writes.size(), 1u);
    Output w = Run(FileWritten{Work::kWriteTrain, writes.at(0).round, true, ""});
    auto reports = All<SendReport>(w);
    EXPECT_EQ(reports.size(), 1u);
    return reports.at(0).report;
  }

  IlJob job;
  Trigger train, deploy;
  State state;
  Now now;
  bool dataset_s3 = false;
  bool g1_rules = false;
  // The rows below were written for the 2021 layout (data/eval/<train round + 1>); the layout
  // rows set kV07, which the LC uses unless the GM is a 2021 one.
  Layout layout = Layout::k2021;
  ModelRef initial = kInitial;
};

// ---- (Train, Waiting) rows ------------------------------------------------------------------

TEST_F(IlJobTest, TrainWaiting_BelowThreshold_NoAction) {
  Output o = Ingest(400, 100);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_EQ(state.train_pending.count, 400);
  EXPECT_EQ(state.eval_open.count, 100);
  EXPECT_EQ(state.work, Work::kNone);
}

TEST_F(IlJobTest, TrainWaiting_TriggerFires_WritesRoundFileFirst) {
  Output o = Ingest(501, 125);
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].stage, Stage::kTrain);
  EXPECT_EQ(w[0].url, "/output/data/train/1/data.txt");
  EXPECT_EQ(w[0].spool, SpoolKind::kTrain);
  ASSERT_EQ(w[0].ranges.size(), 1u);
  EXPECT_EQ(w[0].ranges[0], (SpoolRange{0, 5010, 501}));
  EXPECT_TRUE(All<SendReport>(o).empty()) << "Ready must wait for the file";
  EXPECT_EQ(state.work, Work::kWriteTrain);
}

TEST_F(IlJobTest, TrainWaiting_FileWritten_SendsIL1AndAdvancesRound) {
  StatusReport r = DispatchTrain();
  StatusReport want{ReportPhase::kTrain,
                    ReportStatus::kReady,
                    true,
                    {kInitial},
                    "/output/data/train/1/data.txt",
                    "",
                    "/output/train/1"};
  EXPECT_EQ(r, want);
  EXPECT_EQ(state.round, 2);
  EXPECT_EQ(state.answered_train_waiting, 0);
  EXPECT_EQ(state.train_pending, (SpoolRange{5010, 5010, 0}));
  ASSERT_EQ(state.eval_windows.size(), 1u);
  EXPECT_EQ(state.eval_windows[0], (SpoolRange{0, 1250, 125}));
  EXPECT_EQ(state.work, Work::kNone);
}

TEST_F(IlJobTest, TrainWaiting_SamplesArrivingDuringWrite_StayPending) {
  Output o = Ingest(501, 0);
  ASSERT_EQ(All<WriteSamples>(o).size(), 1u);
  Ingest(7, 0);
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  EXPECT_EQ(state.train_pending, (SpoolRange{5010, 5080, 7}));
}

TEST_F(IlJobTest, TrainWaiting_WriteFails_RetriesAfterBackoff) {
  Ingest(501, 0);
  Output f = Run(FileWritten{Work::kWriteTrain, 1, false, "No space left on device"});
  EXPECT_TRUE(All<SendReport>(f).empty());
  EXPECT_EQ(state.round, 1) << "round not advanced by a failed write";
  EXPECT_EQ(state.train_pending.count, 501) << "samples not consumed by a failed write";
  EXPECT_EQ(state.last_error, "No space left on device");
  EXPECT_TRUE(All<WriteSamples>(Run(Tick{})).empty()) << "no retry before the backoff";
  now.unix_ms += 10'000;
  EXPECT_EQ(All<WriteSamples>(Run(Tick{})).size(), 1u);
}

TEST_F(IlJobTest, TrainWaiting_InitialModelUnknown_BlockedOnceThenFires) {
  Spec s = MakeSpec();
  s.initial_model = nullptr;
  SamplesIngested e{626, 501, 5010, 125, 1250};
  Output o = Step(s, state, e, now);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  ASSERT_EQ(All<Log>(o).size(), 1u);
  EXPECT_NE(All<Log>(o)[0].text.find("initial-model"), std::string::npos);
  state = o.state;
  Output again = Step(s, state, Tick{}, now);
  EXPECT_TRUE(All<Log>(again).empty()) << "a blocked condition is logged once";
  state = again.state;
  EXPECT_EQ(All<WriteSamples>(Run(JobChanged{})).size(), 1u) << "fires once the Model is known";
}

TEST_F(IlJobTest, TrainWaiting_DatasetUnknown_NoFire) {
  Spec s = MakeSpec();
  s.dataset_known = false;
  state.train_pending = {0, 5010, 501};
  Output o = Step(s, state, Tick{}, now);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
}

TEST_F(IlJobTest, TrainWaiting_OutsideTimerWindow_NoFire) {
  TriggerSpec ts;
  ts.op = ">";
  ts.threshold = 500;
  ts.metric = "num_of_samples";
  ts.timer = TimerSpec{"02:00", "04:00"};
  train = MustCompile(ts);
  EXPECT_TRUE(All<WriteSamples>(Ingest(501, 0)).empty());
  now.minute_of_day = 3 * 60;
  EXPECT_EQ(All<WriteSamples>(Run(Tick{})).size(), 1u);
}

TEST_F(IlJobTest, CsvDataset_WritesDataCsvWithHeader_B19) {
  Spec s = MakeSpec();
  s.csv = true;
  Output o = Step(s, state, SamplesIngested{626, 501, 5010, 125, 1250}, now);
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/train/1/data.csv");
  EXPECT_TRUE(w[0].csv_header);
}

// ---- re-sends, later rounds ------------------------------------------------------------------

TEST_F(IlJobTest, B4_GmResendOfAnsweredWaitingNeverSendsSecondReady) {
  DispatchTrain();
  // The GM re-sends the job (resync) still showing (Train,Waiting) while more samples arrive.
  Output o = Ingest(900, 100);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty());
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty());
}

TEST_F(IlJobTest, SecondRound_UsesRetrainCheckpointOfLatestTrainCompleted) {
  DispatchTrain();
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kReady));
  job.conditions.push_back(TrainCompleted({kTrainedPb, kTrainedCkpt}));
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kWaiting));
  job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kCompleted));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  StatusReport r = DispatchTrain();
  EXPECT_EQ(r.input_models, std::vector<ModelRef>{kTrainedCkpt});
  EXPECT_EQ(r.data_url, "/output/data/train/2/data.txt");
  EXPECT_EQ(r.output_dir, "/output/train/2");
  EXPECT_EQ(state.round, 3);
}

// A job whose initial model has the deploy model's format (pb, pb): v0.5+ retrains from the
// output model of that format (models[0], the deploy candidate); the 2021 LC's
// getTrainOrEvalModel always takes models[1], the retrain checkpoint ([D:I23.3]).
TEST_F(IlJobTest, SecondRound_InitialModelOfTheDeployFormat_G2FormatRuleG1IndexRule) {
  const ModelRef initial_pb{"pb", "/models/base_model.pb", {}};
  const ModelRef ckpt_pb{"pb", "/output/train/1/ckpt.pb", {}};
  for (bool g1 : {false, true}) {
    SCOPED_TRACE(g1 ? "g1" : "g2");
    state = State{};
    job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
    g1_rules = g1;
    initial = initial_pb;
    DispatchTrain();
    job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kReady));
    job.conditions.push_back(TrainCompleted({kTrainedPb, ckpt_pb}));
    job.conditions.push_back(Cond(Stage::kEval, ConditionType::kWaiting));
    job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kCompleted));
    job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
    StatusReport r = DispatchTrain();
    EXPECT_EQ(r.input_models, std::vector<ModelRef>{g1 ? ckpt_pb : kTrainedPb});
  }
}

TEST_F(IlJobTest, SecondRound_G1OneModelReportRetrainsFromIt) {
  g1_rules = true;
  DispatchTrain();
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kReady));
  job.conditions.push_back(TrainCompleted({kTrainedPb}));
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kWaiting));
  job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kCompleted));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  EXPECT_EQ(DispatchTrain().input_models, std::vector<ModelRef>{kTrainedPb});
}

// The train file's dataIndex.txt lists the tokens of the layout the write started with.
TEST_F(IlJobTest, TrainIndexLayoutFollowsTheSpec) {
  dataset_s3 = true;
  for (Layout l : {Layout::k2021, Layout::kV07}) {
    SCOPED_TRACE(LayoutName(l));
    state = State{};
    layout = l;
    auto w = All<WriteSamples>(Ingest(501, 125));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].index_url, "/output/data/train/1/dataIndex.txt");
    EXPECT_EQ(w[0].index_layout, l);
    layout = l == Layout::kV07 ? Layout::k2021 : Layout::kV07;
    EXPECT_EQ(All<WriteSamples>(Run(Resume{})).at(0).index_layout, l) << "kept across a restart";
  }
}

// §P3.3 IL-1s: s3 dataset + s3 outputDir, round 2 — the sample file gets a dataIndex.txt beside it
// and the Ready carries its URL; no `s3:/` collapse ([P:B20]).
TEST_F(IlJobTest, S3DatasetAndOutput_IL1s_WritesAndReportsDataIndex) {
  dataset_s3 = true;
  job.spec.output_dir = "s3://kubeedge/output";
  DispatchTrain();
  const ModelRef ckpt{"ckpt", "s3://kubeedge/output/train/1", {}};
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kReady));
  job.conditions.push_back(
      TrainCompleted({{"pb", "s3://kubeedge/output/train/1/model.pb", {}}, ckpt}));
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kWaiting));
  job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kCompleted));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  Output o = Ingest(501, 125);
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "s3://kubeedge/output/data/train/2/data.txt");
  EXPECT_EQ(w[0].index_url, "s3://kubeedge/output/data/train/2/dataIndex.txt");
  Output f = Run(FileWritten{Work::kWriteTrain, w[0].round, true, ""});
  auto reports = All<SendReport>(f);
  ASSERT_EQ(reports.size(), 1u);
  StatusReport want{ReportPhase::kTrain,
                    ReportStatus::kReady,
                    true,
                    {ckpt},
                    "s3://kubeedge/output/data/train/2/data.txt",
                    "s3://kubeedge/output/data/train/2/dataIndex.txt",
                    "s3://kubeedge/output/train/2"};
  EXPECT_EQ(reports[0].report, want);
}

TEST_F(IlJobTest, S3CsvDataset_NoDataIndex_HostDatasetNoDataIndex) {
  Output o = Ingest(501, 125);  // host-path dataset
  ASSERT_EQ(All<WriteSamples>(o).size(), 1u);
  EXPECT_EQ(All<WriteSamples>(o)[0].index_url, "");
  EXPECT_EQ(DataIndexUrl("s3://b/o/data/train/1/data.csv", true, true), "");
  EXPECT_EQ(DataIndexUrl("/o/data/eval/3/data.txt", true, false), "/o/data/eval/3/dataIndex.txt");
  EXPECT_EQ(DataIndexUrl("/o/data/eval/3/data.txt", false, false), "");
}

TEST_F(IlJobTest, OneModelTrainReport_IsBothCandidateAndBase) {
  DispatchTrain();
  WorkerReport w;
  w.worker_name = "train-worker-1";
  w.kind = "train";
  w.status = "completed";
  w.results = {ModelRef{"pkl", "/output/train/1/model.pkl", {}}};
  Run(WorkerReported{w});
  ASSERT_TRUE(state.trained && state.trained_base);
  EXPECT_EQ(state.trained->url, "/output/train/1/model.pkl");
  EXPECT_EQ(state.trained_base->url, "/output/train/1/model.pkl");
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));  // e.g. the GM lost it
  StatusReport r = DispatchTrain();
  EXPECT_EQ(r.input_models[0].url, "/output/train/1/model.pkl");
}

TEST_F(IlJobTest, B5_FailedFirstRoundFallsBackToInitialModel) {
  DispatchTrain();
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kReady));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kFailed));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  StatusReport r = DispatchTrain();
  EXPECT_EQ(r.input_models, std::vector<ModelRef>{kInitial}) << "round 2 still trains";
  EXPECT_EQ(r.data_url, "/output/data/train/2/data.txt") << "round numbers only grow";
}

// ---- (Eval, Waiting) rows --------------------------------------------------------------------

class IlEvalTest : public IlJobTest {
 protected:
  void SetUp() override {
    DispatchTrain();
    job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kReady));
    job.conditions.push_back(TrainCompleted({kTrainedPb, kTrainedCkpt}));
    job.conditions.push_back(Cond(Stage::kEval, ConditionType::kWaiting));
  }
  StatusReport DispatchEval() {
    Output o = Run(JobChanged{});
    auto w = All<WriteSamples>(o);
    EXPECT_EQ(w.size(), 1u);
    Output f = Run(FileWritten{Work::kWriteEval, w.at(0).round, true, ""});
    auto r = All<SendReport>(f);
    EXPECT_EQ(r.size(), 1u);
    return r.at(0).report;
  }
  WorkerReport EvalReport(std::vector<double> new_p, std::vector<double> old_p) {
    WorkerReport w;
    w.worker_name = "eval-worker-2bq7d";
    w.kind = "eval";
    w.status = "completed";
    w.results = {ModelRef{"pb", kTrainedPb.url, {{"precision", MetricValue::List(new_p)}}},
                 ModelRef{"pb", kDeploy.url, {{"precision", MetricValue::List(old_p)}}}};
    return w;
  }
};

TEST_F(IlEvalTest, EvalWaiting_WritesEvalFileUnderIncrementedRound) {
  Output o = Run(JobChanged{});
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].stage, Stage::kEval);
  EXPECT_EQ(w[0].url, "/output/data/eval/2/data.txt");
  EXPECT_EQ(w[0].spool, SpoolKind::kEval);
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 1250, 125})});
}

TEST_F(IlEvalTest, EvalWaiting_FileWritten_SendsIL3WithTrainedAndDeployed) {
  StatusReport r = DispatchEval();
  StatusReport want{ReportPhase::kEval,
                    ReportStatus::kReady,
                    true,
                    {kTrainedPb, kDeploy},
                    "/output/data/eval/2/data.txt"};
  EXPECT_EQ(r, want);
  EXPECT_TRUE(state.eval_outstanding);
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty()) << "answered once";
}

// The eval directory per generation (docs/design-notes.md, "Both GM generations"): the 2021 LC
// numbers it train round + 1, the v0.7 LC the train round; both the file and the Eval Ready.
TEST_F(IlEvalTest, EvalDirPerLayout_G1TrainRoundPlusOne_G2TrainRound) {
  struct Row {
    Layout layout;
    const char* want;
  };
  const State after_train = state;
  for (const Row& r : {Row{Layout::k2021, "/output/data/eval/2/data.txt"},
                       Row{Layout::kV07, "/output/data/eval/1/data.txt"}}) {
    SCOPED_TRACE(LayoutName(r.layout));
    state = after_train;
    layout = r.layout;
    Output o = Run(JobChanged{});
    auto w = All<WriteSamples>(o);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].url, r.want);
    EXPECT_EQ(w[0].index_layout, r.layout);
    Output f = Run(FileWritten{Work::kWriteEval, w[0].round, true, ""});
    auto rep = All<SendReport>(f);
    ASSERT_EQ(rep.size(), 1u);
    EXPECT_EQ(rep[0].report.data_url, r.want);
    EXPECT_EQ(state.eval_round, 2) << "the round bookkeeping does not depend on the layout";
  }
}

// A write in flight keeps the layout it started with when the generation becomes known (or
// changes) before it is re-issued after a restart: the round never changes its directory.
TEST_F(IlEvalTest, ResumeKeepsTheLayoutTheWriteStartedWith) {
  const State after_train = state;
  for (Layout first : {Layout::kV07, Layout::k2021}) {
    SCOPED_TRACE(LayoutName(first));
    state = after_train;
    layout = first;
    const std::string want = EvalDataUrl("/output", EvalDirRound(2, first), false);
    ASSERT_EQ(All<WriteSamples>(Run(JobChanged{})).at(0).url, want);
    layout = first == Layout::kV07 ? Layout::k2021 : Layout::kV07;  // e.g. G1 evidence came in
    auto w = All<WriteSamples>(Run(Resume{}));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].url, want);
    EXPECT_EQ(w[0].index_layout, first);
    auto rep = All<SendReport>(Run(FileWritten{Work::kWriteEval, 2, true, ""}));
    ASSERT_EQ(rep.size(), 1u);
    EXPECT_EQ(rep[0].report.data_url, want);
  }
}

// ---- refused reports ([D:I15]) ------------------------------------------------------------

TEST_F(IlEvalTest, ScopeOfReport_TrainIsTheRoundsOutputDir_EvalIsExactlyTheModelsSent) {
  ReportScope train = ScopeOfReport(MakeSpec(), state, "Train");
  EXPECT_TRUE(train.awaited);
  EXPECT_EQ(train.dirs, std::vector<std::string>{"/output/train/1"});
  EXPECT_TRUE(train.exact.empty());
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "eval").awaited) << "no eval dispatched yet";
  DispatchEval();
  ReportScope eval = ScopeOfReport(MakeSpec(), state, "eval");
  EXPECT_TRUE(eval.awaited);
  EXPECT_TRUE(eval.dirs.empty());
  EXPECT_EQ(eval.exact, (std::vector<std::string>{kTrainedPb.url, kDeploy.url}));
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "inference").awaited);
}

TEST_F(IlJobTest, ScopeOfReport_NoTrainBeforeTheFirstTrainReady) {
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "train").awaited);
}

TEST_F(IlEvalTest, DeployWaitingWithNoValidEvalReport_AnsweredNotDeployedOnce) {
  DispatchEval();
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kReady));
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kCompleted));
  job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kWaiting));
  auto r = All<SendReport>(Run(JobChanged{}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report, (StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted}));
  EXPECT_EQ(state.answered_deploy_waiting, static_cast<int64_t>(job.conditions.size()) - 1);
  EXPECT_TRUE(All<SendReport>(Run(JobChanged{})).empty()) << "a re-send is not answered again";
}

TEST_F(IlEvalTest, B6_NoTrainOutputInConditions_UsesRecordedTrainReport) {
  job.conditions[2].data = {};  // the condition lost its output (e.g. race [P:R1])
  WorkerReport t;
  t.worker_name = "train-worker-1";
  t.kind = "TRAIN";  // case-insensitive
  t.status = "completed";
  t.results = {kTrainedPb, kTrainedCkpt};
  Output o = Run(WorkerReported{t});  // the report unblocks the pending (Eval,Waiting) at once
  ASSERT_EQ(All<WriteSamples>(o).size(), 1u);
  auto r = All<SendReport>(Run(FileWritten{Work::kWriteEval, 2, true, ""}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report.input_models[0], kTrainedPb);
}

TEST_F(IlEvalTest, B6_NoTrainedModelAtAll_ReportsEvalFailedInsteadOfNull) {
  job.conditions[2].data = {};
  Output o = Run(JobChanged{});
  auto r = All<SendReport>(o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report, (StatusReport{ReportPhase::kEval, ReportStatus::kFailed}));
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty()) << "answered once";
}

TEST_F(IlEvalTest, EvalWaiting_DeployModelUnknown_Waits) {
  Spec s = MakeSpec();
  s.deploy_model = nullptr;
  Output o = Step(s, state, JobChanged{}, now);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_TRUE(All<SendReport>(o).empty());
  EXPECT_EQ(o.state.answered_eval_waiting, -1);
}

TEST_F(IlEvalTest, B10_ResultWithoutUrl_RejectedStateUnchanged) {
  DispatchEval();
  WorkerReport w = EvalReport({0.9}, {0.5});
  w.results_error = "results[0].url: missing";
  State before = state;
  Output o = Run(WorkerReported{w});
  EXPECT_TRUE(All<SendReport>(o).empty());
  EXPECT_TRUE(All<CopyModel>(o).empty());
  ASSERT_EQ(All<Log>(o).size(), 1u);
  EXPECT_NE(All<Log>(o)[0].text.find("results[0].url"), std::string::npos);
  EXPECT_EQ(state, before);
}

TEST_F(IlEvalTest, B7_FirstObservationInEvalWaiting_FreshStateNoCrash) {
  state = State{};
  job.conditions = {Cond(Stage::kEval, ConditionType::kWaiting)};
  Output o = Run(JobChanged{});
  auto r = All<SendReport>(o);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].report.status, ReportStatus::kFailed);
}

TEST_F(IlEvalTest, Resume_ReissuesInFlightWork) {
  Run(JobChanged{});
  ASSERT_EQ(state.work, Work::kWriteEval);
  Output o = Run(Resume{});
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/eval/2/data.txt");
  Output f = Run(FileWritten{Work::kWriteEval, 2, true, ""});
  EXPECT_EQ(All<SendReport>(f).size(), 1u);
  Output stale = Run(FileWritten{Work::kWriteEval, 2, true, ""});
  EXPECT_TRUE(All<SendReport>(stale).empty()) << "a duplicate completion is ignored";
}

// ---- eval windows -----------------------------------------------------------------------------

TEST_F(IlJobTest, B2_EvalSetIsLastFiveWindowsEachSampleOnce) {
  for (int round = 1; round <= 7; ++round) {
    job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
    DispatchTrain(501, 10 * round);
  }
  ASSERT_EQ(state.eval_windows.size(), 5u);
  int64_t expect_begin = 0;
  for (int r = 1; r <= 2; ++r) expect_begin += 10 * 10 * r;  // rounds 1-2 dropped
  EXPECT_EQ(state.eval_windows.front().begin, expect_begin);
  for (size_t i = 1; i < state.eval_windows.size(); ++i) {
    EXPECT_EQ(state.eval_windows[i].begin, state.eval_windows[i - 1].end) << "no overlap, no gap";
  }
  int64_t total = 0;
  for (const auto& w : state.eval_windows) total += w.count;
  EXPECT_EQ(total, 30 + 40 + 50 + 60 + 70);
}

TEST_F(IlJobTest, WorkerReport_UnknownKind_ForwardOnly) {
  WorkerReport w;
  w.kind = "inference";
  w.status = "completed";
  State before = state;
  Output o = Run(WorkerReported{w});
  EXPECT_EQ(state, before);
  EXPECT_EQ(All<Log>(o).size(), 1u);
}

TEST(IlLayoutTest, OutputRootTrimsTrailingSlashes) {
  EXPECT_EQ(OutputRoot("/output///"), "/output");
  EXPECT_EQ(OutputRoot("/"), "/");
  EXPECT_EQ(TrainDataUrl("/output", 3, false), "/output/data/train/3/data.txt");
  EXPECT_EQ(EvalDataUrl("/output", 4, true), "/output/data/eval/4/data.csv");
  EXPECT_EQ(TrainOutputDir("/output", 3), "/output/train/3");
}

}  // namespace
}  // namespace sedna::core::il

namespace sedna::core::il {
namespace {

// One row per (stage, condition type of the latest condition, event): what the LC does. The
// LC acts only on a Waiting it has not answered: (Train,Waiting) with the trigger met writes the
// train file; (Eval,Waiting) writes the eval file; (Deploy,Waiting) is decided; every other
// (stage, type) leaves a cold job alone whatever the event (the GM drives those; §P4.2, §P8.2).
struct TableRow {
  const char* name;
  Stage stage;
  ConditionType type;
  int event;  // 0 JobChanged, 1 Tick, 2 SamplesIngested (trigger met), 3 SamplesIngested (not met)
  const char* expect;  // "train-file", "eval-file", "none"
};

class IlConditionTable : public ::testing::TestWithParam<TableRow> {};

TEST_P(IlConditionTable, Row) {
  const TableRow& row = GetParam();
  IlJob job;
  job.meta = {"j", "default", "", {}};
  job.spec.train_prob = 0.8;
  job.spec.output_dir = "/output";
  job.spec.initial_model_name = "init";
  job.spec.deploy_model_name = "deploy";
  // A completed first train, so an eval has a trained model; then the row's condition.
  JobCondition done;
  done.stage = Stage::kTrain;
  done.type = ConditionType::kCompleted;
  done.data.has_output = true;
  done.data.output_models = {{"pb", "/output/train/1/m.pb", {}}};
  JobCondition last;
  last.stage = row.stage;
  last.type = row.type;
  job.conditions = {done, last};
  auto train = CompileTrigger(TriggerSpec{std::nullopt, std::nullopt, ">", 10, "num_of_samples"});
  auto deploy = CompileTrigger(TriggerSpec{std::nullopt, std::nullopt, ">", 0.1, "p"});
  ASSERT_TRUE(train.ok() && deploy.ok());
  Spec spec;
  spec.job = &job;
  spec.train_trigger = &*train;
  spec.deploy_trigger = &*deploy;
  const ModelRef initial_model{"ckpt", "/models/init", {}};
  const ModelRef deploy_model{"pb", "/models/deploy.pb", {}};
  spec.initial_model = &initial_model;
  spec.deploy_model = &deploy_model;
  spec.dataset_known = true;
  State state;
  state.round = 2;
  state.eval_windows = {{0, 100, 10}};
  if (row.event != 3) state.train_pending = {0, 200, 20};  // trigger met unless the row says not
  Event ev = core::il::JobChanged{};
  if (row.event == 1) ev = Tick{};
  if (row.event == 2) ev = SamplesIngested{20, 0, 200, 0, 100};
  if (row.event == 3) ev = SamplesIngested{5, 5, 50, 0, 100};
  Output o = Step(spec, state, ev, Now{1000, 600, "t"});
  std::string got = "none";
  for (const auto& a : o.actions) {
    if (auto* w = std::get_if<WriteSamples>(&a))
      got = w->stage == Stage::kTrain ? "train-file" : "eval-file";
    if (std::holds_alternative<SendReport>(a) || std::holds_alternative<CopyModel>(a))
      got = "other";
  }
  EXPECT_EQ(got, row.expect);
}

std::vector<TableRow> Rows() {
  std::vector<TableRow> rows;
  static std::vector<std::string> names;
  names.reserve(200);
  const char* ev_names[] = {"JobChanged", "Tick", "SamplesTriggerMet", "SamplesTriggerNotMet"};
  for (Stage st : {Stage::kTrain, Stage::kEval, Stage::kDeploy}) {
    for (ConditionType t :
         {ConditionType::kWaiting, ConditionType::kReady, ConditionType::kStarting,
          ConditionType::kRunning, ConditionType::kCompleted, ConditionType::kFailed}) {
      for (int ev = 0; ev < 4; ++ev) {
        const char* expect = "none";
        if (st == Stage::kTrain && t == ConditionType::kWaiting && ev != 3) expect = "train-file";
        if (st == Stage::kEval && t == ConditionType::kWaiting) expect = "eval-file";
        // A (Deploy, Waiting) this LC has no eval record of is decided from the conditions
        // alone: no eval output there -> Deploy Completed (docs/protocol.md §H3.2).
        if (st == Stage::kDeploy && t == ConditionType::kWaiting) expect = "other";
        names.push_back(std::string(StageName(st)) + ConditionTypeName(t) + "_" + ev_names[ev]);
        rows.push_back({names.back().c_str(), st, t, ev, expect});
      }
    }
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(StageConditionEvent, IlConditionTable, ::testing::ValuesIn(Rows()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sedna::core::il
