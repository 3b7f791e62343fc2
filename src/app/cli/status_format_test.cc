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

}  // namespace
}  // namespace sedna::app
