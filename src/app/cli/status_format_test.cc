// Numbers in decision texts print as people write them; wide status shows every field.
#include "app/cli/status_format.h"

#include <gtest/gtest.h>

namespace sedna::app {
namespace {

TEST(HumanNumbers, TrimsFloatNoiseOnlyInStandaloneNumbers) {
  const std::pair<const char*, const char*> cases[] = {
      {"fired: precision_delta = 0.033440000000000004 (mean of 10 values) > 0.01",
       "fired: precision_delta = 0.03344 (mean of 10 values) > 0.01"},
      {"recall = 0.3531099999999999", "recall = 0.35311"},
      {"x = -0.30000000000000004, y = 1e-05", "x = -0.3, y = 1e-05"},
      {"delta 12.000000000000002.", "delta 12."},
      {"0.1 0.25 500 1e+21 3.14159", "0.1 0.25 500 1e+21 3.14159"},
      {"/models/m_0.033440000000000004.pkl", "/models/m_0.033440000000000004.pkl"},
      {"v0.033440000000000004 and 1.2.3", "v0.033440000000000004 and 1.2.3"},
      {"12345678901234567890", "12345678901234567890"},  // an integer (an id) is not noise
      {"", ""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(HumanNumbers(in), want) << in;
}

TEST(HumanNumbers, NegativeNumbersKeepTheirSign) {
  EXPECT_EQ(HumanNumbers("d=-0.030000000000000027"), "d=-0.03");
}

TEST(RenderWideTable, ShowsEveryFieldWithHumanNumbers) {
  JobView v;
  v.kind = "IncrementalLearningJob";
  v.ns = "default";
  v.name = "digits";
  v.stage = "Eval/Waiting";
  v.round = 3;
  v.samples_waiting = 7;
  v.samples_seen = 1080;
  v.work = "eval";
  v.decisions = 2;
  v.decided_round = 2;
  v.last_decision = "kept deployed model: precision_delta = 0.033440000000000004 < 0.05";
  v.last_eval = {{"pkl", "/m/new.pkl", {{"precision", core::MetricValue::Number(0.91944444)}}},
                 {"pkl", "/m/old.pkl", {{"recall", core::MetricValue::List({0.5, 0.25})}}}};
  v.deployed_url = "/m/deploy.pkl";
  v.deployed_at = "2026-12-01T11:00:42Z";
  const std::string t = RenderWideTable({v});
  for (const char* s :
       {"SEEN", "DECIDED ROUND", "1080", "precision=0.9194", "recall=[0.5 0.25]", "/m/deploy.pkl",
        "2026-12-01T11:00:42Z", "precision_delta = 0.03344 <", "default/digits", "Eval/Waiting"}) {
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  }
  EXPECT_EQ(t.find("0.033440000000000004"), std::string::npos) << t;
}

JobHistory History() {
  JobHistory h;
  h.kind = "IncrementalLearningJob";
  h.ns = "default";
  h.name = "digits-il";
  h.train_trigger = "num_of_samples > 300";
  h.deploy_trigger = "precision_delta > 0.01";
  h.deploys = 1;
  RoundRecord r;
  r.round = 1;
  r.samples = 384;
  r.train_status = "completed";
  r.train_ready_ms = 1000;
  r.train_done_ms = 2500;
  r.eval_status = "completed";
  r.eval_ready_ms = 3000;
  r.eval_done_ms = 3250;
  r.new_metrics = {{"precision", 0.9071}};
  r.deployed_metrics = {{"precision", 0.554}};
  r.decision = "deployed";
  r.decision_reason = "fired: precision_delta = 0.35310000000000002 > 0.01";
  h.rounds.push_back(r);
  r.round = 2;
  r.train_status = r.eval_status = r.decision = r.decision_reason = "";
  r.eval_ready_ms = 0;
  r.new_metrics.clear();
  r.deployed_metrics.clear();
  h.rounds.push_back(r);
  return h;
}

TEST(HistoryTable, OneLinePerRoundWithDurationsMetricsAndDecision) {
  const std::string t = RenderHistoryTable(History());
  EXPECT_NE(t.find("IL default/digits-il   train trigger: num_of_samples > 300   deploy trigger: "
                   "precision_delta > 0.01   deploys: 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("completed 1.5s  completed 0.25s  precision=0.9071 | precision=0.554"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("fired: precision_delta = 0.3531 > 0.01"), std::string::npos) << t;
  // Round 2: the train is running, nothing else yet.
  const auto row2 = t.find("\n2      384      ");
  ASSERT_NE(row2, std::string::npos) << t;
  const std::string line = t.substr(row2 + 1, t.find('\n', row2 + 1) - row2 - 1);
  EXPECT_NE(line.find("running"), std::string::npos) << line;
  EXPECT_EQ(line.find("completed"), std::string::npos) << line;
}

TEST(HistoryTable, DecodesWhatTheDaemonServesAndMatchesNames) {
  const JobHistory h = History();
  auto v = DecodeHistories("[" + EncodeJobHistory(h) + "]");
  ASSERT_TRUE(v.ok()) << v.message();
  ASSERT_EQ(v->size(), 1u);
  EXPECT_EQ((*v)[0].rounds, h.rounds);
  EXPECT_FALSE(DecodeHistories("{}").ok());
  EXPECT_NE(DecodeHistories(R"([{"rounds":[{"round":"x"}]}])").message().find("history[0]"),
            std::string::npos);
  EXPECT_TRUE(HistoryMatches(h, "digits-il"));
  EXPECT_TRUE(HistoryMatches(h, "default/digits-il"));
  EXPECT_FALSE(HistoryMatches(h, "other/digits-il"));
  EXPECT_FALSE(HistoryMatches(h, "digits"));
}

}  // namespace
}  // namespace sedna::app
