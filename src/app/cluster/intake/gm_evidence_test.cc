// GmEvidence: the signals of docs/protocol.md §H3.1, one connection at a time, fed jobs
// decoded from GM-shaped JSON the way GmFrames feeds them.
#include "app/cluster/intake/gm_evidence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "app/cluster/observation/status_view.h"

namespace sedna::app {
namespace {

using ::testing::HasSubstr;

struct Cond {
  const char* stage;
  const char* type;
  std::string data;  // the condition's `data` JSON ("" for none)
};

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Conditions(const std::vector<Cond>& conds) {
  std::string out = "[";
  for (const auto& c : conds) {
    if (out.size() > 1) out += ",";
    out += std::string(R"({"type":")") + c.type + R"(","status":"True","stage":")" + c.stage +
           R"(","lastTransitionTime":"2025-03-06T08:00:00Z")" +
           (c.data.empty() ? "" : ",\"data\":" + Quote(c.data)) + "}";
  }
  return out + "]";
}

// An IL job as a GM sends it; `spec` and `annotations` are JSON object members, `status_extra`
// more members of status.
json::Decoded<core::IlJob> Il(const std::string& name, const std::vector<Cond>& conds,
                              const std::string& spec = "", const std::string& annotations = "") {
  const std::string text =
      R"({"kind":"IncrementalLearningJob","apiVersion":"sedna.io/v1alpha1","metadata":{"name":")" +
      name + R"(","namespace":"default")" +
      (annotations.empty() ? "" : ",\"annotations\":{" + annotations + "}") + R"(},"spec":{)" +
      spec + R"(},"status":{"conditions":)" + Conditions(conds) + "}}";
  auto d = json::DecodeIlJob(text);
  EXPECT_TRUE(d.ok()) << d.message() << "\n" << text;
  return d.ok() ? *d : json::Decoded<core::IlJob>{};
}

json::Decoded<core::LlJob> Ll(const std::string& name, const std::vector<Cond>& conds,
                              const std::string& status_extra = "") {
  const std::string text =
      R"({"kind":"LifelongLearningJob","apiVersion":"sedna.io/v1alpha1","metadata":{"name":")" +
      name + R"(","namespace":"default"},"spec":{},"status":{"conditions":)" + Conditions(conds) +
      (status_extra.empty() ? "" : "," + status_extra) + "}}";
  auto d = json::DecodeLlJob(text);
  EXPECT_TRUE(d.ok()) << d.message() << "\n" << text;
  return d.ok() ? *d : json::Decoded<core::LlJob>{};
}

std::vector<std::string> Ids(const GmEvidence& e) {
  std::vector<std::string> ids;
  for (const auto& s : e.View("gm:9000", "auto").signals) ids.push_back(s.id);
  return ids;
}

// §H1.9 N1 as a v0.7.0 GM stores it: every model gains "classes":null.
const std::string kTrainReadyG2 =
    R"({"input":{"models":[{"format":"ckpt","url":"/models/base_model","classes":null}],)"
    R"("dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"}})";
const std::string kTrainReadyG1 =
    R"({"input":{"models":[{"format":"ckpt","url":"/models/base_model"}],)"
    R"("dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"}})";
const std::string kZeroKnowledgeBase =
    R"("knowledgeBase":{"AIModels":{"numberOfAIModels":0},"AIClasses":{"numberOfAIClasses":0},)"
    R"("samples":{"numberOfLabeledUnseenSample":0,"numberOfUnseenSample":0}})";

struct SignalCase {
  const char* name;
  // Fed in order on one connection.
  std::vector<std::function<std::string(GmEvidence&)>> messages;
  std::vector<std::string> ids;
  GmGeneration generation;
  std::string what;  // a substring of the first signal's text ("" when none)
};

TEST(GmEvidence, EachSignalFromWhatTheGmSends) {
  const SignalCase cases[] = {
      {"S1: IL whose latest condition is (Deploy, Waiting)",
       {[](GmEvidence& e) {
         return e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Deploy", "Waiting", ""}}));
       }},
       {"S1"},
       GmGeneration::kG2,
       "IL (Deploy,Waiting) for default/helmet"},
      {"no S1 for an older (Deploy, Waiting)",
       {[](GmEvidence& e) {
         return e.OnIlJob(Il("helmet", {{"Deploy", "Waiting", ""}, {"Train", "Waiting", ""}}));
       }},
       {},
       GmGeneration::kUnknown,
       ""},
      {"S2: IL whose latest condition is (Deploy, Running)",
       {[](GmEvidence& e) {
         return e.OnIlJob(Il("helmet", {{"Deploy", "Running", ""}}));
       }},
       {"S2"},
       GmGeneration::kAtLeastV04,
       "IL (Deploy,Running) for default/helmet"},
      {"S3: LL with status.knowledgeBase (the zero value v0.6+ always sends)",
       {[](GmEvidence& e) {
         return e.OnLlJob(Ll("atcii", {{"Train", "Waiting", ""}}, kZeroKnowledgeBase));
       }},
       {"S3"},
       GmGeneration::kG2V06,
       "LL status.knowledgeBase for default/atcii"},
      {"no S3 for the word in a condition's data",
       {[](GmEvidence& e) {
         return e.OnLlJob(
             Ll("atcii", {{"Train", "Waiting", R"({"input":{"dataURL":"knowledgeBase"}})"}}));
       }},
       {},
       GmGeneration::kUnknown,
       ""},
      {"S4: \"classes\" in a model of a condition appended on this connection",
       {[](GmEvidence& e) {
          return e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}));
        },
        [](GmEvidence& e) {
          return e.OnIlJob(
              Il("helmet", {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG2}}));
        }},
       {"S4"},
       GmGeneration::kG2V06,
       "\"classes\" in a model of condition 1 (Train,Ready) of IL default/helmet"},
      {"no S4 from conditions in the job's first message (written before this connection)",
       {[](GmEvidence& e) {
          return e.OnIlJob(Il("helmet", {{"Train", "Ready", kTrainReadyG2}}));
        },
        [](GmEvidence& e) {
          return e.OnIlJob(
              Il("helmet", {{"Train", "Ready", kTrainReadyG2}, {"Train", "Starting", ""}}));
        }},
       {},
       GmGeneration::kUnknown,
       ""},
      {"no S4 from a G1 GM's data, nor from a metric named classes",
       {[](GmEvidence& e) { return e.OnIlJob(Il("helmet", {})); },
        [](GmEvidence& e) {
          return e.OnIlJob(Il(
              "helmet",
              {{"Train", "Ready", kTrainReadyG1},
               {"Train", "Completed",
                R"({"output":{"models":[{"format":"pb","url":"/o","metrics":{"classes":1}}]}})"}}));
        }},
       {},
       GmGeneration::kUnknown,
       ""},
      {"S4 in an LL job's output model",
       {[](GmEvidence& e) {
          return e.OnLlJob(Ll("atcii", {{"Train", "Running", ""}}));
        },
        [](GmEvidence& e) {
          return e.OnLlJob(Ll(
              "atcii",
              {{"Train", "Running", ""},
               {"Eval", "Waiting",
                R"({"output":{"models":[{"format":"pkl","url":"/o/m.pkl","classes":null}]}})"}}));
        }},
       {"S4"},
       GmGeneration::kG2V06,
       "condition 1 (Eval,Waiting) of LL default/atcii"},
      {"S5: LL with no conditions",
       {[](GmEvidence& e) { return e.OnLlJob(Ll("atcii", {})); }},
       {"S5"},
       GmGeneration::kG1,
       "LL with no conditions for default/atcii"},
      {"S5: LL whose latest condition is Completed",
       {[](GmEvidence& e) {
         return e.OnLlJob(Ll("atcii", {{"Train", "Waiting", ""}, {"Train", "Completed", ""}}));
       }},
       {"S5"},
       GmGeneration::kG1,
       "LL (Train,Completed) for default/atcii"},
      {"no S5 for LL Waiting or Running",
       {[](GmEvidence& e) {
          return e.OnLlJob(Ll("a", {{"Train", "Waiting", ""}}));
        },
        [](GmEvidence& e) {
          return e.OnLlJob(Ll("b", {{"Eval", "Running", ""}}));
        }},
       {},
       GmGeneration::kUnknown,
       ""},
      {"S6: deploySpec.model.pollPeriodSeconds (a hint)",
       {[](GmEvidence& e) {
         return e.OnIlJob(
             Il("helmet", {}, R"("deploySpec":{"model":{"name":"m","pollPeriodSeconds":60}})"));
       }},
       {"S6"},
       GmGeneration::kUnknown,
       "deploySpec.model.pollPeriodSeconds in IL default/helmet (hint)"},
      {"no S6 for pollPeriodSeconds elsewhere",
       {[](GmEvidence& e) {
         return e.OnIlJob(Il("helmet", {}, R"("deploySpec":{"pollPeriodSeconds":60})"));
       }},
       {},
       GmGeneration::kUnknown,
       ""},
      {"S7: the hot-update annotation (a hint)",
       {[](GmEvidence& e) {
         return e.OnIlJob(
             Il("helmet", {}, "",
                R"("sedna.io/model-hot-update-config":"/var/lib/x/model_config.json")"));
       }},
       {"S7"},
       GmGeneration::kUnknown,
       "annotation sedna.io/model-hot-update-config on IL default/helmet (hint)"},
      {"S5 and S3 on one connection conflict",
       {[](GmEvidence& e) { return e.OnLlJob(Ll("a", {})); },
        [](GmEvidence& e) {
          return e.OnLlJob(Ll("b", {{"Train", "Waiting", ""}}, kZeroKnowledgeBase));
        }},
       {"S3", "S5"},
       GmGeneration::kConflicting,
       ""},
      {"S1 and S4: the more precise >= v0.6",
       {[](GmEvidence& e) {
          return e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}));
        },
        [](GmEvidence& e) {
          return e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""},
                                         {"Train", "Ready", kTrainReadyG2},
                                         {"Deploy", "Waiting", ""}}));
        }},
       {"S1", "S4"},
       GmGeneration::kG2V06,
       ""},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    GmEvidence e;
    e.OnConnected();
    for (const auto& m : tc.messages) m(e);
    EXPECT_EQ(Ids(e), tc.ids);
    EXPECT_EQ(e.generation(), tc.generation);
    if (!tc.what.empty()) {
      const auto v = e.View("gm:9000", "auto");
      ASSERT_FALSE(v.signals.empty());
      EXPECT_THAT(v.signals[0].what, HasSubstr(tc.what));
    }
  }
}

// One line when the first evidence appears and one when the conclusion changes; repeats are
// silent.
TEST(GmEvidence, LogsTheFirstEvidenceAndEachChangeOfConclusion) {
  GmEvidence e;
  e.OnConnected();
  EXPECT_EQ(e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}})), "");
  EXPECT_EQ(e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}, "",
                         R"("sedna.io/model-hot-update-config":"/m/model_config.json")")),
            "GM: observed unknown on this connection (S7: annotation "
            "sedna.io/model-hot-update-config on IL default/helmet (hint))");
  EXPECT_EQ(e.OnIlJob(Il("other", {{"Train", "Waiting", ""}}, "",
                         R"("sedna.io/model-hot-update-config":"/m/model_config.json")")),
            "");
  const std::string g2 =
      e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Deploy", "Waiting", ""}}));
  EXPECT_THAT(g2, HasSubstr("GM: observed G2 on this connection (S1: IL (Deploy,Waiting) for "
                            "default/helmet; S7: "));
  EXPECT_EQ(e.OnIlJob(Il("other", {{"Deploy", "Waiting", ""}})), "");
  EXPECT_THAT(e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""},
                                      {"Deploy", "Waiting", ""},
                                      {"Train", "Ready", kTrainReadyG2}})),
              HasSubstr("GM: observed G2 >= v0.6 on this connection"));
  EXPECT_TRUE(e.SawG2());
}

// A new connection forgets what the last one showed, and counts each job's conditions afresh: a
// GM downgraded to G1 keeps the v0.6 GM's conditions in the job, which must not count again.
TEST(GmEvidence, ANewConnectionStartsFromNothing) {
  GmEvidence e;
  e.OnConnected();
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}));
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG2}}));
  ASSERT_EQ(e.generation(), GmGeneration::kG2V06);
  e.OnDisconnected();
  EXPECT_EQ(e.View("gm:9000", "auto").link, "disconnected");
  EXPECT_EQ(e.generation(), GmGeneration::kG2V06);  // shown until the next connection

  e.OnConnected();
  EXPECT_EQ(e.generation(), GmGeneration::kUnknown);
  EXPECT_TRUE(e.View("gm:9000", "auto").signals.empty());
  EXPECT_FALSE(e.SawG2());
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG2}}));
  e.OnIlJob(
      Il("helmet",
         {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG2}, {"Train", "Starting", ""}}));
  EXPECT_EQ(e.generation(), GmGeneration::kUnknown);
}

// Conditions the GM's race erased (§H2.0) and appended again are still new; a deleted job that
// comes back starts a new baseline.
TEST(GmEvidence, ConditionsAfterAShrinkAndAfterADeleteCount) {
  GmEvidence e;
  e.OnConnected();
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}));
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG1}}));
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}));  // the Ready erased
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG2}}));
  EXPECT_EQ(Ids(e), std::vector<std::string>{"S4"});

  GmEvidence d;
  d.OnConnected();
  d.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}}));
  d.OnDelete("default/incrementallearningjob/helmet");
  d.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Train", "Ready", kTrainReadyG2}}));
  EXPECT_TRUE(Ids(d).empty());  // the first message of the new job: its baseline
}

TEST(GmEvidence, LinkStates) {
  GmEvidence e;
  EXPECT_EQ(e.View("gm:9000", "auto").link, "never connected");
  EXPECT_EQ(e.View("", "auto").link, "local");
  e.OnConnected();
  EXPECT_EQ(e.View("gm:9000", "g2").link, "connected");
  EXPECT_EQ(e.View("gm:9000", "g2").protocol, "g2");
  e.OnDisconnected();
  EXPECT_EQ(e.View("gm:9000", "auto").link, "disconnected");
}

TEST(GmEvidence, StatusJsonCarriesItAndTheStatusLineSaysIt) {
  GmEvidence e;
  e.OnConnected();
  e.OnIlJob(Il("helmet", {{"Train", "Waiting", ""}, {"Deploy", "Waiting", ""}}));
  const GmEvidenceView v = e.View("gm:9000", "auto");
  EXPECT_EQ(RenderGmLine(v),
            "GM: connected, protocol auto, observed G2 (S1: IL (Deploy,Waiting) for "
            "default/helmet)");

  JobView job;
  job.kind = "IncrementalLearningJob";
  job.ns = "default";
  job.name = "helmet";
  for (const auto& jobs : {std::vector<JobView>{}, std::vector<JobView>{job}}) {
    const std::string doc = AddGmEvidenceToStatusJson(EncodeStatusJson(jobs), v);
    auto back = DecodeGmEvidenceFromStatusJson(doc);
    ASSERT_TRUE(back.ok()) << back.message() << "\n" << doc;
    ASSERT_TRUE(back->has_value()) << doc;
    EXPECT_EQ(**back, v);
    auto views = DecodeStatusJson(doc);  // what older readers do: still the jobs
    ASSERT_TRUE(views.ok()) << views.message();
    EXPECT_EQ(views->size(), jobs.size());
  }
  // A document without it (an older daemon) has none; a broken one is an error.
  auto none = DecodeGmEvidenceFromStatusJson(EncodeStatusJson({}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(DecodeGmEvidenceFromStatusJson("{\"gm\":").ok());

  e.OnDisconnected();
  EXPECT_EQ(RenderGmLine(e.View("gm:9000", "g1")),
            "GM: disconnected, protocol g1, observed G2 on the last connection (S1: IL "
            "(Deploy,Waiting) for default/helmet)");
  EXPECT_EQ(RenderGmLine(GmEvidence().View("gm:9000", "auto")),
            "GM: never connected, protocol auto, observed unknown");
}

}  // namespace
}  // namespace sedna::app
