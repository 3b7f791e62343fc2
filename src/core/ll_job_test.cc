// Table-driven tests of the condition-driven LL job (docs/protocol.md §H1.7, §H3.2, §H3.3) with
// the docs/protocol.md §P8.5 LL items kept. The fixture plays the GM: it appends conditions as
// the GM's state machine does and delivers the job to the LC in the shape of a G1 GM (every
// update) or a G2 GM (only Waiting and Running; on the dataset node of a multi-node job only
// Waiting).
#include "core/ll_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <ostream>

namespace sedna::core::ll {
namespace {

using CT = ConditionType;

Trigger MustCompile(TriggerSpec s) {
  auto t = CompileTrigger(s);
  EXPECT_TRUE(t.ok()) << t.message();
  return t.ok() ? *t : Trigger{};
}

WorkerReport Worker(std::string kind, std::string status, std::vector<ModelRef> results) {
  WorkerReport w;
  w.worker_name = kind + "-worker-p0x1c";
  w.ns = "default";
  w.owner_name = "atcii-classifier-demo";
  w.owner_kind = "lifelonglearningjob";
  w.kind = std::move(kind);
  w.status = std::move(status);
  w.results = std::move(results);
  return w;
}

void ExpectReport(const StatusReport& got, const StatusReport& want) {
  EXPECT_EQ(got.phase, want.phase);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.has_input, want.has_input);
  EXPECT_EQ(got.input_models, want.input_models);
  EXPECT_EQ(got.data_url, want.data_url);
  EXPECT_EQ(got.data_index_url, want.data_index_url);
  EXPECT_EQ(got.output_dir, want.output_dir);
}

ModelRef Pkl(const std::string& url) { return ModelRef{"pkl", url, {}, {}}; }
ModelRef TrainModel(int64_t v) { return Pkl("/output/train/" + std::to_string(v) + "/index.pkl"); }
ModelRef EvalModel(int64_t v) { return Pkl("/output/eval/" + std::to_string(v) + "/index.pkl"); }

StatusReport Ll1(int64_t v) {
  const std::string s = std::to_string(v);
  return {ReportPhase::kTrain,
          ReportStatus::kReady,
          true,
          {},
          "/output/data/train/" + s + "/data.csv",
          "",
          "/output/train/" + s};
}
StatusReport Ll3(int64_t v, std::vector<ModelRef> models) {
  const std::string s = std::to_string(v);
  return {ReportPhase::kEval,
          ReportStatus::kReady,
          true,
          std::move(models),
          "/output/data/eval/" + s + "/data.csv",
          "",
          "/output/eval/" + s};
}
StatusReport Ll5(const ModelRef& m) {
  return {ReportPhase::kDeploy, ReportStatus::kReady, true, {m}};
}
const StatusReport kEvalFailed{ReportPhase::kEval, ReportStatus::kFailed};
const StatusReport kDeployFailed{ReportPhase::kDeploy, ReportStatus::kFailed};
const StatusReport kDeployCompleted{ReportPhase::kDeploy, ReportStatus::kCompleted};

// How the GM delivers the job to this LC.
enum class Shape {
  kG1,            // every update (44609f00: to the train-spec node)
  kG2,            // Waiting to the dataset node, Running to the stage's node (here too)
  kG2DatasetOnly  // multi-node: this LC is on the dataset node only; Running goes elsewhere
};

const char* ShapeName(Shape s) {
  switch (s) {
    case Shape::kG1:
      return "G1";
    case Shape::kG2:
      return "G2";
    case Shape::kG2DatasetOnly:
      return "G2DatasetOnly";
  }
  return "?";
}

// One report the LC sent, with the job's latest condition when it was produced.
struct Sent {
  StatusReport report;
  int64_t latest_index = -1;
  Stage latest_stage = Stage::kTrain;
  ConditionType latest_type = CT::kWaiting;
};

class LlJobTest : public ::testing::Test {
 protected:
  LlJobTest() {
    job.meta.name = "atcii-classifier-demo";
    job.meta.ns = "default";
    job.spec.dataset_name = "lifelong-dataset";
    job.spec.train_prob = 0.8;
    job.spec.output_dir = "/output/";
    TriggerSpec ts;
    ts.op = ">";
    ts.threshold = 500;
    ts.metric = "num_of_samples";
    train = MustCompile(ts);
    now.unix_ms = 1'000'000;
    now.minute_of_day = 600;
    now.rfc3339 = "2026-11-29T10:00:00Z";
  }

  Spec MakeSpec() {
    Spec s;
    s.job = &job;
    s.train_trigger = &train;
    s.dataset_known = dataset_known;
    s.csv = csv;
    s.dataset_s3 = dataset_s3;
    s.job_received_ms = received_ms;
    return s;
  }

  Output Run(const Event& e) {
    Output o = Step(MakeSpec(), state, e, now);
    state = o.state;
    for (const auto& a : o.actions) {
      if (auto* r = std::get_if<SendReport>(&a)) {
        Sent s{r->report, static_cast<int64_t>(job.conditions.size()) - 1};
        if (!job.conditions.empty()) {
          s.latest_stage = job.conditions.back().stage;
          s.latest_type = job.conditions.back().type;
        }
        sent.push_back(s);
      }
    }
    return o;
  }

  // ---- the GM

  int64_t Latest() const { return static_cast<int64_t>(job.conditions.size()) - 1; }

  bool Delivers(ConditionType t) const {
    switch (shape) {
      case Shape::kG1:
        return true;
      case Shape::kG2:
        return t == CT::kWaiting || t == CT::kRunning;
      case Shape::kG2DatasetOnly:
        return t == CT::kWaiting;
    }
    return true;
  }

  // The GM sends the job as it is now.
  Output Deliver() {
    received_ms = now.unix_ms;
    return Run(JobChanged{});
  }

  // The GM appends a condition and, if its shape sends this one, delivers the job; returns the
  // LC's step on it (empty when not delivered).
  Output Gm(Stage stage, ConditionType type, ConditionData data = {}) {
    JobCondition c;
    c.stage = stage;
    c.type = type;
    c.data = std::move(data);
    job.conditions.push_back(std::move(c));
    return Delivers(type) ? Deliver() : Output{state, {}};
  }

  static ConditionData Output_(std::vector<ModelRef> models) {
    ConditionData d;
    d.has_output = true;
    d.output_models = std::move(models);
    return d;
  }

  // The GM's upstream handler stores an LC report as a condition (§P4.1).
  Output GmEcho(const StatusReport& r) {
    ConditionData d;
    d.input_models = r.input_models;
    d.data_url = r.data_url;
    d.output_dir = r.output_dir;
    const Stage stage = r.phase == ReportPhase::kTrain  ? Stage::kTrain
                        : r.phase == ReportPhase::kEval ? Stage::kEval
                                                        : Stage::kDeploy;
    const ConditionType type = r.status == ReportStatus::kReady       ? CT::kReady
                               : r.status == ReportStatus::kCompleted ? CT::kCompleted
                                                                      : CT::kFailed;
    return Gm(stage, type, std::move(d));
  }

  // New samples; the spools grow by 10 bytes per sample.
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

  static size_t Logs(const Output& o, Log::Level level) {
    size_t n = 0;
    for (const auto& l : All<Log>(o)) n += l.level == level ? 1 : 0;
    return n;
  }

  static std::vector<StatusReport> Reports(const Output& o) {
    std::vector<StatusReport> v;
    for (const auto& r : All<SendReport>(o)) v.push_back(r.report);
    return v;
  }

  static StatusReport OneReport(const Output& o) {
    auto r = Reports(o);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? StatusReport{} : r[0];
  }

  // ---- one round, step by step (version v, conditions as the GM appends them)

  // (Train, Waiting) delivered, 501 train samples -> the train file of v is written -> LL-1.
  void ToTrainReady(int64_t v) {
    if (job.conditions.empty() || job.conditions.back().stage != Stage::kTrain ||
        job.conditions.back().type != CT::kWaiting) {
      Gm(Stage::kTrain, CT::kWaiting);
    }
    auto w = All<WriteSamples>(Ingest(501, 125));
    ASSERT_EQ(w.size(), 1u) << "train file of version " << v;
    ASSERT_EQ(w[0].round, v);
    ExpectReport(OneReport(Run(FileWritten{Work::kWriteTrain, v, true, ""})), Ll1(v));
  }

  // The GM creates the train pod; it runs and (if `report_here`) reports to this LC; the GM
  // appends (Train, Completed) (with the output unless `erased`) and (Eval, Waiting).
  Output TrainRuns(int64_t v, bool report_here = true, bool erased = false) {
    GmEcho(Ll1(v));
    Gm(Stage::kTrain, CT::kStarting);
    Gm(Stage::kTrain, CT::kRunning);
    if (report_here) {
      Output o = Run(WorkerReported{Worker("train", "completed", {TrainModel(v)})});
      EXPECT_TRUE(All<SendReport>(o).empty()) << "a worker report never sends a ready";
      EXPECT_TRUE(All<WriteSamples>(o).empty()) << "the eval waits for (Eval, Waiting)";
    }
    Gm(Stage::kTrain, CT::kCompleted, erased ? ConditionData{} : Output_({TrainModel(v)}));
    return Gm(Stage::kEval, CT::kWaiting);
  }

  // (Eval, Waiting) was delivered and the eval file of v is being written -> LL-3.
  void ToEvalReady(int64_t v, std::vector<ModelRef> models) {
    ASSERT_EQ(state.work, Work::kWriteEval);
    ExpectReport(OneReport(Run(FileWritten{Work::kWriteEval, v, true, ""})), Ll3(v, models));
  }

  // The eval pod runs, reports (if `report_here`), the GM appends (Eval, Completed) (with the
  // output unless `erased`) and (Deploy, Waiting).
  Output EvalRuns(int64_t v, bool report_here = true, bool erased = false) {
    GmEcho(Ll3(v, {TrainModel(v)}));
    Gm(Stage::kEval, CT::kStarting);
    Gm(Stage::kEval, CT::kRunning);
    if (report_here) {
      Output o = Run(WorkerReported{Worker("eval", "completed", {EvalModel(v)})});
      EXPECT_TRUE(All<SendReport>(o).empty()) << "a worker report never sends a ready";
      EXPECT_TRUE(All<CopyModel>(o).empty()) << "the deploy waits for (Deploy, Waiting)";
    }
    Gm(Stage::kEval, CT::kCompleted, erased ? ConditionData{} : Output_({EvalModel(v)}));
    return Gm(Stage::kDeploy, CT::kWaiting);
  }

  // The GM's reaction to a deploy report, ending at (Train, Waiting).
  void GmAfterDeploy(const StatusReport& r) {
    GmEcho(r);
    if (r.status == ReportStatus::kReady) {
      if (shape == Shape::kG1) Gm(Stage::kDeploy, CT::kStarting);
      Gm(Stage::kDeploy, CT::kCompleted);
    }
    Gm(Stage::kTrain, CT::kWaiting);
  }

  // A whole round of version v from the trigger to a deploy; returns the eval file write.
  WriteSamples FullRound(int64_t v, int64_t eval_n) {
    if (job.conditions.empty() || job.conditions.back().type != CT::kWaiting) {
      Gm(Stage::kTrain, CT::kWaiting);
    }
    Ingest(501, eval_n);
    Run(FileWritten{Work::kWriteTrain, v, true, ""});
    auto w = All<WriteSamples>(TrainRuns(v));
    EXPECT_EQ(w.size(), 1u);
    Run(FileWritten{Work::kWriteEval, v, true, ""});
    auto c = All<CopyModel>(EvalRuns(v));
    EXPECT_EQ(c.size(), 1u);
    StatusReport r = OneReport(Run(ModelCopied{true, ""}));
    GmAfterDeploy(r);
    return w.empty() ? WriteSamples{} : w[0];
  }

  LlJob job;
  Trigger train;
  bool csv = true;  // the ATCII dataset is csv
  bool dataset_s3 = false;
  bool dataset_known = true;
  int64_t received_ms = 0;
  Shape shape = Shape::kG2;
  State state;
  Now now;
  std::vector<Sent> sent;
};

// ---- whole rounds in each GM shape --------------------------------------------------------

class LlShapeTest : public LlJobTest, public ::testing::WithParamInterface<Shape> {};

// Every report answers the Waiting that is the latest condition, once; a worker report never
// produces one; two rounds, the second numbered 2 everywhere.
TEST_P(LlShapeTest, TwoRounds_EveryAnswerFollowsItsWaiting) {
  shape = GetParam();
  const bool running_here = shape != Shape::kG2DatasetOnly;
  for (int64_t v = 1; v <= 2; ++v) {
    ToTrainReady(v);
    Output eval = TrainRuns(v, running_here);
    auto w = All<WriteSamples>(eval);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].url, "/output/data/eval/" + std::to_string(v) + "/data.csv");
    ToEvalReady(v, {TrainModel(v)});
    auto c = All<CopyModel>(EvalRuns(v, running_here));
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].src_url, EvalModel(v).url);
    EXPECT_EQ(c[0].dst_url, "/output/deploy/index.pkl");
    StatusReport r = OneReport(Run(ModelCopied{true, ""}));
    ExpectReport(r, Ll5(EvalModel(v)));
    // Status shows "train/none": the round is answered, the next step is a train.
    EXPECT_EQ(state.phase, Phase::kTrain);
    EXPECT_EQ(state.work, Work::kNone);
    GmAfterDeploy(r);
  }
  ASSERT_EQ(sent.size(), 6u);
  const Stage stages[] = {Stage::kTrain, Stage::kEval, Stage::kDeploy};
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(sent[i].latest_type, CT::kWaiting) << "report " << i;
    EXPECT_EQ(sent[i].latest_stage, stages[i % 3]) << "report " << i;
  }
  EXPECT_EQ(state.version, 2);
  EXPECT_EQ(state.deploy_count, 2);
  ASSERT_EQ(state.deployments.size(), 2u);
  EXPECT_EQ(state.deployments[1], (Deployment{2, EvalModel(2).url, "2026-11-29T10:00:00Z"}));
  EXPECT_EQ(state.train_pending.count, 0);
  // The GM re-sends the job (resync): nothing more.
  EXPECT_TRUE(Deliver().actions.empty());
}

INSTANTIATE_TEST_SUITE_P(Shapes, LlShapeTest,
                         ::testing::Values(Shape::kG1, Shape::kG2, Shape::kG2DatasetOnly),
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return std::string(ShapeName(i.param));
                         });

// ---- answers: one row per (Waiting, what the round's conditions and this LC know) ----------

enum class Where { kEvalWaiting, kDeployWaiting };

struct AnswerRow {
  const char* name;
  Where where;
  bool report_here;         // the stage's worker reported to this LC
  bool output_erased;       // the stage's Completed condition has no output (§H2.0 pod write)
  bool older_round_output;  // an older round's Completed with output precedes this round
  StatusReport want;        // the answer (Eval ready / Deploy ready are sent after the work)
  size_t writes, copies;    // work issued on the Waiting
};

void PrintTo(const AnswerRow& r, std::ostream* os) { *os << r.name; }

class LlAnswerTable : public LlJobTest, public ::testing::WithParamInterface<AnswerRow> {};

TEST_P(LlAnswerTable, Row) {
  const AnswerRow& row = GetParam();
  if (row.older_round_output) {
    FullRound(1, 10);
    ASSERT_EQ(job.conditions.back().type, CT::kWaiting);
  }
  const int64_t v = state.version + 1;
  ToTrainReady(v);
  Output o;
  if (row.where == Where::kEvalWaiting) {
    o = TrainRuns(v, row.report_here, row.output_erased);
  } else {
    Output e = TrainRuns(v);
    ASSERT_EQ(All<WriteSamples>(e).size(), 1u);
    ToEvalReady(v, {TrainModel(v)});
    o = EvalRuns(v, row.report_here, row.output_erased);
  }
  EXPECT_EQ(All<WriteSamples>(o).size(), row.writes);
  EXPECT_EQ(All<CopyModel>(o).size(), row.copies);
  std::vector<StatusReport> got = Reports(o);
  if (row.writes == 1) {
    EXPECT_TRUE(got.empty());
    got = Reports(Run(FileWritten{Work::kWriteEval, v, true, ""}));
  } else if (row.copies == 1) {
    EXPECT_TRUE(got.empty());
    got = Reports(Run(ModelCopied{true, ""}));
  }
  ASSERT_EQ(got.size(), 1u);
  StatusReport want = row.want;
  // Rows name version 1; with an older round first this round is version 2.
  if (v == 2) {
    for (auto* s : {&want.data_url, &want.output_dir}) {
      if (auto p = s->rfind("/1"); p != std::string::npos) s->replace(p, 2, "/2");
    }
    for (auto& m : want.input_models) m.url.replace(m.url.rfind("/1/"), 3, "/2/");
  }
  ExpectReport(got[0], want);
  EXPECT_TRUE(got[0].has_input || got[0].status != ReportStatus::kReady) << "never a null content";
  // Answered once: the GM re-sends the same Waiting.
  EXPECT_TRUE(Reports(Deliver()).empty());
  EXPECT_EQ(state.work, Work::kNone);
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(Answers, LlAnswerTable, ::testing::Values(
  AnswerRow{"Eval_FromConditions", Where::kEvalWaiting, true, false, false,
            Ll3(1, {TrainModel(1)}), 1, 0},
  AnswerRow{"Eval_OtherNodeTrained_FromConditions", Where::kEvalWaiting, false, false, false,
            Ll3(1, {TrainModel(1)}), 1, 0},
  AnswerRow{"Eval_OutputErased_FromOwnRecord", Where::kEvalWaiting, true, true, false,
            Ll3(1, {TrainModel(1)}), 1, 0},
  AnswerRow{"Eval_OutputErased_NoRecord_EvalFailed", Where::kEvalWaiting, false, true, false,
            kEvalFailed, 0, 0},
  AnswerRow{"Eval_OlderRoundOutputNotUsed_EvalFailed", Where::kEvalWaiting, false, true, true,
            kEvalFailed, 0, 0},
  AnswerRow{"Deploy_FromConditions", Where::kDeployWaiting, true, false, false,
            Ll5(EvalModel(1)), 0, 1},
  AnswerRow{"Deploy_OtherNodeEvaluated_FromConditions", Where::kDeployWaiting, false, false, false,
            Ll5(EvalModel(1)), 0, 1},
  AnswerRow{"Deploy_OutputErased_FromOwnRecord", Where::kDeployWaiting, true, true, false,
            Ll5(EvalModel(1)), 0, 1},
  AnswerRow{"Deploy_NoEvalOutput_DeployCompleted", Where::kDeployWaiting, false, true, false,
            kDeployCompleted, 0, 0},
  AnswerRow{"Deploy_OlderRoundOutputNotUsed_DeployCompleted", Where::kDeployWaiting, false, true,
            true, kDeployCompleted, 0, 0}),
  [](const ::testing::TestParamInfo<AnswerRow>& i) { return std::string(i.param.name); });
// clang-format on

TEST_F(LlJobTest, Eval_AllOutputModelsOfTheRound) {
  ToTrainReady(1);
  GmEcho(Ll1(1));
  Gm(Stage::kTrain, CT::kRunning);
  ModelRef with_metrics = TrainModel(1);
  with_metrics.metrics["summer_2"] = MetricValue::Other();
  const ModelRef second = Pkl("/output/train/1/index2.pkl");
  Gm(Stage::kTrain, CT::kCompleted, Output_({with_metrics, second}));
  Gm(Stage::kEval, CT::kWaiting);
  // v0.7.0 evaluates every output model; metrics are not carried into the ready.
  ToEvalReady(1, {TrainModel(1), second});
}

TEST_F(LlJobTest, Deploy_UsesFirstEvalOutputModel) {
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  GmEcho(Ll3(1, {TrainModel(1)}));
  Gm(Stage::kEval, CT::kCompleted, Output_({EvalModel(1), Pkl("/output/eval/1/other.pkl")}));
  auto c = All<CopyModel>(Gm(Stage::kDeploy, CT::kWaiting));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, EvalModel(1).url);
}

TEST_F(LlJobTest, DeployCopyFails_DeployFailed_NextRoundRuns) {
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  ASSERT_EQ(All<CopyModel>(EvalRuns(1)).size(), 1u);
  Output o = Run(ModelCopied{false, "Permission denied"});
  ExpectReport(OneReport(o), kDeployFailed);
  EXPECT_EQ(Logs(o, Log::Level::kError), 1u);
  EXPECT_EQ(state.last_error, "Permission denied");
  EXPECT_TRUE(state.deployments.empty());
  EXPECT_EQ(state.deploy_count, 1);
  // The GM: (Deploy, Failed) -> (Train, Waiting); the next round is version 2.
  GmAfterDeploy(kDeployFailed);
  ToTrainReady(2);
}

// Only (Deploy, Waiting) is answered in the Deploy stage.
TEST_F(LlJobTest, DeployStageOtherThanWaiting_NeverAnswered) {
  shape = Shape::kG1;
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  GmEcho(Ll3(1, {TrainModel(1)}));
  Gm(Stage::kEval, CT::kCompleted, Output_({EvalModel(1)}));
  for (CT t : {CT::kReady, CT::kStarting, CT::kRunning, CT::kCompleted, CT::kFailed}) {
    Output o = Gm(Stage::kDeploy, t);
    EXPECT_TRUE(o.actions.empty()) << ConditionTypeName(t);
  }
}

// ---- worker reports: recorded only -----------------------------------------------------------

struct ReportRow {
  const char* name;
  int at;  // 0: train ready sent; 1: eval ready sent; 2: idle at (Train, Waiting), nothing sent
  std::string kind;
  std::string status;
  std::vector<ModelRef> results;
  bool unchanged;  // the state equals the state before
  size_t warns;
};

void PrintTo(const ReportRow& r, std::ostream* os) { *os << r.name; }

class LlReportTable : public LlJobTest, public ::testing::WithParamInterface<ReportRow> {};

TEST_P(LlReportTable, Row) {
  const ReportRow& row = GetParam();
  if (row.at == 2) {
    Gm(Stage::kTrain, CT::kWaiting);
    Ingest(400, 10);
  } else {
    ToTrainReady(1);
    if (row.at == 1) {
      TrainRuns(1, false);
      ToEvalReady(1, {TrainModel(1)});
    }
  }
  const State before = state;
  Output o = Run(WorkerReported{Worker(row.kind, row.status, row.results)});
  if (row.unchanged) {
    EXPECT_EQ(state, before);
  }
  EXPECT_TRUE(All<SendReport>(o).empty()) << "a worker report never produces a report";
  EXPECT_TRUE(All<WriteSamples>(o).empty() || row.status == "failed");
  EXPECT_TRUE(All<CopyModel>(o).empty());
  EXPECT_EQ(Logs(o, Log::Level::kWarn), row.warns);
}

const ModelRef kOther = Pkl("/output/x/index.pkl");

// clang-format off
INSTANTIATE_TEST_SUITE_P(WorkerReports, LlReportTable, ::testing::Values(
  ReportRow{"TrainOpen_TrainCompleted_Recorded", 0, "train", "completed", {TrainModel(1)}, false, 0},
  ReportRow{"TrainOpen_TrainRunning_NoChange", 0, "train", "running", {}, true, 0},
  ReportRow{"TrainOpen_EvalCompleted_ForwardedOnly", 0, "eval", "completed", {EvalModel(1)}, true,
            1},
  ReportRow{"TrainOpen_UnknownKind_ForwardedOnly", 0, "inference", "completed", {kOther}, true, 1},
  ReportRow{"TrainOpen_ResultsWithoutUrl_Rejected", 0, "train", "completed", {Pkl("")}, true, 0},
  ReportRow{"TrainOpen_NoResults_Rejected", 0, "train", "completed", {}, true, 0},
  ReportRow{"EvalOpen_EvalCompleted_Recorded", 1, "eval", "completed", {EvalModel(1)}, false, 0},
  ReportRow{"EvalOpen_TrainCompleted_ForwardedOnly", 1, "train", "completed", {TrainModel(1)},
            true, 1},
  ReportRow{"Idle_TrainCompleted_NotDispatchedHere_ForwardedOnly", 2, "train", "completed",
            {TrainModel(1)}, true, 1},
  ReportRow{"Idle_EvalFailed_NotDispatchedHere_ForwardedOnly", 2, "eval", "failed", {}, true, 1}),
  [](const ::testing::TestParamInfo<ReportRow>& i) { return std::string(i.param.name); });
// clang-format on

TEST_F(LlJobTest, L6_TwoResults_AllRecordedForTheFallback) {
  ToTrainReady(1);
  const ModelRef pb{"pb", "/output/train/1/model.pb", {{"loss", MetricValue::Number(0.8)}}, {}};
  const ModelRef ckpt{"ckpt", "/output/train/1", {}, {}};
  Run(WorkerReported{Worker("train", "completed", {pb, ckpt})});
  EXPECT_EQ(state.train_models,
            (std::vector<ModelRef>{{"pb", "/output/train/1/model.pb", {}, {}}, ckpt}));
  GmEcho(Ll1(1));
  Gm(Stage::kTrain, CT::kCompleted);  // data-less
  Gm(Stage::kEval, CT::kWaiting);
  ToEvalReady(1, {{"pb", "/output/train/1/model.pb", {}, {}}, ckpt});
}

TEST_F(LlJobTest, L3_KindAndStatusCaseInsensitive) {
  ToTrainReady(1);
  Run(WorkerReported{Worker("Train", "COMPLETED", {TrainModel(1)})});
  EXPECT_EQ(state.train_models, std::vector<ModelRef>{TrainModel(1)});
  EXPECT_EQ(state.train_models_version, 1);
}

// [P:L4]: the core only sees host paths (the adapter joins the rootfs): what it copies and reports
// is exactly the URL in the eval output, not mutated by the deploy.
TEST_F(LlJobTest, L4_DeployReportHasNoRootfsPrefix) {
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  auto c = All<CopyModel>(EvalRuns(1));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, "/output/eval/1/index.pkl");
  EXPECT_EQ(c[0].dst_url, "/output/deploy/index.pkl");
  StatusReport r = OneReport(Run(ModelCopied{true, ""}));
  ASSERT_EQ(r.input_models.size(), 1u);
  EXPECT_EQ(r.input_models[0].url, "/output/eval/1/index.pkl");
  EXPECT_EQ(state.eval_models, std::vector<ModelRef>{EvalModel(1)});
  EXPECT_EQ(state.deployments.at(0).url, "/output/eval/1/index.pkl");
}

// [P:L8]: the caller passes csv=true for a csv dataset whatever the case of `format`: every file of
// the version is data.csv with the header line; a txt dataset gets data.txt without one.
TEST_F(LlJobTest, L8_CsvHeaderFlagged_TxtWithout) {
  for (bool is_csv : {true, false}) {
    SCOPED_TRACE(is_csv ? "csv" : "txt");
    csv = is_csv;
    job.conditions.clear();
    state = State{};
    Gm(Stage::kTrain, CT::kWaiting);
    auto t = All<WriteSamples>(Ingest(501, 10));
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].csv_header, is_csv);
    EXPECT_EQ(t[0].url, is_csv ? "/output/data/train/1/data.csv" : "/output/data/train/1/data.txt");
    StatusReport ll1 = OneReport(Run(FileWritten{Work::kWriteTrain, 1, true, ""}));
    GmEcho(ll1);
    Gm(Stage::kTrain, CT::kCompleted, Output_({TrainModel(1)}));
    auto e = All<WriteSamples>(Gm(Stage::kEval, CT::kWaiting));
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].csv_header, is_csv);
    EXPECT_EQ(e[0].url, is_csv ? "/output/data/eval/1/data.csv" : "/output/data/eval/1/data.txt");
  }
}

// ---- the [P:R1] case and the lost-answer rule ----------------------------------------------

struct LostRow {
  const char* name;
  Stage stage;
  int64_t received_after_ms;  // the GM's re-send arrives this long after the answer; -1: unknown
  bool resent;
};

void PrintTo(const LostRow& r, std::ostream* os) { *os << r.name; }

class LlLostAnswerTable : public LlJobTest, public ::testing::WithParamInterface<LostRow> {};

// The GM erased the LC's answer (§H2.0): its list still ends with the same Waiting. A re-send of
// the job received at least 60 s later gets the same report again, once per re-send; earlier
// ones, or one whose receive time is unknown, get nothing. No file or copy work is redone.
TEST_P(LlLostAnswerTable, Row) {
  const LostRow& row = GetParam();
  ToTrainReady(1);
  if (row.stage != Stage::kTrain) {
    TrainRuns(1);
    ToEvalReady(1, {TrainModel(1)});
  }
  if (row.stage == Stage::kDeploy) {
    EvalRuns(1);
    Run(ModelCopied{true, ""});
  }
  ASSERT_EQ(job.conditions.back().type, CT::kWaiting);
  const StatusReport answer = sent.back().report;
  const int64_t answered_at = now.unix_ms;
  const State before = state;
  now.unix_ms = answered_at + std::max<int64_t>(row.received_after_ms, 0);
  received_ms = row.received_after_ms < 0 ? 0 : now.unix_ms;
  Output o = Run(JobChanged{});
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_TRUE(All<CopyModel>(o).empty());
  if (!row.resent) {
    EXPECT_TRUE(o.actions.empty());
    EXPECT_EQ(state, before);
    return;
  }
  ExpectReport(OneReport(o), answer);
  EXPECT_EQ(Logs(o, Log::Level::kWarn), 1u);
  EXPECT_EQ(state.answer_at_ms, now.unix_ms);
  // The same message (e.g. a tick) does not send it again; a later re-send 60 s on does.
  now.unix_ms += kLostAnswerMs;
  EXPECT_TRUE(Run(Tick{}).actions.empty());
  received_ms = now.unix_ms;
  EXPECT_EQ(Reports(Run(JobChanged{})).size(), 1u);
  // Once the GM holds the answer, nothing more.
  GmEcho(answer);
  EXPECT_TRUE(Reports(Deliver()).empty());
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(LostAnswers, LlLostAnswerTable, ::testing::Values(
  LostRow{"Train_ResyncAfter30s_NotResent", Stage::kTrain, 30'000, false},
  LostRow{"Train_ResyncAfter60s_Resent", Stage::kTrain, 60'000, true},
  LostRow{"Train_ReceiveTimeUnknown_NotResent", Stage::kTrain, -1, false},
  LostRow{"Eval_ResyncAfter59s_NotResent", Stage::kEval, 59'999, false},
  LostRow{"Eval_ResyncAfter90s_Resent", Stage::kEval, 90'000, true},
  LostRow{"Deploy_ResyncAfter10s_NotResent", Stage::kDeploy, 10'000, false},
  LostRow{"Deploy_ResyncAfter60s_Resent", Stage::kDeploy, 60'000, true}),
  [](const ::testing::TestParamInfo<LostRow>& i) { return std::string(i.param.name); });
// clang-format on

// ---- once per round, not per index ([D:I23.6]) -----------------------------------------

struct StaleRow {
  const char* name;
  Stage stage;  // the Waiting of round 2 this LC answered, then re-sent re-indexed
  int shift;    // +1: a condition a later status write erased still shows; -1: one erased
  bool closed;  // the GM had moved on to the next stage (Deploy: round 3's Train Waiting)
};

void PrintTo(const StaleRow& r, std::ostream* os) { *os << r.name; }

class LlStaleTable : public LlJobTest, public ::testing::WithParamInterface<StaleRow> {};

// The GM's informer is behind (§H2.0): it re-sends a Waiting of round 2 that this LC answered,
// in an object whose conditions before it differ (so the Waiting is at another index). Before
// [D:I23.6] any index above the answered one was answered again: another train version,
// another eval file, another copy and deploy ready.
TEST_P(LlStaleTable, Row) {
  const StaleRow& row = GetParam();
  FullRound(1, 125);
  ToTrainReady(2);
  if (row.stage != Stage::kTrain) {
    TrainRuns(2);
    ToEvalReady(2, {TrainModel(2)});
  }
  if (row.stage == Stage::kDeploy) {
    EvalRuns(2);
    Run(ModelCopied{true, ""});
  }
  ASSERT_EQ(job.conditions.back().type, CT::kWaiting);
  ASSERT_EQ(job.conditions.back().stage, row.stage);
  std::vector<JobCondition> view = job.conditions;
  if (row.closed) {
    const StatusReport answer = sent.back().report;
    if (row.stage == Stage::kDeploy) {
      GmAfterDeploy(answer);
    } else {
      GmEcho(answer);
      Gm(row.stage, CT::kRunning);
    }
  }
  // Round 2's (Train, Completed) (or round 1's for a train Waiting) duplicated or erased.
  size_t at = view.size();
  for (size_t i = view.size(); i-- > 0;) {
    if (view[i].stage == Stage::kTrain && view[i].type == CT::kCompleted) {
      at = i;
      break;
    }
  }
  ASSERT_LT(at, view.size());
  if (row.shift > 0) view.insert(view.begin() + static_cast<std::ptrdiff_t>(at), view[at]);
  if (row.shift < 0) view.erase(view.begin() + static_cast<std::ptrdiff_t>(at));
  if (row.stage == Stage::kTrain) Ingest(501, 125);  // a train trigger would fire
  const int64_t versions = state.version;
  const int64_t deploys = state.deploy_count;
  for (int i = 0; i < 3; ++i) {
    now.unix_ms += 200;
    job.conditions = view;
    Output o = Deliver();
    EXPECT_TRUE(Reports(o).empty()) << "send " << i;
    EXPECT_TRUE(All<WriteSamples>(o).empty()) << "send " << i;
    EXPECT_TRUE(All<CopyModel>(o).empty()) << "send " << i;
  }
  EXPECT_EQ(state.version, versions);
  EXPECT_EQ(state.deploy_count, deploys);
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(StaleWaitings, LlStaleTable, ::testing::Values(
  StaleRow{"Train_ReindexedPlus1", Stage::kTrain, 1, false},
  StaleRow{"Train_ReindexedPlus1_AfterTheTrainRan", Stage::kTrain, 1, true},
  StaleRow{"Eval_ReindexedPlus1", Stage::kEval, 1, false},
  StaleRow{"Eval_ReindexedPlus1_AfterTheEvalRan", Stage::kEval, 1, true},
  StaleRow{"Deploy_ReindexedPlus1", Stage::kDeploy, 1, false},
  StaleRow{"Deploy_ReindexedPlus1_RoundClosed", Stage::kDeploy, 1, true},
  StaleRow{"Deploy_ReindexedMinus1_RoundClosed", Stage::kDeploy, -1, true}),
  [](const ::testing::TestParamInfo<StaleRow>& i) { return std::string(i.param.name); });
// clang-format on

// ---- restart at each point: the state alone resumes, nothing is answered twice -------------

enum class Point {
  kTrainWriting,    // (Train, Waiting) answered by a write in flight
  kTrainReadySent,  // LL-1 sent, (Train, Waiting) still latest (G2: nothing synced yet)
  kTrainRunning,    // the train pod runs
  kEvalWriting,     // (Eval, Waiting) answered by a write in flight
  kEvalReadySent,   // LL-3 sent, (Eval, Waiting) still latest
  kDeployCopying,   // (Deploy, Waiting) answered by a copy in flight
  kDeployReported,  // LL-5 sent, (Deploy, Waiting) still latest
};

struct RestartRow {
  const char* name;
  Point point;
  size_t reissued_writes, reissued_copies;
};

void PrintTo(const RestartRow& r, std::ostream* os) { *os << r.name; }

class LlRestartTable : public LlJobTest, public ::testing::WithParamInterface<RestartRow> {};

// A restart = the persisted state, Resume (re-issues exactly the in-flight work), then the GM's
// re-send of the same job: no second answer; then the round goes on to its end with one answer
// per Waiting.
TEST_P(LlRestartTable, Row) {
  const RestartRow& row = GetParam();
  Gm(Stage::kTrain, CT::kWaiting);
  Ingest(501, 125);
  if (row.point != Point::kTrainWriting) {
    Run(FileWritten{Work::kWriteTrain, 1, true, ""});
    if (row.point >= Point::kTrainRunning) {
      GmEcho(Ll1(1));
      Gm(Stage::kTrain, CT::kRunning);
    }
    if (row.point >= Point::kEvalWriting) {
      Gm(Stage::kTrain, CT::kCompleted, Output_({TrainModel(1)}));
      Gm(Stage::kEval, CT::kWaiting);
    }
    if (row.point >= Point::kEvalReadySent) Run(FileWritten{Work::kWriteEval, 1, true, ""});
    if (row.point >= Point::kDeployCopying) {
      GmEcho(Ll3(1, {TrainModel(1)}));
      Gm(Stage::kEval, CT::kCompleted, Output_({EvalModel(1)}));
      Gm(Stage::kDeploy, CT::kWaiting);
    }
    if (row.point >= Point::kDeployReported) Run(ModelCopied{true, ""});
  }
  const size_t reports_before = sent.size();
  // Restart.
  const State persisted = state;
  state = State{};
  state = persisted;
  Output r = Run(Resume{});
  EXPECT_EQ(All<WriteSamples>(r).size(), row.reissued_writes);
  EXPECT_EQ(All<CopyModel>(r).size(), row.reissued_copies);
  EXPECT_TRUE(All<SendReport>(r).empty());
  Ingest(600, 0);  // enough for the train trigger: still no second train ready
  Output again = Deliver();
  EXPECT_TRUE(All<SendReport>(again).empty()) << "the re-sent Waiting is not answered again";
  EXPECT_TRUE(All<WriteSamples>(again).empty());
  EXPECT_TRUE(All<CopyModel>(again).empty());
  // Complete the in-flight work (the completion of the re-issued action).
  if (state.work == Work::kWriteTrain) Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  if (state.work == Work::kWriteEval) Run(FileWritten{Work::kWriteEval, 1, true, ""});
  if (state.work == Work::kDeploy) Run(ModelCopied{true, ""});
  // A stale duplicate completion changes nothing.
  const State settled = state;
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  Run(FileWritten{Work::kWriteEval, 1, true, ""});
  Run(ModelCopied{true, ""});
  EXPECT_EQ(state, settled);
  // Exactly one answer of each kind up to here.
  std::vector<std::string> kinds;
  for (const Sent& s : sent) {
    kinds.push_back(std::string(ReportPhaseName(s.report.phase)) + "/" +
                    ReportStatusName(s.report.status));
  }
  const size_t n = row.point >= Point::kDeployCopying ? 3
                   : row.point >= Point::kEvalWriting ? 2
                                                      : 1;
  EXPECT_EQ(sent.size(), n) << ::testing::PrintToString(kinds);
  EXPECT_EQ(reports_before, row.point >= Point::kDeployReported   ? 3u
                            : row.point >= Point::kEvalReadySent  ? 2u
                            : row.point >= Point::kTrainReadySent ? 1u
                                                                  : 0u);
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(Restarts, LlRestartTable, ::testing::Values(
  RestartRow{"TrainWriting_RewritesTrainFile", Point::kTrainWriting, 1, 0},
  RestartRow{"TrainReadySent", Point::kTrainReadySent, 0, 0},
  RestartRow{"TrainRunning", Point::kTrainRunning, 0, 0},
  RestartRow{"EvalWriting_RewritesEvalFile", Point::kEvalWriting, 1, 0},
  RestartRow{"EvalReadySent", Point::kEvalReadySent, 0, 0},
  RestartRow{"DeployCopying_Recopies", Point::kDeployCopying, 0, 1},
  RestartRow{"DeployReported", Point::kDeployReported, 0, 0}),
  [](const ::testing::TestParamInfo<RestartRow>& i) { return std::string(i.param.name); });
// clang-format on

// ---- multi-node ----------------------------------------------------------------------------

// The LC on the train node T (not the dataset node): it gets the job at (Train, Running) only,
// sends nothing, and forwards the train report without acting on it.
TEST_F(LlJobTest, MultiNode_TrainNodeLc_ForwardsOnly) {
  dataset_known = false;  // the Dataset is not this node's
  job.conditions.push_back({CT::kWaiting, Stage::kTrain});
  job.conditions.push_back({CT::kReady, Stage::kTrain});
  job.conditions.back().data.output_dir = "/output/train/1";
  job.conditions.push_back({CT::kStarting, Stage::kTrain});
  Output o = Gm(Stage::kTrain, CT::kRunning);
  EXPECT_TRUE(o.actions.empty());
  const ReportScope scope = ScopeOfReport(MakeSpec(), state, "train");
  EXPECT_FALSE(scope.awaited) << "not this LC's stage: the adapter forwards it unchecked";
  const State before = state;
  Output r = Run(WorkerReported{Worker("train", "completed", {TrainModel(1)})});
  EXPECT_TRUE(All<SendReport>(r).empty());
  EXPECT_EQ(state, before);
}

// The LC on the dataset node never sees the train report: the eval is answered from the
// conditions; the eval runs elsewhere too and the deploy is answered from the conditions.
TEST_F(LlJobTest, MultiNode_DatasetNodeLc_AnswersFromConditions) {
  shape = Shape::kG2DatasetOnly;
  ToTrainReady(1);
  ASSERT_EQ(All<WriteSamples>(TrainRuns(1, false)).size(), 1u);
  ToEvalReady(1, {TrainModel(1)});
  ASSERT_EQ(All<CopyModel>(EvalRuns(1, false)).size(), 1u);
  ExpectReport(OneReport(Run(ModelCopied{true, ""})), Ll5(EvalModel(1)));
}

// A G1 -> G2 upgrade moved the Waitings to this (dataset-node) LC, which did not send the round's
// train ready: it evaluates under that train's version, never overwriting an older version's eval
// files, and numbers its next train after it.
TEST_F(LlJobTest, RoundTrainedByAnotherLc_EvalUsesThatVersion) {
  Ingest(100, 30);
  job.conditions.push_back({CT::kWaiting, Stage::kTrain});
  job.conditions.push_back({CT::kReady, Stage::kTrain});
  job.conditions.back().data.output_dir = "/output/train/4";
  job.conditions.push_back({CT::kRunning, Stage::kTrain});
  Gm(Stage::kTrain, CT::kCompleted, Output_({TrainModel(4)}));
  auto w = All<WriteSamples>(Gm(Stage::kEval, CT::kWaiting));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/eval/4/data.csv");
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 300, 30})})
      << "the eval samples gathered so far form this eval's window";
  ToEvalReady(4, {TrainModel(4)});
  EXPECT_EQ(state.version, 4);
}

// ---- failures --------------------------------------------------------------------------------

// [P:L1]: the train pod fails; the forwarded failure (or the GM's (Train, Failed)) returns the
// samples; the next train waits for the GM's (Train, Waiting) and uses the next version.
TEST_F(LlJobTest, L1_TrainFailed_SamplesBack_NextWaitingAnswered) {
  shape = Shape::kG1;  // the Failed condition reaches this LC
  for (bool by_report : {true, false}) {
    SCOPED_TRACE(by_report ? "worker report" : "condition");
    job = LlJob{job.meta, job.spec, {}};
    state = State{};
    sent.clear();
    ToTrainReady(1);
    GmEcho(Ll1(1));
    Gm(Stage::kTrain, CT::kRunning);
    Ingest(20, 5);
    if (by_report) {
      Output o = Run(WorkerReported{Worker("train", "failed", {})});
      EXPECT_TRUE(All<SendReport>(o).empty());
      EXPECT_TRUE(All<WriteSamples>(o).empty()) << "no train before the GM's (Train, Waiting)";
      EXPECT_EQ(state.train_pending.count, 521) << "the failed train's samples are pending again";
    }
    EXPECT_TRUE(All<WriteSamples>(Gm(Stage::kTrain, CT::kFailed)).empty());
    EXPECT_EQ(state.train_pending, (SpoolRange{0, 5210, 521}));
    EXPECT_TRUE(state.eval_windows.empty());
    EXPECT_EQ(state.eval_open, (SpoolRange{0, 1300, 130}));
    EXPECT_EQ(state.consecutive_failures, 1) << "one failure, however it was seen";
    auto w = All<WriteSamples>(Gm(Stage::kTrain, CT::kWaiting));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].round, 2) << "L5: version 1's files are never rewritten";
    EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 5210, 521})});
    ExpectReport(OneReport(Run(FileWritten{Work::kWriteTrain, 2, true, ""})), Ll1(2));
    EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1300, 130})});
  }
}

// [P:L2]: the eval pod fails; the job trains again on the GM's (Train, Waiting); the evaluated
// window stays for later evals.
TEST_F(LlJobTest, L2_EvalFailed_NextRoundEvaluatesTheWindowAgain) {
  shape = Shape::kG1;
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  GmEcho(Ll3(1, {TrainModel(1)}));
  Gm(Stage::kEval, CT::kRunning);
  Output f = Gm(Stage::kEval, CT::kFailed);
  EXPECT_EQ(Logs(f, Log::Level::kWarn), 1u);
  EXPECT_FALSE(state.worker_awaited);
  Gm(Stage::kTrain, CT::kWaiting);
  Ingest(501, 40);
  Run(FileWritten{Work::kWriteTrain, 2, true, ""});
  auto w = All<WriteSamples>(TrainRuns(2));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/eval/2/data.csv");
  EXPECT_EQ(w[0].ranges,
            (std::vector<SpoolRange>{SpoolRange{0, 1250, 125}, SpoolRange{1250, 1650, 40}}));
}

// A Failed condition about an older version (history) never aborts the open train.
TEST_F(LlJobTest, FailedCondition_OfAnOlderVersion_Ignored) {
  job.conditions.push_back({CT::kWaiting, Stage::kTrain});
  job.conditions.push_back({CT::kReady, Stage::kTrain});
  job.conditions.back().data.output_dir = "/output/train/1";
  job.conditions.push_back({CT::kFailed, Stage::kTrain});
  Deliver();
  EXPECT_EQ(state.conditions_seen, 3);
  ToTrainReady(1);  // (Train, Waiting) appended; version 1 again
  GmEcho(Ll1(1));
  Output o = Gm(Stage::kTrain, CT::kRunning);
  EXPECT_TRUE(state.worker_awaited) << "the old (Train, Failed) was examined once, at first sight";
  EXPECT_TRUE(o.actions.empty());
}

// [P:B6] path: no train output anywhere -> eval failed; the open train counts as failed, so its
// samples are trained again, and the GM's next (Train, Waiting) is answered.
TEST_F(LlJobTest, EvalFailed_NoTrainOutput_SamplesBack) {
  ToTrainReady(1);
  Output o = TrainRuns(1, false, true);
  ExpectReport(OneReport(o), kEvalFailed);
  EXPECT_EQ(Logs(o, Log::Level::kError), 1u);
  EXPECT_EQ(state.train_pending.count, 501);
  EXPECT_EQ(state.consecutive_failures, 1);
  GmEcho(kEvalFailed);
  auto w = All<WriteSamples>(Gm(Stage::kTrain, CT::kWaiting));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].round, 2);
}

// A worker that fails at once must not be restarted in a tight loop: the first failure is
// retried at once, consecutive ones back off 1 s, 2 s, 4 s ... capped at 60 s.
TEST_F(LlJobTest, ConsecutiveTrainFailuresBackOff) {
  TriggerSpec ts;
  ts.op = ">";
  ts.threshold = 10;
  ts.metric = "num_of_samples";
  train = MustCompile(ts);
  Gm(Stage::kTrain, CT::kWaiting);
  ASSERT_EQ(All<WriteSamples>(Ingest(20, 0)).size(), 1u);
  int64_t expected_wait[] = {0, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000};
  for (int64_t wait : expected_wait) {
    ASSERT_TRUE(Reports(Run(FileWritten{Work::kWriteTrain, state.version + 1, true, ""})).size() ==
                1u);
    GmEcho(*state.answer);
    Run(WorkerReported{Worker("train", "failed", {})});
    Gm(Stage::kTrain, CT::kFailed);
    const size_t writes = All<WriteSamples>(Gm(Stage::kTrain, CT::kWaiting)).size();
    if (wait == 0) {
      EXPECT_EQ(writes, 1u) << "the first failure retries at once";
      continue;
    }
    EXPECT_EQ(writes, 0u) << "no retry before the backoff";
    EXPECT_EQ(state.retry_after_ms, now.unix_ms + wait);
    now.unix_ms += wait - 1;
    EXPECT_TRUE(All<WriteSamples>(Run(Tick{})).empty());
    now.unix_ms += 1;
    EXPECT_EQ(All<WriteSamples>(Run(Tick{})).size(), 1u) << "retried after " << wait << " ms";
  }
}

// ---- the train trigger, files and samples (kept from the phase machine) --------------------

TEST_F(LlJobTest, TrainTrigger_BelowThreshold_NoAction) {
  Gm(Stage::kTrain, CT::kWaiting);
  Output o = Ingest(400, 100);
  EXPECT_TRUE(o.actions.empty());
  EXPECT_EQ(state.train_pending, (SpoolRange{0, 4000, 400}));
  EXPECT_EQ(state.eval_open, (SpoolRange{0, 1000, 100}));
  EXPECT_EQ(state.samples_seen, 500);
}

TEST_F(LlJobTest, TrainTrigger_WaitsForTheGmsTrainWaiting) {
  EXPECT_TRUE(Ingest(501, 125).actions.empty()) << "no condition yet";
  Gm(Stage::kTrain, CT::kRunning);
  EXPECT_TRUE(Run(Tick{}).actions.empty()) << "the latest condition is not a Waiting";
  auto w = All<WriteSamples>(Gm(Stage::kTrain, CT::kWaiting));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].stage, Stage::kTrain);
  EXPECT_EQ(w[0].round, 1);
  EXPECT_EQ(w[0].url, "/output/data/train/1/data.csv");
  EXPECT_EQ(w[0].spool, SpoolKind::kTrain);
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 5010, 501})});
  EXPECT_TRUE(w[0].csv_header) << "L8";
  EXPECT_EQ(state.version, 0) << "the version is committed by the write";
}

TEST_F(LlJobTest, LL1_ExactReport_OncePerWaiting) {
  ToTrainReady(1);
  EXPECT_EQ(state.version, 1);
  EXPECT_TRUE(state.worker_awaited);
  EXPECT_EQ(state.train_pending, (SpoolRange{5010, 5010, 0}));
  EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1250, 125})});
  EXPECT_EQ(state.eval_open, (SpoolRange{1250, 1250, 0}));
  // v0.7.0 re-arms the trigger on every tick in (Train, Waiting) ([P:B4]): not here.
  EXPECT_TRUE(Ingest(900, 10).actions.empty()) << "one LL-1 per (Train, Waiting)";
  EXPECT_TRUE(Run(Tick{}).actions.empty()) << "one LL-1 per (Train, Waiting)";
  EXPECT_TRUE(Deliver().actions.empty());
}

TEST_F(LlJobTest, SamplesArrivingDuringTrainWrite_StayPending) {
  Gm(Stage::kTrain, CT::kWaiting);
  Ingest(501, 125);
  Ingest(7, 3);
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  EXPECT_EQ(state.train_pending, (SpoolRange{5010, 5080, 7}));
  EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1280, 128})});
}

TEST_F(LlJobTest, DatasetUnknown_BlockedOnceThenFires) {
  dataset_known = false;
  Ingest(501, 125);
  Output o = Gm(Stage::kTrain, CT::kWaiting);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  ASSERT_EQ(All<Log>(o).size(), 1u);
  EXPECT_NE(All<Log>(o)[0].text.find("default/lifelong-dataset"), std::string::npos);
  EXPECT_TRUE(Run(Tick{}).actions.empty()) << "a blocked condition is logged once";
  dataset_known = true;
  EXPECT_EQ(All<WriteSamples>(Run(JobChanged{})).size(), 1u) << "fires once the Dataset is known";
  EXPECT_EQ(state.last_error, "");
}

TEST_F(LlJobTest, TrainTrigger_OutsideTimerWindow_NoFire) {
  TriggerSpec ts;
  ts.op = ">";
  ts.threshold = 500;
  ts.metric = "num_of_samples";
  ts.timer = TimerSpec{"02:00", "04:00"};
  train = MustCompile(ts);
  Gm(Stage::kTrain, CT::kWaiting);
  EXPECT_TRUE(All<WriteSamples>(Ingest(501, 0)).empty());
  now.minute_of_day = 3 * 60;
  EXPECT_EQ(All<WriteSamples>(Run(Tick{})).size(), 1u);
}

TEST_F(LlJobTest, L5_FailedWriteBurnsNoVersion) {
  Gm(Stage::kTrain, CT::kWaiting);
  Ingest(501, 0);
  Output f = Run(FileWritten{Work::kWriteTrain, 1, false, "No space left on device"});
  EXPECT_TRUE(All<SendReport>(f).empty());
  EXPECT_EQ(Logs(f, Log::Level::kError), 1u);
  EXPECT_EQ(state.version, 0);
  EXPECT_EQ(state.work, Work::kNone);
  EXPECT_EQ(state.train_pending.count, 501) << "samples not consumed by a failed write";
  EXPECT_EQ(state.last_error, "No space left on device");
  EXPECT_TRUE(All<WriteSamples>(Run(Tick{})).empty()) << "no retry before the backoff";
  now.unix_ms += 10'000;
  auto w = All<WriteSamples>(Run(Tick{}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].round, 1);
  EXPECT_EQ(OneReport(Run(FileWritten{Work::kWriteTrain, 1, true, ""})).output_dir,
            "/output/train/1");
}

TEST_F(LlJobTest, EvalWriteFails_RetriesAfterBackoff) {
  ToTrainReady(1);
  TrainRuns(1);
  Output f = Run(FileWritten{Work::kWriteEval, 1, false, "Read-only file system"});
  EXPECT_TRUE(All<SendReport>(f).empty());
  EXPECT_EQ(state.work, Work::kNone);
  EXPECT_TRUE(All<WriteSamples>(Run(Tick{})).empty()) << "no retry before the backoff";
  now.unix_ms += 10'000;
  auto w = All<WriteSamples>(Run(Tick{}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/eval/1/data.csv");
  ToEvalReady(1, {TrainModel(1)});
}

TEST_F(LlJobTest, S3TxtDataset_DataIndexBesideTrainAndEvalFiles) {
  csv = false;
  dataset_s3 = true;
  job.spec.output_dir = "s3://b/out/";
  Gm(Stage::kTrain, CT::kWaiting);
  Ingest(501, 125);
  StatusReport ll1 = OneReport(Run(FileWritten{Work::kWriteTrain, 1, true, ""}));
  ExpectReport(ll1, StatusReport{ReportPhase::kTrain,
                                 ReportStatus::kReady,
                                 true,
                                 {},
                                 "s3://b/out/data/train/1/data.txt",
                                 "s3://b/out/data/train/1/dataIndex.txt",
                                 "s3://b/out/train/1"});
  const ModelRef model = Pkl("s3://b/out/train/1/index.pkl");
  GmEcho(ll1);
  Gm(Stage::kTrain, CT::kCompleted, Output_({model}));
  auto w = All<WriteSamples>(Gm(Stage::kEval, CT::kWaiting));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "s3://b/out/data/eval/1/data.txt");
  EXPECT_EQ(w[0].index_url, "s3://b/out/data/eval/1/dataIndex.txt");
  EXPECT_FALSE(w[0].csv_header);
  ExpectReport(OneReport(Run(FileWritten{Work::kWriteEval, 1, true, ""})),
               StatusReport{ReportPhase::kEval,
                            ReportStatus::kReady,
                            true,
                            {model},
                            "s3://b/out/data/eval/1/data.txt",
                            "s3://b/out/data/eval/1/dataIndex.txt",
                            "s3://b/out/eval/1"});
}

TEST_F(LlJobTest, B2_EvalWindowsEachSampleOnce) {
  int64_t begin_of[8] = {0};  // eval spool offset where version k's window starts
  for (int k = 1; k <= 7; ++k) {
    begin_of[k] = state.eval_open.begin;
    WriteSamples w = FullRound(k, 10 * k);
    const int first = std::max(1, k - kEvalWindows + 1);
    ASSERT_EQ(w.ranges.size(), static_cast<size_t>(k - first + 1)) << "version " << k;
    EXPECT_EQ(w.ranges.front().begin, begin_of[first]) << "version " << k;
    int64_t total = 0;
    for (size_t i = 0; i < w.ranges.size(); ++i) {
      if (i > 0) {
        EXPECT_EQ(w.ranges[i].begin, w.ranges[i - 1].end) << "no overlap, no gap";
      }
      total += w.ranges[i].count;
    }
    int64_t want = 0;
    for (int j = first; j <= k; ++j) want += 10 * j;
    EXPECT_EQ(total, want) << "version " << k;
  }
  EXPECT_EQ(state.eval_windows.size(), static_cast<size_t>(kEvalWindows));
  EXPECT_EQ(state.deployments.size(), 7u);
}

// ---- ScopeOfReport ---------------------------------------------------------------------------

TEST_F(LlJobTest, ScopeOfReport_FollowsTheOpenReady) {
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "train").awaited);
  ToTrainReady(1);
  ReportScope t = ScopeOfReport(MakeSpec(), state, "Train");
  EXPECT_TRUE(t.awaited);
  EXPECT_EQ(t.dirs, std::vector<std::string>{"/output/train/1"});
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "eval").awaited);
  TrainRuns(1);
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "train").awaited) << "the GM moved on";
  ToEvalReady(1, {TrainModel(1)});
  ReportScope e = ScopeOfReport(MakeSpec(), state, "eval");
  EXPECT_TRUE(e.awaited);
  EXPECT_EQ(e.dirs, std::vector<std::string>{"/output/eval/1"});
  EXPECT_EQ(e.exact, std::vector<std::string>{TrainModel(1).url});
  EvalRuns(1);
  EXPECT_FALSE(ScopeOfReport(MakeSpec(), state, "eval").awaited);
}

// ---- layout ---------------------------------------------------------------------------------

TEST(LlLayoutTest, Paths) {
  EXPECT_EQ(DeployModelUrl(OutputRoot("/output/")), "/output/deploy/index.pkl");
  EXPECT_EQ(DeployModelUrl("s3://kubeedge/output"), "s3://kubeedge/output/deploy/index.pkl");
  EXPECT_EQ(EvalOutputDir("/output", 3), "/output/eval/3");
  EXPECT_STREQ(PhaseName(Phase::kTrain), "train");
  EXPECT_STREQ(PhaseName(Phase::kEval), "eval");
  EXPECT_STREQ(PhaseName(Phase::kDeploy), "deploy");
}

// ---- facts (core/facts.h): what each transition of a version tells the round history

std::string Describe(const std::vector<Fact>& facts) {
  std::string s;
  for (const Fact& f : facts) {
    std::visit(
        [&](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, TrainTriggerFired>) {
            s += "fired{" + std::to_string(x.round) + ", " + std::to_string(x.samples) + ", " +
                 x.reason + "}";
          } else if constexpr (std::is_same_v<X, ReportSent>) {
            s += "sent{" + std::to_string(x.round) + ", " + ReportPhaseName(x.phase) + ", " +
                 ReportStatusName(x.status) + ", " + x.data_url + ", " + x.output_dir + "}";
          } else if constexpr (std::is_same_v<X, StageReported>) {
            s += "reported{" + std::to_string(x.round) + ", " + ReportPhaseName(x.stage) + ", " +
                 (x.completed ? "completed" : "failed") + ", " + x.model_url + ", " +
                 std::to_string(x.metrics.size()) + " result(s)}";
          } else {
            s += "decided{" + std::to_string(x.round) + ", " +
                 std::to_string(static_cast<int>(x.kind)) + ", " + x.reason + ", " + x.copy_to +
                 "}";
          }
        },
        f);
    s += "\n";
  }
  return s;
}

// One version, transition by transition (G2: Waiting and Running conditions are delivered).
TEST_F(LlJobTest, Facts_ADeployedVersion) {
  shape = Shape::kG2;
  ModelRef trained = TrainModel(1);
  trained.metrics = {{"summer", MetricValue::Other()}};
  WorkerReport train_done = Worker("train", "completed", {trained});
  train_done.observed_metrics = {{{"summer/accuracy", 0.9}}};  // as the codec flattens them
  ModelRef evaluated = EvalModel(1);
  evaluated.metrics = {{"precision_score", MetricValue::Number(0.8)}};
  const struct {
    const char* what;
    std::function<Output()> step;
    std::vector<Fact> want;
  } rows[] = {
      {"(Train, Waiting) without samples: nothing",
       [&] { return Gm(Stage::kTrain, CT::kWaiting); },
       {}},
      {"samples fire the train trigger",
       [&] { return Ingest(501, 125); },
       {TrainTriggerFired{1, 501, "fired: num_of_samples = 501 > 500"}}},
      {"the train file is written: train ready",
       [&] {
         return Run(FileWritten{Work::kWriteTrain, 1, true, ""});
       },
       {ReportSent{1, ReportPhase::kTrain, ReportStatus::kReady, "/output/data/train/1/data.csv",
                   "/output/train/1"}}},
      {"the train worker completes",
       [&] {
         GmEcho(Ll1(1));
         Gm(Stage::kTrain, CT::kRunning);
         return Run(WorkerReported{train_done});
       },
       {StageReported{1, ReportPhase::kTrain, true, trained.url, {{{"summer/accuracy", 0.9}}}}}},
      {"(Eval, Waiting) starts the eval file: no fact",
       [&] {
         Gm(Stage::kTrain, CT::kCompleted, Output_({TrainModel(1)}));
         return Gm(Stage::kEval, CT::kWaiting);
       },
       {}},
      {"the eval file is written: eval ready",
       [&] {
         return Run(FileWritten{Work::kWriteEval, 1, true, ""});
       },
       {ReportSent{1, ReportPhase::kEval, ReportStatus::kReady, "/output/data/eval/1/data.csv",
                   "/output/eval/1"}}},
      {"the eval worker completes (metrics from the parsed results)",
       [&] {
         GmEcho(Ll3(1, {TrainModel(1)}));
         Gm(Stage::kEval, CT::kRunning);
         return Run(WorkerReported{Worker("eval", "completed", {evaluated})});
       },
       {StageReported{1, ReportPhase::kEval, true, evaluated.url, {{{"precision_score", 0.8}}}}}},
      {"(Deploy, Waiting): deploy decided, the copy starts",
       [&] {
         Gm(Stage::kEval, CT::kCompleted, Output_({evaluated}));
         return Gm(Stage::kDeploy, CT::kWaiting);
       },
       {DeployDecided{1,
                      DecisionKind::kDeploy,
                      "the round's (Eval, Completed) output",
                      {{"precision_score", 0.8}},
                      {},
                      "/output/deploy/index.pkl"}}},
      {"the copy is done: deploy ready",
       [&] {
         return Run(ModelCopied{true, ""});
       },
       {ReportSent{1, ReportPhase::kDeploy, ReportStatus::kReady, "", ""}}},
  };
  for (const auto& row : rows) {
    const Output o = row.step();
    EXPECT_EQ(o.facts, row.want) << row.what << ": got\n"
                                 << Describe(o.facts) << "want\n"
                                 << Describe(row.want);
  }
}

// The other ends of a version: a failed worker, no eval output, a failed copy, no trained model.
TEST_F(LlJobTest, Facts_VersionsThatDoNotDeploy) {
  shape = Shape::kG2;
  ToTrainReady(1);
  GmEcho(Ll1(1));
  Gm(Stage::kTrain, CT::kRunning);
  EXPECT_EQ(Run(WorkerReported{Worker("train", "failed", {})}).facts,
            (std::vector<Fact>{StageReported{1, ReportPhase::kTrain, false, "", {}}}))
      << "a failed train";
  EXPECT_TRUE(Run(WorkerReported{Worker("train", "failed", {})}).facts.empty())
      << "no train of this LC is open any more: forwarded only";

  auto fresh = [&] {
    state = State{};
    job.conditions.clear();
    sent.clear();
  };

  // No train output anywhere (the condition's erased, no report here): the eval is answered
  // failed.
  fresh();
  ToTrainReady(1);
  GmEcho(Ll1(1));
  Gm(Stage::kTrain, CT::kRunning);
  Gm(Stage::kTrain, CT::kCompleted);
  const Output no_model = Gm(Stage::kEval, CT::kWaiting);
  EXPECT_EQ(no_model.facts,
            (std::vector<Fact>{ReportSent{1, ReportPhase::kEval, ReportStatus::kFailed, "", ""}}))
      << Describe(no_model.facts);

  // The eval had no output (erased, no report here): nothing to deploy.
  fresh();
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  const Output nothing = EvalRuns(1, /*report_here=*/false, /*erased=*/true);
  EXPECT_EQ(
      nothing.facts,
      (std::vector<Fact>{
          DeployDecided{1, DecisionKind::kNotDeployed, "this round has no eval output", {}, {}, ""},
          ReportSent{1, ReportPhase::kDeploy, ReportStatus::kCompleted, "", ""}}))
      << Describe(nothing.facts);

  // The copy fails.
  fresh();
  ToTrainReady(1);
  TrainRuns(1);
  ToEvalReady(1, {TrainModel(1)});
  EvalRuns(1);
  ASSERT_EQ(state.work, Work::kDeploy);
  EXPECT_EQ(
      Run(ModelCopied{false, "disk full"}).facts,
      (std::vector<Fact>{ReportSent{1, ReportPhase::kDeploy, ReportStatus::kFailed, "", ""}}));
}

}  // namespace
}  // namespace sedna::core::ll
