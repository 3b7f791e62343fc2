// Job records survive a restart field for field: every state field and the cursor round-trip.
#include "app/cluster/il_record.h"

#include <gtest/gtest.h>

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
}

TEST(IlRecordTest, RoundTripsEveryField) {
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
  s.work_range = {1, 2, 3};
  s.work_models = {{"pb", "/o/train/3/m.pb", {}}, {"pb", "/models/d.pb", {}}};
  s.trained = core::ModelRef{"pb", "/o/train/3/m.pb", {}};
  s.trained_base = core::ModelRef{"ckpt", "/o/train/3", {}};
  s.eval_outstanding = true;
  s.eval_round = 4;
  s.eval_models = s.work_models;
  s.last_eval_results = {
      {"pb", "/o/train/3/m.pb", {{"precision", core::MetricValue::List({0.5, 0.25})}}},
      {"pb", "/models/d.pb", {{"loss", core::MetricValue::Number(0.125)}}}};
  s.last_decision = "deploying";
  s.decisions = 3;
  s.decided_round = 3;
  s.deployments = {{2, "/o/train/2/m.pb", "2026-11-29T10:00:00Z"}};
  s.retry_after_ms = 123;
  s.last_error = "disk full";
  r.cursor = SampleCursor();
  auto back = DecodeIlRecord(EncodeIlRecord(r));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state, r.state);
  ExpectCursorEq(back->cursor, r.cursor);
}

TEST(IlRecordTest, LlRoundTripsEveryField) {
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
  s.worker_awaited = false;
  s.train_model = core::ModelRef{"pkl", "/o/train/5/index.pkl", {}};
  s.eval_result = core::ModelRef{"pkl", "/o/eval/5/index.pkl", {}};
  s.conditions_seen = 17;
  s.deployments = {{4, "/o/eval/4/index.pkl", "2026-11-29T10:00:00Z"}};
  s.deploy_count = 4;
  s.consecutive_failures = 2;
  s.retry_after_ms = 77;
  s.last_error = "x";
  r.cursor = SampleCursor();
  auto back = DecodeLlRecord(EncodeLlRecord(r));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->state, r.state);
  ExpectCursorEq(back->cursor, r.cursor);
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

TEST(IlRecordTest, CorruptRecordIsAnErrorNotACrash) {
  EXPECT_FALSE(DecodeIlRecord("{").ok());
  EXPECT_FALSE(DecodeIlRecord(R"({"state":{"round":"x"}})").ok());
  EXPECT_FALSE(DecodeLlRecord(R"({"state":{"phase":9,"version":1}})").ok());
}

}  // namespace
}  // namespace sedna::app
