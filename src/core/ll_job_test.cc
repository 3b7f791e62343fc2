// Table-driven tests of the LL state machine (sedna-protocol.md §8.3) and the §8.5 LL items.
#include "core/ll_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>

namespace sedna::core::ll {
namespace {

JobCondition Cond(Stage stage, ConditionType type) {
  JobCondition c;
  c.stage = stage;
  c.type = type;
  return c;
}

// A (stage, Ready) condition as the GM appends it from LL-1 / LL-3.
JobCondition Ready(Stage stage, std::string output_dir) {
  JobCondition c = Cond(stage, ConditionType::kReady);
  c.data.output_dir = std::move(output_dir);
  return c;
}

const ModelRef kTrainModel{"pkl", "/output/train/1/index.pkl", {}};
const ModelRef kEvalResult{"pkl", "/output/eval/1/index.pkl", {}};

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

void ExpectSameWrite(const WriteSamples& got, const WriteSamples& want) {
  EXPECT_EQ(got.stage, want.stage);
  EXPECT_EQ(got.round, want.round);
  EXPECT_EQ(got.url, want.url);
  EXPECT_EQ(got.spool, want.spool);
  EXPECT_EQ(got.ranges, want.ranges);
  EXPECT_EQ(got.csv_header, want.csv_header);
}

// Where a job is when an event arrives.
enum class At {
  kTrainIdle,     // samples below the trigger threshold
  kTrainWriting,  // train file of version 1 being written
  kTrainAwaited,  // LL-1 sent, train worker awaited
  kEvalWriting,   // train completed, eval file of version 1 being written
  kEvalAwaited,   // LL-3 sent, eval worker awaited
  kDeploying,     // eval completed, deploy copy in flight
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
    job.conditions = {Cond(Stage::kTrain, ConditionType::kWaiting)};
    now.unix_ms = 1'000'000;
    now.minute_of_day = 600;
    now.rfc3339 = "2026-11-29T10:00:00Z";
  }

  Spec MakeSpec() {
    Spec s;
    s.job = &job;
    s.train_trigger = &train;
    s.dataset_known = true;
    s.csv = csv;
    s.dataset_s3 = dataset_s3;
    return s;
  }

  Output Run(const Event& e) {
    Spec s = MakeSpec();
    Output o = Step(s, state, e, now);
    state = o.state;
    return o;
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

  static StatusReport OneReport(const Output& o) {
    auto r = All<SendReport>(o);
    EXPECT_EQ(r.size(), 1u);
    return r.empty() ? StatusReport{} : r[0].report;
  }

  // Drives a fresh job to `at` for version 1; `issued` holds the step that issued the work in
  // flight there (if any).
  void Reach(At at) {
    Output o = Ingest(at == At::kTrainIdle ? 400 : 501, 125);
    if (at == At::kTrainIdle) {
      ASSERT_EQ(state.work, Work::kNone);
      return;
    }
    issued = o;
    ASSERT_EQ(state.work, Work::kWriteTrain);
    if (at == At::kTrainWriting) return;
    Run(FileWritten{Work::kWriteTrain, 1, true, ""});
    ASSERT_TRUE(state.worker_awaited);
    if (at == At::kTrainAwaited) return;
    issued = Run(WorkerReported{Worker("train", "completed", {kTrainModel})});
    ASSERT_EQ(state.work, Work::kWriteEval);
    if (at == At::kEvalWriting) return;
    Run(FileWritten{Work::kWriteEval, 1, true, ""});
    ASSERT_TRUE(state.worker_awaited);
    if (at == At::kEvalAwaited) return;
    issued = Run(WorkerReported{Worker("eval", "completed", {kEvalResult})});
    ASSERT_EQ(state.work, Work::kDeploy);
  }

  // One whole version from the trigger to a successful deploy; returns the eval file write.
  WriteSamples FullCycle(int64_t train_n, int64_t eval_n) {
    Ingest(train_n, eval_n);
    const int64_t v = state.version + 1;
    Run(FileWritten{Work::kWriteTrain, v, true, ""});
    const std::string model = "/output/train/" + std::to_string(v) + "/index.pkl";
    auto w = All<WriteSamples>(Run(WorkerReported{Worker("train", "completed", {{"pkl", model}})}));
    EXPECT_EQ(w.size(), 1u);
    Run(FileWritten{Work::kWriteEval, v, true, ""});
    const std::string result = "/output/eval/" + std::to_string(v) + "/index.pkl";
    Run(WorkerReported{Worker("eval", "completed", {{"pkl", result}})});
    Run(ModelCopied{true, ""});
    EXPECT_EQ(state.phase, Phase::kTrain);
    EXPECT_EQ(state.version, v);
    return w.empty() ? WriteSamples{} : w[0];
  }

  LlJob job;
  Trigger train;
  bool csv = true;  // the ATCII dataset is csv
  bool dataset_s3 = false;
  State state;
  Now now;
  Output issued;
};

// ---- worker reports: one row per (where, kind, status) ------------------------------------

struct ReportRow {
  const char* name;
  At at;
  std::string kind;
  std::string status;
  std::vector<ModelRef> results;
  bool unchanged;  // the state must equal the state before
  // Checked when !unchanged:
  Phase phase;
  Work work;
  bool awaited;
  // Action counts, always checked.
  size_t writes;
  size_t copies;
  size_t warns;
};

void PrintTo(const ReportRow& r, std::ostream* os) { *os << r.name; }

class LlReportTable : public LlJobTest, public ::testing::WithParamInterface<ReportRow> {};

TEST_P(LlReportTable, Row) {
  const ReportRow& row = GetParam();
  Reach(row.at);
  const State before = state;
  Output o = Run(WorkerReported{Worker(row.kind, row.status, row.results)});
  if (row.unchanged) {
    EXPECT_EQ(state, before);
  } else {
    EXPECT_EQ(state.phase, row.phase);
    EXPECT_EQ(state.work, row.work);
    EXPECT_EQ(state.worker_awaited, row.awaited);
  }
  EXPECT_EQ(All<WriteSamples>(o).size(), row.writes);
  EXPECT_EQ(All<CopyModel>(o).size(), row.copies);
  EXPECT_EQ(Logs(o, Log::Level::kWarn), row.warns);
  EXPECT_TRUE(All<SendReport>(o).empty()) << "a worker report never produces a ready/failed";
  EXPECT_EQ(state.version, 1 - (row.at == At::kTrainIdle || row.at == At::kTrainWriting));
}

const ModelRef kOther{"pkl", "/output/x/index.pkl", {}};

// clang-format off
// Row: name, where, kind, status, results ->
//      unchanged | (phase, work, awaited); counts of WriteSamples, CopyModel, warnings.
INSTANTIATE_TEST_SUITE_P(WorkerReports, LlReportTable, ::testing::Values(
  // train phase
  ReportRow{"TrainAwaited_TrainCompleted_WritesEval", At::kTrainAwaited, "train", "completed",
            {kTrainModel}, false, Phase::kEval, Work::kWriteEval, false, 1, 0, 0},
  // A failed train's 501 samples return to pending, so the trigger fires again at once.
  ReportRow{"TrainAwaited_TrainFailedNoResults_BackToTrain", At::kTrainAwaited, "train", "failed",
            {}, false, Phase::kTrain, Work::kWriteTrain, false, 1, 0, 1},
  ReportRow{"TrainAwaited_TrainFailedWithResults_BackToTrain", At::kTrainAwaited, "train", "failed",
            {kTrainModel}, false, Phase::kTrain, Work::kWriteTrain, false, 1, 0, 1},
  ReportRow{"TrainAwaited_TrainRunning_NoChange", At::kTrainAwaited, "train", "running",
            {}, true, {}, {}, {}, 0, 0, 0},
  ReportRow{"TrainAwaited_EvalCompleted_KindMismatchIgnored", At::kTrainAwaited,
            "eval", "completed", {kEvalResult}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"TrainAwaited_EvalFailed_KindMismatchIgnored", At::kTrainAwaited, "eval", "failed",
            {}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"TrainAwaited_UnknownKindIgnored", At::kTrainAwaited, "inference", "completed",
            {kOther}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"TrainIdle_TrainCompleted_NothingDispatchedIgnored", At::kTrainIdle,
            "train", "completed", {kTrainModel}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"TrainIdle_TrainFailed_NothingDispatchedIgnored", At::kTrainIdle, "train", "failed",
            {}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"TrainWriting_TrainCompleted_ReadyNotSentIgnored", At::kTrainWriting,
            "train", "completed", {kTrainModel}, true, {}, {}, {}, 0, 0, 1},
  // eval phase
  ReportRow{"EvalAwaited_EvalCompleted_Deploys", At::kEvalAwaited, "eval", "completed",
            {kEvalResult}, false, Phase::kDeploy, Work::kDeploy, false, 0, 1, 0},
  ReportRow{"EvalAwaited_EvalFailedNoResults_BackToTrain", At::kEvalAwaited, "eval", "failed",
            {}, false, Phase::kTrain, Work::kNone, false, 0, 0, 1},
  ReportRow{"EvalAwaited_EvalFailedWithResults_BackToTrain", At::kEvalAwaited, "eval", "failed",
            {kEvalResult}, false, Phase::kTrain, Work::kNone, false, 0, 0, 1},
  ReportRow{"EvalAwaited_TrainCompleted_KindMismatchIgnored", At::kEvalAwaited,
            "train", "completed", {kTrainModel}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"EvalAwaited_TrainFailed_KindMismatchIgnored", At::kEvalAwaited, "train", "failed",
            {}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"EvalWriting_EvalCompleted_ReadyNotSentIgnored", At::kEvalWriting, "eval", "completed",
            {kEvalResult}, true, {}, {}, {}, 0, 0, 1},
  // deploy phase
  ReportRow{"Deploying_EvalCompleted_DuplicateIgnored", At::kDeploying, "eval", "completed",
            {kEvalResult}, true, {}, {}, {}, 0, 0, 1},
  ReportRow{"Deploying_EvalFailed_Ignored", At::kDeploying, "eval", "failed",
            {}, true, {}, {}, {}, 0, 0, 1}),
  [](const ::testing::TestParamInfo<ReportRow>& i) { return std::string(i.param.name); });
// clang-format on

// ---- completions and Resume: one row per (where, event) ------------------------------------

enum class Reissue { kNothing, kSameAsIssued };

struct EventRow {
  const char* name;
  At at;
  Event event;
  Reissue reissue;
};

void PrintTo(const EventRow& r, std::ostream* os) { *os << r.name; }

class LlEventTable : public LlJobTest, public ::testing::WithParamInterface<EventRow> {};

// Every row leaves the state unchanged and sends nothing; Resume re-issues exactly the in-flight
// work (B15: the state alone is enough to resume).
TEST_P(LlEventTable, Row) {
  const EventRow& row = GetParam();
  Reach(row.at);
  const State before = state;
  Output o = Run(row.event);
  EXPECT_EQ(state, before);
  EXPECT_TRUE(All<SendReport>(o).empty());
  if (row.reissue == Reissue::kNothing) {
    EXPECT_TRUE(o.actions.empty());
    return;
  }
  auto want_w = All<WriteSamples>(issued);
  auto got_w = All<WriteSamples>(o);
  ASSERT_EQ(got_w.size(), want_w.size());
  for (size_t i = 0; i < got_w.size(); ++i) ExpectSameWrite(got_w[i], want_w[i]);
  auto want_c = All<CopyModel>(issued);
  auto got_c = All<CopyModel>(o);
  ASSERT_EQ(got_c.size(), want_c.size());
  for (size_t i = 0; i < got_c.size(); ++i) {
    EXPECT_EQ(got_c[i].src_url, want_c[i].src_url);
    EXPECT_EQ(got_c[i].dst_url, want_c[i].dst_url);
  }
  EXPECT_EQ(got_w.size() + got_c.size(), 1u);
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(Events, LlEventTable, ::testing::Values(
  EventRow{"Resume_TrainIdle", At::kTrainIdle,
           Resume{}, Reissue::kNothing},
  EventRow{"Resume_TrainWriting_RewritesTrainFile", At::kTrainWriting,
           Resume{}, Reissue::kSameAsIssued},
  EventRow{"Resume_TrainAwaited", At::kTrainAwaited,
           Resume{}, Reissue::kNothing},
  EventRow{"Resume_EvalWriting_RewritesEvalFile", At::kEvalWriting,
           Resume{}, Reissue::kSameAsIssued},
  EventRow{"Resume_EvalAwaited", At::kEvalAwaited,
           Resume{}, Reissue::kNothing},
  EventRow{"Resume_Deploying_RecopiesModel", At::kDeploying,
           Resume{}, Reissue::kSameAsIssued},
  EventRow{"Tick_TrainIdle", At::kTrainIdle,
           Tick{}, Reissue::kNothing},
  EventRow{"Tick_TrainAwaited", At::kTrainAwaited,
           Tick{}, Reissue::kNothing},
  EventRow{"Stale_TrainWriting_WrongRound", At::kTrainWriting,
           FileWritten{Work::kWriteTrain, 2, true, ""}, Reissue::kNothing},
  EventRow{"Stale_TrainWriting_EvalWritten", At::kTrainWriting,
           FileWritten{Work::kWriteEval, 1, true, ""}, Reissue::kNothing},
  EventRow{"Stale_TrainWriting_Copied", At::kTrainWriting,
           ModelCopied{true, ""}, Reissue::kNothing},
  EventRow{"Stale_TrainAwaited_DuplicateTrainWritten", At::kTrainAwaited,
           FileWritten{Work::kWriteTrain, 1, true, ""}, Reissue::kNothing},
  EventRow{"Stale_EvalWriting_TrainWritten", At::kEvalWriting,
           FileWritten{Work::kWriteTrain, 2, true, ""}, Reissue::kNothing},
  EventRow{"Stale_EvalWriting_WrongRound", At::kEvalWriting,
           FileWritten{Work::kWriteEval, 2, true, ""}, Reissue::kNothing},
  EventRow{"Stale_EvalAwaited_DuplicateEvalWritten", At::kEvalAwaited,
           FileWritten{Work::kWriteEval, 1, true, ""}, Reissue::kNothing},
  EventRow{"Stale_EvalAwaited_Copied", At::kEvalAwaited,
           ModelCopied{false, "x"}, Reissue::kNothing},
  EventRow{"Stale_Deploying_EvalWritten", At::kDeploying,
           FileWritten{Work::kWriteEval, 1, false, "x"}, Reissue::kNothing},
  EventRow{"Stale_TrainIdle_Copied", At::kTrainIdle,
           ModelCopied{true, ""}, Reissue::kNothing}),
  [](const ::testing::TestParamInfo<EventRow>& i) { return std::string(i.param.name); });
// clang-format on

// ---- the train phase ----------------------------------------------------------------------

TEST_F(LlJobTest, TrainTrigger_BelowThreshold_NoAction) {
  Output o = Ingest(400, 100);
  EXPECT_TRUE(o.actions.empty());
  EXPECT_EQ(state.train_pending, (SpoolRange{0, 4000, 400}));
  EXPECT_EQ(state.eval_open, (SpoolRange{0, 1000, 100}));
  EXPECT_EQ(state.samples_seen, 500);
}

TEST_F(LlJobTest, TrainTrigger_Fires_WritesVersionFileBeforeReporting) {
  Output o = Ingest(501, 125);
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].stage, Stage::kTrain);
  EXPECT_EQ(w[0].round, 1);
  EXPECT_EQ(w[0].url, "/output/data/train/1/data.csv");
  EXPECT_EQ(w[0].spool, SpoolKind::kTrain);
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 5010, 501})});
  EXPECT_TRUE(All<SendReport>(o).empty()) << "LL-1 waits for the file";
  EXPECT_EQ(state.version, 0) << "the version is committed by the write";
  EXPECT_EQ(state.work, Work::kWriteTrain);
}

TEST_F(LlJobTest, LL1_ExactReport) {
  Reach(At::kTrainWriting);
  Output o = Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  ExpectReport(
      OneReport(o),
      StatusReport{
          "train", "ready", true, {}, "/output/data/train/1/data.csv", "", "/output/train/1"});
  EXPECT_EQ(state.version, 1);
  EXPECT_TRUE(state.worker_awaited);
  EXPECT_EQ(state.train_pending, (SpoolRange{5010, 5010, 0}));
  EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1250, 125})});
  EXPECT_EQ(state.eval_open, (SpoolRange{1250, 1250, 0}));
  EXPECT_TRUE(All<SendReport>(Run(Tick{})).empty()) << "one LL-1 per version";
}

TEST_F(LlJobTest, SamplesArrivingDuringTrainWrite_StayPending) {
  Reach(At::kTrainWriting);
  Ingest(7, 3);
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  EXPECT_EQ(state.train_pending, (SpoolRange{5010, 5080, 7}));
  EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1280, 128})});
}

TEST_F(LlJobTest, SamplesArrivingWhileTrainRuns_DoNotTriggerAgain) {
  Reach(At::kTrainAwaited);
  Output o = Ingest(900, 100);
  EXPECT_TRUE(All<WriteSamples>(o).empty()) << "one train at a time";
  EXPECT_EQ(state.train_pending.count, 900);
}

TEST_F(LlJobTest, Resume_AfterMoreSamples_RewritesTheSameRange) {
  Reach(At::kTrainWriting);
  Ingest(50, 0);
  auto w = All<WriteSamples>(Run(Resume{}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 5010, 501})});
}

TEST_F(LlJobTest, DatasetUnknown_BlockedOnceThenFires) {
  Spec s = MakeSpec();
  s.dataset_known = false;
  Output o = Step(s, state, SamplesIngested{626, 501, 5010, 125, 1250}, now);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  ASSERT_EQ(All<Log>(o).size(), 1u);
  EXPECT_NE(All<Log>(o)[0].text.find("default/lifelong-dataset"), std::string::npos);
  state = o.state;
  Output again = Step(s, state, Tick{}, now);
  EXPECT_TRUE(again.actions.empty()) << "a blocked condition is logged once";
  state = again.state;
  EXPECT_EQ(All<WriteSamples>(Run(JobChanged{})).size(), 1u) << "fires once the Dataset is known";
  EXPECT_EQ(state.last_error, "");
}

TEST_F(LlJobTest, DatasetUnknown_EvalWriteWaits) {
  Reach(At::kTrainAwaited);
  Spec s = MakeSpec();
  s.dataset_known = false;
  Output o = Step(s, state, WorkerReported{Worker("train", "completed", {kTrainModel})}, now);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_EQ(o.state.phase, Phase::kEval);
  state = o.state;
  EXPECT_EQ(All<WriteSamples>(Run(Tick{})).size(), 1u);
}

TEST_F(LlJobTest, TrainTrigger_OutsideTimerWindow_NoFire) {
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

// ---- eval and deploy ----------------------------------------------------------------------

// An S3 txt dataset: train and eval files get a dataIndex.txt and the ready reports its URL
// (§7.4); an S3 csv dataset never gets one.
TEST_F(LlJobTest, S3TxtDataset_DataIndexBesideTrainAndEvalFiles) {
  csv = false;
  dataset_s3 = true;
  job.spec.output_dir = "s3://b/out/";
  Reach(At::kTrainWriting);
  Output o = Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  ExpectReport(OneReport(o), StatusReport{"train",
                                          "ready",
                                          true,
                                          {},
                                          "s3://b/out/data/train/1/data.txt",
                                          "s3://b/out/data/train/1/dataIndex.txt",
                                          "s3://b/out/train/1"});
  const ModelRef model{"pkl", "s3://b/out/train/1/index.pkl", {}};
  auto w = All<WriteSamples>(Run(WorkerReported{Worker("train", "completed", {model})}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "s3://b/out/data/eval/1/data.txt");
  EXPECT_EQ(w[0].index_url, "s3://b/out/data/eval/1/dataIndex.txt");
  o = Run(FileWritten{Work::kWriteEval, 1, true, ""});
  ExpectReport(OneReport(o), StatusReport{"eval",
                                          "ready",
                                          true,
                                          {model},
                                          "s3://b/out/data/eval/1/data.txt",
                                          "s3://b/out/data/eval/1/dataIndex.txt",
                                          "s3://b/out/eval/1"});
}

TEST_F(LlJobTest, S3CsvDataset_NoDataIndex) {
  dataset_s3 = true;
  auto w = All<WriteSamples>(Ingest(501, 125));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/train/1/data.csv");
  EXPECT_EQ(w[0].index_url, "");
}

TEST_F(LlJobTest, TrainCompleted_WritesEvalFileOfTheSameVersion) {
  Reach(At::kTrainAwaited);
  Ingest(0, 30);
  auto w = All<WriteSamples>(Run(WorkerReported{Worker("train", "completed", {kTrainModel})}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].stage, Stage::kEval);
  EXPECT_EQ(w[0].round, 1);
  EXPECT_EQ(w[0].url, "/output/data/eval/1/data.csv");
  EXPECT_EQ(w[0].spool, SpoolKind::kEval);
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 1250, 125})})
      << "samples after the train trigger belong to the next version";
  EXPECT_EQ(state.train_model, kTrainModel);
}

TEST_F(LlJobTest, LL3_ExactReport) {
  Reach(At::kEvalWriting);
  Output o = Run(FileWritten{Work::kWriteEval, 1, true, ""});
  ExpectReport(OneReport(o), StatusReport{"eval",
                                          "ready",
                                          true,
                                          {ModelRef{"pkl", "/output/train/1/index.pkl"}},
                                          "/output/data/eval/1/data.csv",
                                          "",
                                          "/output/eval/1"});
  EXPECT_TRUE(state.worker_awaited);
  EXPECT_EQ(state.phase, Phase::kEval);
}

TEST_F(LlJobTest, LL3_TrainMetricsAreNotCarried) {
  Reach(At::kTrainAwaited);
  ModelRef with_metrics = kTrainModel;
  with_metrics.metrics["summer_2"] = MetricValue::Other();
  Run(WorkerReported{Worker("train", "completed", {with_metrics})});
  StatusReport r = OneReport(Run(FileWritten{Work::kWriteEval, 1, true, ""}));
  ASSERT_EQ(r.input_models.size(), 1u);
  EXPECT_TRUE(r.input_models[0].metrics.empty());
  EXPECT_EQ(r.input_models[0].url, kTrainModel.url);
}

TEST_F(LlJobTest, EvalCompleted_CopiesResultToDeployIndex) {
  Reach(At::kEvalAwaited);
  Output o = Run(WorkerReported{Worker("eval", "completed", {kEvalResult})});
  auto c = All<CopyModel>(o);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, "/output/eval/1/index.pkl");
  EXPECT_EQ(c[0].dst_url, "/output/deploy/index.pkl");
  EXPECT_TRUE(All<SendReport>(o).empty()) << "LL-5 only after the copy";
  EXPECT_EQ(state.phase, Phase::kDeploy);
}

TEST_F(LlJobTest, LL5_ExactReport) {
  Reach(At::kDeploying);
  Output o = Run(ModelCopied{true, ""});
  ExpectReport(
      OneReport(o),
      StatusReport{"deploy", "ready", true, {ModelRef{"pkl", "/output/eval/1/index.pkl"}}});
  EXPECT_EQ(state.phase, Phase::kTrain);
  EXPECT_EQ(state.work, Work::kNone);
  EXPECT_FALSE(state.worker_awaited);
  ASSERT_EQ(state.deployments.size(), 1u);
  EXPECT_EQ(state.deployments[0],
            (Deployment{1, "/output/eval/1/index.pkl", "2026-11-29T10:00:00Z"}));
}

TEST_F(LlJobTest, LL6_ExactReport) {
  Reach(At::kDeploying);
  Output o = Run(ModelCopied{false, "Permission denied"});
  ExpectReport(OneReport(o), StatusReport{"deploy", "failed"});
  EXPECT_EQ(state.phase, Phase::kTrain);
  EXPECT_EQ(state.work, Work::kNone);
  EXPECT_TRUE(state.deployments.empty());
  EXPECT_EQ(state.last_error, "Permission denied");
  EXPECT_EQ(Logs(o, Log::Level::kError), 1u);
}

TEST_F(LlJobTest, DeployThenNextVersion_UsesVersion2Everywhere) {
  Reach(At::kDeploying);
  Run(ModelCopied{true, ""});
  Output t = Ingest(501, 40);
  auto w = All<WriteSamples>(t);
  ASSERT_EQ(w.size(), 1u) << "no deploy trigger: back to the train trigger at once";
  EXPECT_EQ(w[0].url, "/output/data/train/2/data.csv");
  ExpectReport(
      OneReport(Run(FileWritten{Work::kWriteTrain, 2, true, ""})),
      StatusReport{
          "train", "ready", true, {}, "/output/data/train/2/data.csv", "", "/output/train/2"});
  const ModelRef m2{"pkl", "/output/train/2/index.pkl"};
  Run(WorkerReported{Worker("train", "completed", {m2})});
  ExpectReport(
      OneReport(Run(FileWritten{Work::kWriteEval, 2, true, ""})),
      StatusReport{
          "eval", "ready", true, {m2}, "/output/data/eval/2/data.csv", "", "/output/eval/2"});
}

TEST_F(LlJobTest, DeployCopyFailed_NextVersionStillRuns) {
  Reach(At::kDeploying);
  Run(ModelCopied{false, "No space left on device"});
  EXPECT_EQ(All<WriteSamples>(Ingest(501, 0)).size(), 1u);
  EXPECT_EQ(state.work, Work::kWriteTrain);
}

TEST_F(LlJobTest, EvalWriteFails_RetriesAfterBackoff) {
  Reach(At::kEvalWriting);
  Output f = Run(FileWritten{Work::kWriteEval, 1, false, "Read-only file system"});
  EXPECT_TRUE(All<SendReport>(f).empty());
  EXPECT_EQ(state.phase, Phase::kEval);
  EXPECT_EQ(state.work, Work::kNone);
  EXPECT_TRUE(All<WriteSamples>(Run(Tick{})).empty()) << "no retry before the backoff";
  now.unix_ms += 10'000;
  auto w = All<WriteSamples>(Run(Tick{}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/eval/1/data.csv");
}

// ---- §8.5 LL items ------------------------------------------------------------------------

TEST_F(LlJobTest, L1_FailedReportWithoutResultsRecovers) {
  Reach(At::kTrainAwaited);
  Ingest(20, 5);
  Output o = Run(WorkerReported{Worker("train", "failed", {})});
  EXPECT_EQ(state.phase, Phase::kTrain);
  EXPECT_FALSE(state.worker_awaited);
  // The failed version's samples are pending again, with those that arrived meanwhile, so the
  // trigger fires at once for the next version number.
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].round, 2);
  EXPECT_EQ(w[0].url, "/output/data/train/2/data.csv");
  EXPECT_EQ(w[0].ranges, std::vector<SpoolRange>{(SpoolRange{0, 5210, 521})});
  // Its eval window is open again: one window, every sample once.
  EXPECT_TRUE(state.eval_windows.empty());
  EXPECT_EQ(state.eval_open, (SpoolRange{0, 1300, 130}));
  ExpectReport(
      OneReport(Run(FileWritten{Work::kWriteTrain, 2, true, ""})),
      StatusReport{
          "train", "ready", true, {}, "/output/data/train/2/data.csv", "", "/output/train/2"});
  EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1300, 130})});
}

TEST_F(LlJobTest, L1_FailedTrainBelowThreshold_WaitsForTrigger) {
  TriggerSpec ts;
  ts.op = ">";
  ts.threshold = 600;
  ts.metric = "num_of_samples";
  train = MustCompile(ts);
  Ingest(601, 0);
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  ts.threshold = 1000;  // e.g. the job was edited meanwhile
  train = MustCompile(ts);
  Output o = Run(WorkerReported{Worker("train", "failed", {})});
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  EXPECT_EQ(state.train_pending.count, 601);
  EXPECT_EQ(All<WriteSamples>(Ingest(400, 0)).at(0).round, 2);
}

TEST_F(LlJobTest, L2_EvalFailedRecovers) {
  Reach(At::kEvalAwaited);
  Output o = Run(WorkerReported{Worker("eval", "failed", {})});
  EXPECT_EQ(state.phase, Phase::kTrain);
  EXPECT_FALSE(state.worker_awaited);
  EXPECT_EQ(state.version, 1);
  EXPECT_TRUE(All<Log>(Run(Tick{})).empty()) << "no error every tick";
  EXPECT_EQ(state.eval_windows, std::vector<SpoolRange>{(SpoolRange{0, 1250, 125})})
      << "the evaluated window stays for later evals";
  Ingest(501, 40);
  Run(FileWritten{Work::kWriteTrain, 2, true, ""});
  auto w = All<WriteSamples>(Run(WorkerReported{Worker("train", "completed", {kOther})}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].url, "/output/data/eval/2/data.csv") << "version numbers are never reused";
  EXPECT_EQ(w[0].ranges,
            (std::vector<SpoolRange>{SpoolRange{0, 1250, 125}, SpoolRange{1250, 1650, 40}}));
}

TEST_F(LlJobTest, L2_EvalFailedConditionRecovers) {
  Reach(At::kEvalAwaited);
  job.conditions.push_back(Ready(Stage::kEval, "/output/eval/1"));
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kRunning));
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kFailed));
  Output o = Run(JobChanged{});
  EXPECT_EQ(state.phase, Phase::kTrain);
  EXPECT_FALSE(state.worker_awaited);
  EXPECT_EQ(Logs(o, Log::Level::kWarn), 1u);
  EXPECT_EQ(All<WriteSamples>(Ingest(501, 0)).at(0).round, 2);
}

TEST_F(LlJobTest, L3_KindCaseInsensitive) {
  Reach(At::kTrainAwaited);
  Run(WorkerReported{Worker("Train", "COMPLETED", {kTrainModel})});
  EXPECT_EQ(state.phase, Phase::kEval);
  Run(FileWritten{Work::kWriteEval, 1, true, ""});
  Run(WorkerReported{Worker("EVAL", "Completed", {kEvalResult})});
  EXPECT_EQ(state.phase, Phase::kDeploy);
}

TEST_F(LlJobTest, L3_FailedStatusCaseInsensitive) {
  Reach(At::kEvalAwaited);
  Run(WorkerReported{Worker("Eval", "FAILED", {})});
  EXPECT_EQ(state.phase, Phase::kTrain);
}

TEST_F(LlJobTest, L4_DeployReportHasNoRootfsPrefix) {
  // The core only sees host paths (the adapter joins the rootfs): what it copies and reports is
  // exactly the worker's URL, and the recorded result is not mutated by the deploy.
  Reach(At::kDeploying);
  auto c = All<CopyModel>(issued);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, "/output/eval/1/index.pkl");
  EXPECT_EQ(c[0].dst_url, "/output/deploy/index.pkl");
  StatusReport r = OneReport(Run(ModelCopied{true, ""}));
  ASSERT_EQ(r.input_models.size(), 1u);
  EXPECT_EQ(r.input_models[0].url, "/output/eval/1/index.pkl");
  EXPECT_EQ(state.eval_result, kEvalResult);
  EXPECT_EQ(state.deployments.at(0).url, "/output/eval/1/index.pkl");
}

TEST_F(LlJobTest, L5_FailedWriteBurnsNoVersion) {
  Reach(At::kTrainWriting);
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
  EXPECT_EQ(w[0].url, "/output/data/train/1/data.csv");
  EXPECT_EQ(OneReport(Run(FileWritten{Work::kWriteTrain, 1, true, ""})).output_dir,
            "/output/train/1");
}

TEST_F(LlJobTest, L6_TwoResultsUsesFirst) {
  Reach(At::kTrainAwaited);
  const ModelRef pb{"pb", "/output/train/1/model.pb", {{"loss", MetricValue::Number(0.8)}}};
  const ModelRef ckpt{"ckpt", "/output/train/1", {}};
  Run(WorkerReported{Worker("train", "completed", {pb, ckpt})});
  EXPECT_EQ(state.phase, Phase::kEval);
  StatusReport r = OneReport(Run(FileWritten{Work::kWriteEval, 1, true, ""}));
  EXPECT_EQ(r.input_models, std::vector<ModelRef>{(ModelRef{"pb", "/output/train/1/model.pb"})});
  auto c = All<CopyModel>(
      Run(WorkerReported{Worker("eval", "completed", {kEvalResult, {"pb", "/models/old.pb"}})}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].src_url, kEvalResult.url);
}

TEST_F(LlJobTest, L8_CsvHeaderFlagged) {
  // The caller passes csv=true for a csv dataset whatever the case of `format`: every file of
  // the version is data.csv with the header line.
  auto t = All<WriteSamples>(Ingest(501, 10));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0].csv_header);
  EXPECT_EQ(t[0].url, "/output/data/train/1/data.csv");
  Run(FileWritten{Work::kWriteTrain, 1, true, ""});
  auto e = All<WriteSamples>(Run(WorkerReported{Worker("train", "completed", {kTrainModel})}));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_TRUE(e[0].csv_header);
  EXPECT_EQ(e[0].url, "/output/data/eval/1/data.csv");
}

TEST_F(LlJobTest, TxtDataset_WritesDataTxtWithoutHeader) {
  csv = false;
  auto t = All<WriteSamples>(Ingest(501, 10));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0].csv_header);
  EXPECT_EQ(t[0].url, "/output/data/train/1/data.txt");
  EXPECT_EQ(OneReport(Run(FileWritten{Work::kWriteTrain, 1, true, ""})).data_url,
            "/output/data/train/1/data.txt");
  auto e = All<WriteSamples>(Run(WorkerReported{Worker("train", "completed", {kTrainModel})}));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].csv_header);
  EXPECT_EQ(e[0].url, "/output/data/eval/1/data.txt");
  EXPECT_EQ(OneReport(Run(FileWritten{Work::kWriteEval, 1, true, ""})).data_url,
            "/output/data/eval/1/data.txt");
}

TEST_F(LlJobTest, B10_ResultWithoutUrlRejected) {
  Reach(At::kTrainAwaited);
  WorkerReport w = Worker("train", "completed", {kTrainModel});
  w.results_error = "results[0].url: expected a string";
  const State before = state;
  Output o = Run(WorkerReported{w});
  EXPECT_EQ(state, before);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  ASSERT_EQ(All<Log>(o).size(), 1u);
  EXPECT_EQ(All<Log>(o)[0].level, Log::Level::kError);
  EXPECT_NE(All<Log>(o)[0].text.find("train-worker-p0x1c"), std::string::npos);
  EXPECT_NE(All<Log>(o)[0].text.find("results[0].url"), std::string::npos);
}

TEST_F(LlJobTest, B10_EmptyResultsOrEmptyUrlRejected) {
  Reach(At::kEvalAwaited);
  const State before = state;
  Output empty = Run(WorkerReported{Worker("eval", "completed", {})});
  EXPECT_EQ(state, before);
  ASSERT_EQ(All<Log>(empty).size(), 1u);
  EXPECT_NE(All<Log>(empty)[0].text.find("results"), std::string::npos);
  Output no_url = Run(WorkerReported{Worker("eval", "completed", {{"pkl", ""}})});
  EXPECT_EQ(state, before);
  EXPECT_TRUE(All<CopyModel>(no_url).empty());
  ASSERT_EQ(All<Log>(no_url).size(), 1u);
  EXPECT_NE(All<Log>(no_url)[0].text.find("results[0].url"), std::string::npos);
}

TEST_F(LlJobTest, B2_EvalWindowsEachSampleOnce) {
  int64_t begin_of[8] = {0};  // eval spool offset where version k's window starts
  for (int k = 1; k <= 7; ++k) {
    begin_of[k] = state.eval_open.begin;
    WriteSamples w = FullCycle(501, 10 * k);
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

// ---- GM conditions (failure recovery only) ------------------------------------------------

TEST_F(LlJobTest, GmFailedConditionRecoversOnce) {
  Reach(At::kTrainAwaited);
  job.conditions.push_back(Ready(Stage::kTrain, "/output/train/1"));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kStarting));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kFailed));
  Output o = Run(JobChanged{});
  EXPECT_EQ(Logs(o, Log::Level::kWarn), 1u);
  EXPECT_NE(All<Log>(o).at(0).text.find("condition #3"), std::string::npos);
  auto w = All<WriteSamples>(o);
  ASSERT_EQ(w.size(), 1u) << "back to train; the returned samples fire the trigger";
  EXPECT_EQ(w[0].round, 2);
  Run(FileWritten{Work::kWriteTrain, 2, true, ""});
  ASSERT_TRUE(state.worker_awaited);
  // The GM re-sends the job: unchanged, then with (Train, Waiting) appended.
  const State before = state;
  EXPECT_TRUE(Run(JobChanged{}).actions.empty());
  EXPECT_EQ(state, before);
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  EXPECT_TRUE(Run(JobChanged{}).actions.empty());
  EXPECT_TRUE(state.worker_awaited) << "the answered Failed does not reset version 2";
  EXPECT_EQ(state.version, 2);
  EXPECT_EQ(state.conditions_seen, 5);
}

TEST_F(LlJobTest, GmFailedCondition_AfterWorkerFailure_IsNotAboutTheNewVersion) {
  Reach(At::kTrainAwaited);
  Run(WorkerReported{Worker("train", "failed", {})});  // forwarded; the GM appends a Failed
  Run(FileWritten{Work::kWriteTrain, 2, true, ""});
  ASSERT_TRUE(state.worker_awaited);
  job.conditions.push_back(Ready(Stage::kTrain, "/output/train/1"));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kFailed));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  job.conditions.push_back(Ready(Stage::kTrain, "/output/train/2"));
  Output o = Run(JobChanged{});
  EXPECT_TRUE(state.worker_awaited) << "version 1's failure does not abort version 2";
  EXPECT_EQ(Logs(o, Log::Level::kInfo), 1u);
  EXPECT_TRUE(All<WriteSamples>(o).empty());
  // Version 2's own failure does.
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kFailed));
  Run(JobChanged{});
  EXPECT_FALSE(state.worker_awaited);
  EXPECT_EQ(state.phase, Phase::kTrain);
}

TEST_F(LlJobTest, GmFailedCondition_OtherStage_Ignored) {
  Reach(At::kEvalAwaited);
  job.conditions.push_back(Ready(Stage::kTrain, "/output/train/1"));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kFailed));  // pod died after report
  const State before = state;
  Run(JobChanged{});
  EXPECT_TRUE(state.worker_awaited);
  EXPECT_EQ(state.phase, Phase::kEval);
  EXPECT_EQ(state.conditions_seen, before.conditions_seen + 2);
}

TEST_F(LlJobTest, GmFailedCondition_HistoryAtFirstSight_NeverActsLater) {
  job.conditions.push_back(Ready(Stage::kTrain, "/output/train/1"));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kFailed));
  job.conditions.push_back(Cond(Stage::kTrain, ConditionType::kWaiting));
  Run(JobChanged{});
  EXPECT_EQ(state.conditions_seen, 4);
  Reach(At::kTrainAwaited);  // version 1 again: its outputDir matches the old Ready
  Run(JobChanged{});
  EXPECT_TRUE(state.worker_awaited);
}

TEST_F(LlJobTest, GmNonFailedConditions_NeverDriveTheJob) {
  job.conditions.push_back(Cond(Stage::kEval, ConditionType::kWaiting));
  job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kWaiting));
  job.conditions.push_back(Cond(Stage::kDeploy, ConditionType::kFailed));
  Output o = Run(JobChanged{});
  EXPECT_TRUE(o.actions.empty());
  EXPECT_EQ(state.phase, Phase::kTrain);
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

}  // namespace
}  // namespace sedna::core::ll

namespace sedna::core::ll {
namespace {

// A train worker that fails at once must not be restarted in a tight loop: the first failure is
// retried at once, consecutive ones back off 1 s, 2 s, 4 s ... capped at 60 s.
TEST(LlBackoffTest, ConsecutiveTrainFailuresBackOff) {
  LlJob job;
  job.meta.name = "j";
  job.meta.ns = "default";
  job.spec.output_dir = "/output";
  job.spec.train_prob = 0.8;
  TriggerSpec ts;
  ts.op = ">";
  ts.threshold = 10;
  ts.metric = "num_of_samples";
  auto trig = CompileTrigger(ts);
  ASSERT_TRUE(trig.ok());
  Spec spec{&job, &*trig, true, true};
  Now now{1'000'000, 600, "2026-11-29T10:00:00Z"};
  State st;
  auto step = [&](const Event& e) {
    Output o = Step(spec, st, e, now);
    st = o.state;
    int writes = 0;
    for (const auto& a : o.actions) writes += std::holds_alternative<WriteSamples>(a);
    return writes;
  };
  ASSERT_EQ(step(SamplesIngested{20, 20, 200, 0, 0}), 1);
  WorkerReport failed;
  failed.kind = "train";
  failed.status = "failed";
  int64_t expected_wait[] = {0, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000};
  for (int64_t wait : expected_wait) {
    ASSERT_EQ(step(FileWritten{Work::kWriteTrain, st.version + 1, true, ""}), 0);
    int writes = step(WorkerReported{failed});
    if (wait == 0) {
      EXPECT_EQ(writes, 1) << "the first failure retries at once";
      continue;
    }
    EXPECT_EQ(writes, 0) << "no retry before the backoff";
    EXPECT_EQ(st.retry_after_ms, now.unix_ms + wait);
    now.unix_ms += wait - 1;
    EXPECT_EQ(step(Tick{}), 0);
    now.unix_ms += 1;
    EXPECT_EQ(step(Tick{}), 1) << "retried after " << wait << " ms";
  }
}

}  // namespace
}  // namespace sedna::core::ll
