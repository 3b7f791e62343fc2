// Job records survive a restart field for field: every state field and the cursor round-trip.
#include "app/cluster/jobs/il_record.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sedna::app {
namespace {

dataset::IndexCursor SampleCursor() {
  dataset::IndexCursor c;
  c.path = "/rootfs/data/train.csv";
  c.dev = 2049;
  c.ino = 123456;
  c.offset = 4096;
  c.samples = 321;
  c.skip = 7;
  c.header_done = true;
  c.header = "a,b,\"c\"";
  c.tail_size = 4100;
  c.skipping = true;
  c.prefix_digest = 0xfedcba9876543210ULL;  // above 2^53: not exact as a JSON double
  c.prefix_samples = 300;
  return c;
}

void ExpectCursorEq(const dataset::IndexCursor& a, const dataset::IndexCursor& b) {
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.dev, b.dev);
  EXPECT_EQ(a.ino, b.ino);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.skip, b.skip);
  EXPECT_EQ(a.header_done, b.header_done);
  EXPECT_EQ(a.header, b.header);
  EXPECT_EQ(a.tail_size, b.tail_size);
  EXPECT_EQ(a.skipping, b.skipping);
  EXPECT_EQ(a.prefix_digest, b.prefix_digest);
  EXPECT_EQ(a.prefix_samples, b.prefix_samples);
  EXPECT_EQ(a.prefix_digest_known, b.prefix_digest_known);
}

// Every field away from its default.
IlRecord EveryFieldIl() {
  IlRecord r;
  auto& s = r.state;
  s.round = 4;
  s.samples_seen = 1700;
  s.train_pending = {100, 200, 10};
  s.eval_open = {50, 60, 1};
  s.eval_windows = {{0, 20, 2}, {20, 50, 3}};
  s.answered_train_waiting = 9;
  s.answered_eval_waiting = 11;
  s.work = core::il::Work::kDeploy;
  s.work_condition = 12;
  s.work_round = 3;
  s.work_layout = core::il::Layout::kV07;  // not the default
  s.work_range = {1, 2, 3};
  s.work_models = {{"pb", "/o/train/3/m.pb", {}}, {"pb", "/models/d.pb", {}}};
  s.trained = core::ModelRef{"pb", "/o/train/3/m.pb", {}};
  s.trained_base = core::ModelRef{"ckpt", "/o/train/3", {}};
  s.eval_outstanding = true;
  s.eval_round = 4;
  s.eval_models = s.work_models;
  s.last_eval_results = {
      {"pb", "/o/train/3/m.pb", {{"precision", core::MetricValue::List({0.5, 0.25})}}},
      {"pb",
       "/models/d.pb",
       {{"loss", core::MetricValue::Number(0.125)},
        {"f1", core::MetricValue::Other()},
        {"tiny", core::MetricValue::Number(1e-7)},
        {"huge", core::MetricValue::Number(-1.5e300)},
        {"whole", core::MetricValue::Number(3.0)},
        {"k\"ey\n", core::MetricValue::List({})}}}};
  s.last_decision = "deploying";
  s.decisions = 3;
  s.decided_round = 3;
  s.deployments = {{2, "/o/train/2/m.pb", "2026-11-29T10:00:00Z"}};
  s.retry_after_ms = 123;
  s.last_error = "disk full";
  s.pending_round_id = 11;
  s.eval_reported = true;
  s.eval_report = s.last_eval_results;
  s.pending_models = s.work_models;
  s.pending_models[0].devices = {"Ascend710"};
  s.eval_written_ms = 1700000000123;
  s.decided_round_id = 7;
  s.decided_at_ms = 1700000000000;
  s.decision_report = core::StatusReport{core::ReportPhase::kDeploy, core::ReportStatus::kReady,
                                         true, s.work_models};
  s.decided_by = "deploy-wait";
  s.answered_deploy_waiting = 8;
  s.answered_hot_update = 13;
  s.work_copies_done = 0;
  s.pending_round_key = 3;
  s.decided_round_key = 2;
  s.closed_round = 1;
  s.decided_rounds = {
      {1, core::StatusReport{core::ReportPhase::kDeploy, core::ReportStatus::kCompleted},
       1699999999000},
      {2, *s.decision_report, 1700000000000}};
  r.cursor = SampleCursor();
  return r;
}

TEST(IlRecordTest, RoundTripsEveryField) {
  const IlRecord r = EveryFieldIl();
  auto back = DecodeIlRecord(EncodeIlRecord(r));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state, r.state);
  ExpectCursorEq(back->cursor, r.cursor);
}

// Reports in records keep the text records have always had (IL "Deploy"/"Completed", LL
// "eval"/"ready"), so a record written before the report enums existed reads back, and one written
// now reads in an older LC.
TEST(IlRecordTest, ReportsKeepTheirWireSpellingInRecords) {
  IlRecord il;
  il.state.decision_report =
      core::StatusReport{core::ReportPhase::kDeploy, core::ReportStatus::kCompleted};
  il.state.decided_rounds = {
      {3, core::StatusReport{core::ReportPhase::kDeploy, core::ReportStatus::kFailed}, 9}};
  nlohmann::json j = nlohmann::json::parse(EncodeIlRecord(il));
  EXPECT_EQ(j["state"]["decision_report"]["phase"], "Deploy");
  EXPECT_EQ(j["state"]["decision_report"]["status"], "Completed");
  EXPECT_EQ(j["state"]["decided_rounds"][0]["report"]["status"], "Failed");
  j["state"]["decision_report"]["status"] = "Ready";  // as an older LC wrote it
  auto back = DecodeIlRecord(j.dump());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state.decision_report->status, core::ReportStatus::kReady);
  EXPECT_EQ(back->state.decided_rounds.at(0).report.status, core::ReportStatus::kFailed);
  j["state"]["decision_report"]["phase"] = "Inference";
  EXPECT_FALSE(DecodeIlRecord(j.dump()).ok()) << "a phase no LC wrote is a corrupt record";

  LlRecord ll;
  ll.state.answer = core::StatusReport{core::ReportPhase::kEval, core::ReportStatus::kReady};
  j = nlohmann::json::parse(EncodeLlRecord(ll));
  EXPECT_EQ(j["state"]["answer"]["phase"], "eval");
  EXPECT_EQ(j["state"]["answer"]["status"], "ready");
  j["state"]["answer"]["phase"] = "deploy";
  j["state"]["answer"]["status"] = "completed";
  auto lb = DecodeLlRecord(j.dump());
  ASSERT_TRUE(lb.ok()) << lb.message();
  EXPECT_EQ(lb->state.answer->phase, core::ReportPhase::kDeploy);
  EXPECT_EQ(lb->state.answer->status, core::ReportStatus::kCompleted);
}

// A record written before the G2 deploy decision: its outstanding eval becomes the pending round.
TEST(IlRecordTest, AnOldRecordsOutstandingEvalIsThePendingRound) {
  const std::string old =
      R"({"v":1,"state":{"round":3,"train_pending":[0,0,0],"eval_open":[0,0,0],)"
      R"("eval_windows":[],"answered_eval_waiting":9,"eval_outstanding":true,"eval_round":3,)"
      R"("eval_models":[{"format":"pb","url":"/o/train/2/m.pb"},{"format":"pb","url":"/d.pb"}]},)"
      R"("cursor":{}})";
  auto r = DecodeIlRecord(old);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->state.pending_round_id, 9);
  EXPECT_EQ(r->state.pending_models.size(), 2u);
  EXPECT_FALSE(r->state.eval_reported);
  EXPECT_EQ(r->state.decided_round_id, -1);
  // Before one decision per round ([D:I23]): no round identities, the index rules apply.
  EXPECT_EQ(r->state.pending_round_key, 0);
  EXPECT_EQ(r->state.decided_round_key, 0);
  EXPECT_EQ(r->state.closed_round, 0);
  EXPECT_TRUE(r->state.decided_rounds.empty());
}

// A record written before the layouts (docs/design-notes.md, "Both GM generations"): its write in
// flight started with the only layout there was, so a re-issue keeps data/eval/<round>.
TEST(IlRecordTest, AnOldRecordsWriteKeepsThe2021Layout_BadLayoutRefused) {
  const std::string old =
      R"({"v":1,"state":{"round":2,"train_pending":[0,0,0],"eval_open":[0,0,0],)"
      R"("eval_windows":[],"work":2,"work_condition":5,"work_round":2,)"
      R"("work_models":[{"format":"pb","url":"/o/train/1/m.pb"},{"format":"pb","url":"/d.pb"}]},)"
      R"("cursor":{}})";
  auto r = DecodeIlRecord(old);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->state.work, core::il::Work::kWriteEval);
  EXPECT_EQ(r->state.work_layout, core::il::Layout::k2021);
  std::string bad = old;
  bad.replace(bad.find(R"("work_round")"), 0, R"("work_layout":"v9",)");
  auto b = DecodeIlRecord(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.message().find("state.work_layout"), std::string::npos) << b.message();
}

LlRecord EveryFieldLl() {
  LlRecord r;
  auto& s = r.state;
  s.phase = core::ll::Phase::kDeploy;
  s.version = 5;
  s.samples_seen = 999;
  s.train_pending = {10, 20, 2};
  s.eval_open = {30, 40, 1};
  s.eval_windows = {{0, 30, 3}};
  s.train_range = {5, 10, 1};
  s.work = core::il::Work::kDeploy;
  s.work_condition = 21;
  s.work_models = {core::ModelRef{"pkl", "/o/eval/5/index.pkl", {}}};
  s.worker_awaited = false;
  s.eval_inputs = {core::ModelRef{"pkl", "/o/train/5/index.pkl", {}}};
  s.answered_train_waiting = 11;
  s.answered_eval_waiting = 16;
  s.answered_deploy_waiting = 9;
  s.answer_condition = 16;
  s.answer_at_ms = 1'700'000'000'123;
  s.answer = core::StatusReport{core::ReportPhase::kEval,
                                core::ReportStatus::kReady,
                                true,
                                {core::ModelRef{"pkl", "/o/train/5/index.pkl", {}}},
                                "/o/data/eval/5/data.csv",
                                "/o/data/eval/5/dataIndex.txt",
                                "/o/eval/5"};
  s.train_models = {core::ModelRef{"pkl", "/o/train/5/index.pkl", {}},
                    core::ModelRef{"ckpt", "/o/train/5", {}}};
  s.train_models_version = 5;
  s.eval_models = {core::ModelRef{"pkl", "/o/eval/5/index.pkl", {}}};
  s.eval_models_version = 4;
  s.conditions_seen = 17;
  s.deployments = {{4, "/o/eval/4/index.pkl", "2026-11-29T10:00:00Z"}};
  s.deploy_count = 4;
  s.consecutive_failures = 2;
  s.retry_after_ms = 77;
  s.last_error = "x";
  r.cursor = SampleCursor();
  return r;
}

TEST(IlRecordTest, LlRoundTripsEveryField) {
  LlRecord r = EveryFieldLl();
  auto& s = r.state;
  auto back = DecodeLlRecord(EncodeLlRecord(r));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state, r.state);
  ExpectCursorEq(back->cursor, r.cursor);
  // An answer without input (deploy completed) and no answer at all.
  s.answer = core::StatusReport{core::ReportPhase::kDeploy, core::ReportStatus::kCompleted};
  back = DecodeLlRecord(EncodeLlRecord(r));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state, r.state);
  s.answer.reset();
  back = DecodeLlRecord(EncodeLlRecord(r));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state, r.state);
}

// ---- records of the phase-machine LC (v 1): a job persisted by it resumes ----------------------

// An LL record as the LC before [D:I14] wrote it (EncodeLlRecord v 1), 3 conditions examined.
std::string V1Record(int phase, int work, bool awaited, const std::string& extra = "") {
  return R"({"v":1,"state":{"phase":)" + std::to_string(phase) +
         R"(,"version":1,"samples_seen":626,"train_pending":[5010,5010,0],)"
         R"("eval_open":[1250,1250,0],"eval_windows":[[0,1250,125]],"train_range":[0,5010,501],)"
         R"("work":)" +
         std::to_string(work) + R"(,"worker_awaited":)" + (awaited ? "true" : "false") +
         R"(,"conditions_seen":3,"deploy_count":2,"consecutive_failures":1,)"
         R"("deployments":[{"round":0,"url":"/output/eval/0/index.pkl","at":"t"}],)"
         R"("retry_after_ms":5,"last_error":"e")" +
         extra +
         R"(},"cursor":{"path":"/d/i.csv","dev":1,"ino":2,"offset":30,"samples":3,"skip":0,)"
         R"("header_done":true,"header":"h","tail_size":-1}})";
}

core::JobCondition Cond(core::Stage stage, core::ConditionType type, std::string output_dir = "",
                        std::vector<core::ModelRef> out = {}) {
  core::JobCondition c;
  c.stage = stage;
  c.type = type;
  c.data.output_dir = std::move(output_dir);
  c.data.has_output = !out.empty();
  c.data.output_models = std::move(out);
  return c;
}

struct MigrationRow {
  const char* name;
  int phase, work;  // old Phase and Work numbers
  bool awaited;
  std::string extra;  // train_model / eval_result
  // The conditions the GM sends after the upgrade ([0, 3) were examined by the old LC).
  std::vector<core::JobCondition> conditions;
  // What the condition-driven job does on them: "" nothing, "write-train", "write-eval", "copy".
  std::string does;
};

void PrintTo(const MigrationRow& r, std::ostream* os) { *os << r.name; }

class LlMigrationTable : public ::testing::TestWithParam<MigrationRow> {};

TEST_P(LlMigrationTable, Row) {
  using core::ConditionType;
  using core::Stage;
  const MigrationRow& row = GetParam();
  auto rec = DecodeLlRecord(V1Record(row.phase, row.work, row.awaited, row.extra));
  ASSERT_TRUE(rec.ok()) << rec.message();
  const auto& s = rec->state;
  // Kept as they were.
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(s.samples_seen, 626);
  EXPECT_EQ(s.train_pending, (core::il::SpoolRange{5010, 5010, 0}));
  EXPECT_EQ(s.eval_windows,
            std::vector<core::il::SpoolRange>{(core::il::SpoolRange{0, 1250, 125})});
  EXPECT_EQ(s.conditions_seen, 3);
  EXPECT_EQ(s.deploy_count, 2);
  EXPECT_EQ(s.deployments.size(), 1u);
  EXPECT_EQ(s.consecutive_failures, 1);
  EXPECT_EQ(s.work, core::il::Work::kNone) << "in-flight work is planned again on its Waiting";
  EXPECT_EQ(rec->cursor.header, "h");
  // Resumes: the GM's job as it is after the upgrade.
  core::LlJob job;
  job.meta = {"atcii", "default", "uid", {}};
  job.spec.output_dir = "/output";
  job.conditions = row.conditions;
  core::TriggerSpec ts;
  ts.op = ">";
  ts.threshold = 500;
  ts.metric = "num_of_samples";
  auto trig = core::CompileTrigger(ts);
  ASSERT_TRUE(trig.ok());
  core::ll::Spec spec;
  spec.job = &job;
  spec.train_trigger = &*trig;
  spec.dataset_known = true;
  spec.csv = true;
  core::il::Now now{1'000'000, 600, "2026-11-29T10:00:00Z"};
  core::ll::State st = s;
  // Enough train samples pending for the trigger (a train being written, old work 1, had not
  // consumed them).
  if (row.does == "write-train") st.train_pending = {0, 5010, 501};
  auto o = core::ll::Step(spec, st, core::il::Resume{}, now);
  std::string did;
  size_t reports = 0;
  for (const auto& a : o.actions) {
    if (auto* w = std::get_if<core::il::WriteSamples>(&a)) {
      did += w->stage == Stage::kTrain ? "write-train" : "write-eval";
      EXPECT_EQ(w->round, w->stage == Stage::kTrain ? 2 : 1) << "version 1 is committed";
    }
    if (std::get_if<core::il::CopyModel>(&a)) did += "copy";
    reports += std::holds_alternative<core::il::SendReport>(a);
  }
  EXPECT_EQ(did, row.does);
  EXPECT_EQ(reports, 0u) << "no answer is sent twice, and none before its work";
}

using core::ConditionType;
using core::Stage;
const std::vector<core::JobCondition> kTrainWaiting0 = {
    Cond(Stage::kTrain, ConditionType::kWaiting)};
// Round 1: the old LC's train ready (its outputDir), the train ran, the GM asks for the eval.
const std::vector<core::JobCondition> kEvalWaiting = {
    Cond(Stage::kTrain, ConditionType::kWaiting),
    Cond(Stage::kTrain, ConditionType::kReady, "/output/train/1"),
    Cond(Stage::kTrain, ConditionType::kRunning),
    Cond(Stage::kTrain, ConditionType::kCompleted, "", {{"pkl", "/output/train/1/index.pkl", {}}}),
    Cond(Stage::kEval, ConditionType::kWaiting)};
std::vector<core::JobCondition> WithEvalReady(std::vector<core::JobCondition> c) {
  c.push_back(Cond(Stage::kEval, ConditionType::kReady, "/output/eval/1"));
  return c;
}
const std::vector<core::JobCondition> kEvalWaitingAnsweredByV1 = WithEvalReady(kEvalWaiting);
const std::vector<core::JobCondition> kDeployWaiting = {
    Cond(Stage::kTrain, ConditionType::kWaiting),
    Cond(Stage::kTrain, ConditionType::kReady, "/output/train/1"),
    Cond(Stage::kEval, ConditionType::kReady, "/output/eval/1"),
    Cond(Stage::kEval, ConditionType::kCompleted),  // data-less: the old LC's record is used
    Cond(Stage::kDeploy, ConditionType::kWaiting)};
const std::vector<core::JobCondition> kTrainWaitingAgain = {
    Cond(Stage::kTrain, ConditionType::kWaiting), Cond(Stage::kDeploy, ConditionType::kReady),
    Cond(Stage::kDeploy, ConditionType::kCompleted), Cond(Stage::kTrain, ConditionType::kWaiting)};

// clang-format off
INSTANTIATE_TEST_SUITE_P(V1, LlMigrationTable, ::testing::Values(
  // Old phase train, idle: its (Train, Waiting) is not answered yet.
  MigrationRow{"TrainIdle_AnswersTrainWaiting", 0, 0, false, "", kTrainWaitingAgain,
               "write-train"},
  // Old phase train, writing (work 1): planned again on the (Train, Waiting) it was answering.
  MigrationRow{"TrainWriting_WritesAgain", 0, 1, false, "", kTrainWaiting0, "write-train"},
  // Old phase train, LL-1 sent: the examined (Train, Waiting) is not answered again.
  MigrationRow{"TrainAwaited_NotAnsweredAgain", 0, 0, true, "", kTrainWaiting0, ""},
  MigrationRow{"TrainAwaited_EvalWaitingAnswered", 0, 0, true, "", kEvalWaiting, "write-eval"},
  // Old phase eval, writing (work 2): LL-3 not sent; the (Eval, Waiting) is answered.
  MigrationRow{"EvalWriting_EvalWaitingAnswered", 1, 2, false,
               R"(,"train_model":{"format":"pkl","url":"/output/train/1/index.pkl"})",
               kEvalWaiting, "write-eval"},
  // Old phase eval, LL-3 sent (it followed the GM's (Eval, Waiting)): nothing more.
  MigrationRow{"EvalAwaited_NothingMore", 1, 0, true,
               R"(,"train_model":{"format":"pkl","url":"/output/train/1/index.pkl"})",
               kEvalWaitingAnsweredByV1, ""},
  // Old phase deploy, copy in flight (work 3): the (Deploy, Waiting) copies the old LC's eval
  // result (the condition lacks the output).
  MigrationRow{"Deploying_DeployWaitingCopies", 2, 3, false,
               R"(,"eval_result":{"format":"pkl","url":"/output/eval/1/index.pkl"})",
               kDeployWaiting, "copy"}),
  [](const ::testing::TestParamInfo<MigrationRow>& i) { return std::string(i.param.name); });
// clang-format on

TEST(IlRecordTest, LlV1Migration_Fields) {
  auto train = DecodeLlRecord(V1Record(0, 0, true));
  ASSERT_TRUE(train.ok()) << train.message();
  EXPECT_EQ(train->state.phase, core::ll::Phase::kTrain);
  EXPECT_TRUE(train->state.worker_awaited);
  EXPECT_EQ(train->state.train_range, (core::il::SpoolRange{0, 5010, 501}));
  EXPECT_EQ(train->state.answered_train_waiting, 2);
  EXPECT_EQ(train->state.answered_eval_waiting, 2);
  EXPECT_EQ(train->state.answered_deploy_waiting, 2);
  auto idle = DecodeLlRecord(V1Record(0, 0, false));
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->state.answered_train_waiting, -1);
  EXPECT_EQ(idle->state.train_range, core::il::SpoolRange{});
  auto eval = DecodeLlRecord(
      V1Record(1, 0, true, R"(,"train_model":{"format":"pkl","url":"/output/train/1/index.pkl"})"));
  ASSERT_TRUE(eval.ok());
  EXPECT_EQ(eval->state.phase, core::ll::Phase::kEval);
  EXPECT_TRUE(eval->state.worker_awaited);
  const std::vector<core::ModelRef> m{{"pkl", "/output/train/1/index.pkl", {}}};
  EXPECT_EQ(eval->state.train_models, m);
  EXPECT_EQ(eval->state.train_models_version, 1);
  EXPECT_EQ(eval->state.eval_inputs, m) << "an eval report naming the model sent is accepted";
  EXPECT_FALSE(DecodeLlRecord(R"({"v":3,"state":{"phase":0,"version":1}})").ok());
}

TEST(IlRecordTest, CursorWrittenBeforeSkippingExistedDecodes) {
  // A Dataset record as written before the cursor had `skipping`.
  auto r = DecodeDatasetRecord(
      R"({"v":1,"cursor":{"path":"/d/i.txt","dev":1,"ino":2,"offset":30,"samples":3,"skip":0,)"
      R"("header_done":false,"header":"","tail_size":-1},"reported":3})");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->cursor.offset, 30);
  EXPECT_FALSE(r->cursor.skipping);
  EXPECT_EQ(r->cursor.scanned, 0);
  DatasetRecord d;
  d.cursor = SampleCursor();
  d.cursor.skipping = false;
  EXPECT_EQ(EncodeDatasetRecord(d).find("skipping"), std::string::npos);
  d.cursor.skipping = true;
  auto back = DecodeDatasetRecord(EncodeDatasetRecord(d));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_TRUE(back->cursor.skipping);
}

TEST(IlRecordTest, CursorWrittenBeforeDigestsDecodesWithoutOne) {
  // The same record as written before the cursor had a prefix digest: it decodes, and the reader
  // then handles a rewrite by the consumed count (prefix_digest_known false).
  const std::string old =
      R"({"v":1,"cursor":{"path":"/d/i.txt","dev":1,"ino":2,"offset":30,"samples":3,"skip":0,)"
      R"("header_done":false,"header":"","tail_size":-1},"reported":3})";
  auto r = DecodeDatasetRecord(old);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r->cursor.prefix_digest_known);
  EXPECT_EQ(r->cursor.prefix_digest, dataset::kEmptyPrefixDigest);
  EXPECT_EQ(r->cursor.prefix_samples, 0);
  // Unknown stays unknown across a save (no digest written for it), and a malformed one is
  // unknown rather than an error.
  const std::string saved = EncodeDatasetRecord(*r);
  EXPECT_EQ(saved.find("prefix_digest"), std::string::npos);
  auto again = DecodeDatasetRecord(saved);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_FALSE(again->cursor.prefix_digest_known);
  for (const char* bad : {"\"12\"", "\"zzzzzzzzzzzzzzzz\"", "12"}) {
    SCOPED_TRACE(bad);
    std::string j = old;
    j.replace(j.find("\"tail_size\""), 0, std::string("\"prefix_digest\":") + bad + ",");
    auto b = DecodeDatasetRecord(j);
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_FALSE(b->cursor.prefix_digest_known);
  }
}

// [D:I15.9] across a restart: the cursor saved in a record and loaded again still tells a
// replacement that grew the index from a rotation to a new file.
TEST(IlRecordTest, ReloadedCursorStillTellsGrowthFromRotation) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "il_record_test.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string index = tmpl + "/index.csv";
  auto replace = [&](const std::string& data) {
    std::ofstream(index + ".new", std::ios::binary) << data;
    ASSERT_EQ(::rename((index + ".new").c_str(), index.c_str()), 0);
  };
  auto read = [&](DatasetRecord& rec, dataset::ReadResult* res) {
    std::vector<std::string> got;
    auto r = dataset::ReadNewSamples(index, dataset::IndexFormat::kCsv, rec.cursor,
                                     dataset::ReadOptions{}, [&](std::string_view s) {
                                       got.emplace_back(s);
                                       return Status::Ok();
                                     });
    EXPECT_TRUE(r.ok()) << r.message();
    if (r.ok()) *res = *r;
    return got;
  };
  auto reload = [](const DatasetRecord& rec) {
    auto r = DecodeDatasetRecord(EncodeDatasetRecord(rec));
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? *r : DatasetRecord{};
  };
  replace("h\n1\n2\n");
  DatasetRecord rec;
  dataset::ReadResult res;
  EXPECT_EQ(read(rec, &res), (std::vector<std::string>{"1", "2"}));
  rec = reload(rec);
  replace("h\n1\n2\n3\n");
  EXPECT_EQ(read(rec, &res), (std::vector<std::string>{"3"}));
  EXPECT_EQ(res.rewrite, dataset::Rewrite::kPrefixKept);
  rec = reload(rec);
  replace("h\n7\n8\n");
  EXPECT_EQ(read(rec, &res), (std::vector<std::string>{"7", "8"}));
  EXPECT_EQ(res.rewrite, dataset::Rewrite::kNewFile);
  EXPECT_EQ(rec.cursor.samples, 5);
  // The same cursor as an old record would hold it: the rewrite falls back to the count.
  DatasetRecord old = reload(rec);
  old.cursor.prefix_digest_known = false;
  old = reload(old);
  ASSERT_FALSE(old.cursor.prefix_digest_known);
  replace("h\n4\n5\n6\n7\n8\n9\n");
  EXPECT_EQ(read(old, &res), (std::vector<std::string>{"9"}));
  EXPECT_EQ(res.rewrite, dataset::Rewrite::kSkippedByCount);
  std::filesystem::remove_all(tmpl);
}

TEST(IlRecordTest, CorruptRecordIsAnErrorNotACrash) {
  EXPECT_FALSE(DecodeIlRecord("{").ok());
  EXPECT_FALSE(DecodeIlRecord(R"({"state":{"round":"x"}})").ok());
  EXPECT_FALSE(DecodeLlRecord(R"({"state":{"phase":9,"version":1}})").ok());
}

// The records' text from testdata/records.golden, by name.
std::map<std::string, std::string> Goldens() {
  std::ifstream in(std::string(SEDNA_SOURCE_DIR) + "/src/app/cluster/jobs/testdata/records.golden");
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

// The text is what the nlohmann::json tree gave (key order, escapes, number forms), so records
// written now read in every earlier LC and the other way round.
TEST(IlRecordTest, RecordsAreWrittenByteForByteAsBefore) {
  const auto golden = Goldens();
  ASSERT_EQ(golden.size(), 6u);
  IlRecord il = EveryFieldIl();
  il.state.last_error = "tab\there \x01 \xc3\xbc \x7f";
  DatasetRecord ds;
  ds.cursor = SampleCursor();
  ds.reported = 42;
  EXPECT_EQ(EncodeIlRecord(IlRecord{}), golden.at("IL0"));
  EXPECT_EQ(EncodeIlRecord(il), golden.at("IL1"));
  EXPECT_EQ(EncodeLlRecord(LlRecord{}), golden.at("LL0"));
  EXPECT_EQ(EncodeLlRecord(EveryFieldLl()), golden.at("LL1"));
  EXPECT_EQ(EncodeDatasetRecord(ds), golden.at("DS1"));
  EXPECT_EQ(EncodeDatasetRecord(DatasetRecord{}), golden.at("DS0"));
  for (const auto& [name, text] : golden) {
    EXPECT_EQ(nlohmann::json::parse(text).dump(), text) << name;
  }
}

// A CSV header (the index's first line) is any bytes. The tree encoder threw on one that is not
// UTF-8 (and the LC exited); the record now keeps it with U+FFFD for each such byte and, for the
// round files, its bytes in base64: it reads back exactly.
TEST(IlRecordTest, AHeaderThatIsNotUtf8IsStoredWithReplacementCharacters) {
  IlRecord r;
  r.cursor.header = "a\xff,b\xed\xa0\x80,\xc3";
  r.cursor.header_done = true;
  r.state.last_error = "bad byte \xfe";
  std::string text;
  ASSERT_NO_THROW(text = EncodeIlRecord(r));
  auto back = DecodeIlRecord(text);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->cursor.header, r.cursor.header);
  EXPECT_EQ(nlohmann::json::parse(text)["cursor"]["header"], "a\uFFFD,b\uFFFD\uFFFD\uFFFD,\uFFFD");
  EXPECT_EQ(back->state.last_error, "bad byte \uFFFD");
  DatasetRecord ds;
  ds.cursor = r.cursor;
  auto ds_back = DecodeDatasetRecord(EncodeDatasetRecord(ds));
  ASSERT_TRUE(ds_back.ok()) << ds_back.message();
  EXPECT_EQ(ds_back->cursor.header, r.cursor.header);
  // A UTF-8 header has no base64 copy (records.golden: the text is as before).
  EXPECT_EQ(EncodeIlRecord(EveryFieldIl()).find("header_base64"), std::string::npos);
}

}  // namespace
}  // namespace sedna::app
