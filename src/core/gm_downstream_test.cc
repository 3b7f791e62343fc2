// SyncSends / DeleteSends, one row per row of docs/protocol.md §H1.4 (IL, G2) and §H1.7 (LL,
// G2), and of docs/protocol.md §P4.3 for G1 (upstream 44609f00; v0.4.3 for hot Deploy rows).
#include "core/gm_downstream.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sedna::core::gm {
namespace {

constexpr Stage T = Stage::kTrain;
constexpr Stage E = Stage::kEval;
constexpr Stage D = Stage::kDeploy;
constexpr ConditionType kW = ConditionType::kWaiting;
constexpr ConditionType kRd = ConditionType::kReady;
constexpr ConditionType kSt = ConditionType::kStarting;
constexpr ConditionType kRn = ConditionType::kRunning;
constexpr ConditionType kC = ConditionType::kCompleted;
constexpr ConditionType kF = ConditionType::kFailed;
constexpr JobKind IL = JobKind::kIncremental;
constexpr JobKind LL = JobKind::kLifelong;
constexpr Generation G1 = Generation::kG1;
constexpr Generation G2 = Generation::kG2;
using Annotations = std::map<std::string, std::string>;

struct Opts {
  bool hot = false;
  bool eval_model = false;
  std::string train_spec_node;
};
GmJobSpec Spec(JobKind kind, Generation g, Opts o = {}) {
  GmJobSpec s;
  s.kind = kind;
  s.generation = g;
  s.hot_update = o.hot;
  s.has_initial_eval_model = o.eval_model;
  s.train_spec_node = o.train_spec_node;
  return s;
}

// ds = "ds"; train pod on "tn", eval pod on "en", inference pod on "dn".
const Annotations kStages = {
    {"sedna.io/Train", "tn"}, {"sedna.io/Eval", "en"}, {"sedna.io/Deploy", "dn"}};
Annotations Hot(Annotations a) {
  a[kHotUpdateConfigAnnotation] = "/var/lib/sedna/model-hot-update/x/model_config.json";
  return a;
}
// Everything on the dataset node.
const Annotations kOneNode = {{"sedna.io/Train", "ds"}, {"sedna.io/Eval", "ds"}};

GmJobState State(Stage s, ConditionType t, Annotations a) {
  GmJobState st;
  st.started = true;
  JobCondition c;
  c.stage = s;
  c.type = t;
  st.conditions = {c};
  st.annotations = std::move(a);
  return st;
}

std::vector<std::string> Show(const std::vector<EdgeSend>& sends) {
  std::vector<std::string> out;
  for (const auto& s : sends) out.push_back(ToString(s));
  return out;
}

struct Row {
  const char* doc_row;
  GmJobSpec spec;
  Stage stage;
  ConditionType type;
  Annotations ann;
  std::vector<std::string> sends;
  std::optional<std::string> ds = "ds";
};

const std::vector<Row>& Table() {
  static const std::vector<Row> rows = {
      // ---- §H1.4, IL, G2 (new:GMILd) ------------------------------------------------------
      {"1.4 (Train,Waiting): initialModel then job -> dsNode",
       Spec(IL, G2),
       T,
       kW,
       kStages,
       {"insert initialModel -> ds", "insert job -> ds"}},
      {"1.4 (Eval,Waiting): deploy Model, job -> dsNode",
       Spec(IL, G2),
       E,
       kW,
       kStages,
       {"insert deployModel -> ds", "insert job -> ds"}},
      {"1.4 (Eval,Waiting) with initialEvalModel",
       Spec(IL, G2, {.eval_model = true}),
       E,
       kW,
       kStages,
       {"insert deployModel -> ds", "insert initialEvalModel -> ds", "insert job -> ds"}},
      {"1.4 (Deploy,Waiting): deploy Model, job -> evalNode",
       Spec(IL, G2),
       D,
       kW,
       kStages,
       {"insert deployModel -> en", "insert job -> en"}},
      {"1.4 (Deploy,Waiting) cold with initialEvalModel",
       Spec(IL, G2, {.eval_model = true}),
       D,
       kW,
       kStages,
       {"insert deployModel -> en", "insert initialEvalModel -> en", "insert job -> en"}},
      {"1.4 (Deploy,Waiting) hot: no initialEvalModel",
       Spec(IL, G2, {.hot = true, .eval_model = true}),
       D,
       kW,
       Hot(kStages),
       {"insert deployModel -> en", "insert job -> en"}},
      {"1.4 (Deploy,Waiting) with sedna.io/Eval unset: node \"\"",
       Spec(IL, G2),
       D,
       kW,
       {},
       {"insert deployModel -> \"\"", "insert job -> \"\""}},
      {"1.4 (Train,Running): job -> trainNode",
       Spec(IL, G2),
       T,
       kRn,
       kStages,
       {"insert job -> tn"}},
      {"1.4 (Train,Running), no empty check", Spec(IL, G2), T, kRn, {}, {"insert job -> \"\""}},
      {"1.4 (Eval,Running): delete trainNode, job -> evalNode",
       Spec(IL, G2),
       E,
       kRn,
       kStages,
       {"delete job -> tn", "insert job -> en"}},
      {"1.4 (Eval,Running), train on eval node: no delete",
       Spec(IL, G2),
       E,
       kRn,
       {{"sedna.io/Train", "en"}, {"sedna.io/Eval", "en"}},
       {"insert job -> en"}},
      {"1.4 (Eval,Running), train on ds node: no delete",
       Spec(IL, G2),
       E,
       kRn,
       {{"sedna.io/Train", "ds"}, {"sedna.io/Eval", "en"}},
       {"insert job -> en"}},
      {"1.4 (Deploy,Running) hot: delete evalNode, models, job -> deployNode",
       Spec(IL, G2, {.hot = true}),
       D,
       kRn,
       Hot(kStages),
       {"delete job -> en", "insert deployModel -> dn", "insert job -> dn"}},
      {"1.4 (Deploy,Running) hot with initialEvalModel",
       Spec(IL, G2, {.hot = true, .eval_model = true}),
       D,
       kRn,
       Hot(kStages),
       {"delete job -> en", "insert initialEvalModel -> dn", "insert deployModel -> dn",
        "insert job -> dn"}},
      {"1.4 (Deploy,Running) hot, eval on ds node: no delete",
       Spec(IL, G2, {.hot = true}),
       D,
       kRn,
       Hot({{"sedna.io/Eval", "ds"}, {"sedna.io/Deploy", "dn"}}),
       {"insert deployModel -> dn", "insert job -> dn"}},
      {"1.4 deployNode read only with the hot-update annotation",
       Spec(IL, G2, {.hot = true}),
       D,
       kRn,
       kStages,
       {"delete job -> en", "insert deployModel -> \"\"", "insert job -> \"\""}},
      {"1.4 (Train,Completed): delete trainNode (cold: evalNode resident)",
       Spec(IL, G2),
       T,
       kC,
       kStages,
       {"delete job -> tn"}},
      {"1.4 (Train,Failed): delete trainNode", Spec(IL, G2), T, kF, kStages, {"delete job -> tn"}},
      {"1.4 (Train,Completed), train on ds node: resident", Spec(IL, G2), T, kC, kOneNode, {}},
      {"1.4 (Train,Completed), train on eval node, cold: resident",
       Spec(IL, G2),
       T,
       kC,
       {{"sedna.io/Train", "en"}, {"sedna.io/Eval", "en"}},
       {}},
      {"1.4 (Train,Completed), train on eval node, hot: deleted",
       Spec(IL, G2, {.hot = true}),
       T,
       kC,
       Hot({{"sedna.io/Train", "en"}, {"sedna.io/Eval", "en"}, {"sedna.io/Deploy", "dn"}}),
       {"delete job -> en"}},
      {"1.4 (Eval,Completed) cold: evalNode resident, never deleted",
       Spec(IL, G2),
       E,
       kC,
       kStages,
       {}},
      {"1.4 (Eval,Failed) hot: evalNode deleted",
       Spec(IL, G2, {.hot = true}),
       E,
       kF,
       Hot(kStages),
       {"delete job -> en"}},
      {"1.4 (Deploy,Completed) cold: never sends", Spec(IL, G2), D, kC, kStages, {}},
      {"1.4 (Deploy,Completed) hot: never sends",
       Spec(IL, G2, {.hot = true}),
       D,
       kC,
       Hot(kStages),
       {}},
      {"1.4 (Deploy,Failed) hot: never sends",
       Spec(IL, G2, {.hot = true}),
       D,
       kF,
       Hot(kStages),
       {}},
      {"1.4 (Train,Ready): nothing", Spec(IL, G2), T, kRd, kStages, {}},
      {"1.4 (Eval,Starting): nothing", Spec(IL, G2), E, kSt, kStages, {}},
      {"1.4 (Deploy,Ready): nothing", Spec(IL, G2), D, kRd, kStages, {}},
      {"1.4 (Deploy,Starting) hot: nothing", Spec(IL, G2, {.hot = true}), D, kSt, Hot(kStages), {}},
      {"1.4 Dataset GET failed: nothing but deletes",
       Spec(IL, G2),
       T,
       kW,
       kStages,
       {},
       std::nullopt},
      {"1.4 Dataset nodeName empty: nothing", Spec(IL, G2), E, kRn, kStages, {}, ""},
      // ---- §H1.7, LL, G2 (new:GMLLd) ------------------------------------------------------
      {"1.7 (Train,Waiting): job -> dsNode", Spec(LL, G2), T, kW, kStages, {"insert job -> ds"}},
      {"1.7 (Eval,Waiting): job -> dsNode", Spec(LL, G2), E, kW, kStages, {"insert job -> ds"}},
      {"1.7 (Deploy,Waiting): job -> dsNode", Spec(LL, G2), D, kW, kStages, {"insert job -> ds"}},
      {"1.7 (Train,Running): job -> sedna.io/Train",
       Spec(LL, G2),
       T,
       kRn,
       kStages,
       {"insert job -> tn"}},
      {"1.7 (Eval,Running): job -> sedna.io/Eval",
       Spec(LL, G2),
       E,
       kRn,
       kStages,
       {"insert job -> en"}},
      {"1.7 (Train,Completed): delete sedna.io/Train",
       Spec(LL, G2),
       T,
       kC,
       kStages,
       {"delete job -> tn"}},
      {"1.7 (Eval,Failed): delete sedna.io/Eval",
       Spec(LL, G2),
       E,
       kF,
       kStages,
       {"delete job -> en"}},
      {"1.7 (Train,Completed) on ds node: resident", Spec(LL, G2), T, kC, kOneNode, {}},
      {"1.7 (Train,Completed) on the deploy node: resident",
       Spec(LL, G2),
       T,
       kC,
       {{"sedna.io/Train", "dn"}, {"sedna.io/Deploy", "dn"}},
       {}},
      {"1.7 (Deploy,Completed): \"\" is resident, never deletes",
       Spec(LL, G2),
       D,
       kC,
       kOneNode,
       {}},
      {"1.7 (Train,Completed), Train unset: delete to \"\"",
       Spec(LL, G2),
       T,
       kC,
       {{"sedna.io/Deploy", "dn"}},
       {"delete job -> \"\""}},
      {"1.7 (Train,Ready): nothing", Spec(LL, G2), T, kRd, kStages, {}},
      {"1.7 (Eval,Starting): nothing", Spec(LL, G2), E, kSt, kStages, {}},
      {"1.7 Dataset not found: nothing", Spec(LL, G2), T, kW, kStages, {}, std::nullopt},
      // ---- G1 IL (docs/protocol.md §P4.3, 44609f00 GMILd) -----------------------------------
      {"G1 (Train,Waiting): job then initialModel -> dsNode",
       Spec(IL, G1),
       T,
       kW,
       kStages,
       {"insert job -> ds", "insert initialModel -> ds"}},
      {"G1 (Eval,Waiting): job then deploy Model -> dsNode",
       Spec(IL, G1),
       E,
       kW,
       kStages,
       {"insert job -> ds", "insert deployModel -> ds"}},
      {"G1 (Train,Running): job -> trainNode", Spec(IL, G1), T, kRn, kStages, {"insert job -> tn"}},
      {"G1 (Train,Running), trainNode empty: nothing", Spec(IL, G1), T, kRn, {}, {}},
      {"G1 (Eval,Running): job -> evalNode, no delete",
       Spec(IL, G1),
       E,
       kRn,
       kStages,
       {"insert job -> en"}},
      {"G1 (Train,Completed): delete trainNode if not dsNode",
       Spec(IL, G1),
       T,
       kC,
       kStages,
       {"delete job -> tn"}},
      {"G1 (Train,Completed) on ds node: nothing", Spec(IL, G1), T, kC, kOneNode, {}},
      {"G1 (Eval,Failed): delete evalNode if not dsNode",
       Spec(IL, G1),
       E,
       kF,
       kStages,
       {"delete job -> en"}},
      {"G1 (Train,Completed), trainNode unset: delete to \"\"",
       Spec(IL, G1),
       T,
       kC,
       {},
       {"delete job -> \"\""}},
      {"G1 never syncs a Deploy-stage job: Waiting", Spec(IL, G1), D, kW, kStages, {}},
      {"G1 never syncs a Deploy-stage job: Completed", Spec(IL, G1), D, kC, kStages, {}},
      {"G1 Ready/Starting: nothing", Spec(IL, G1), T, kRd, kStages, {}},
      {"G1 Dataset GET failed: nothing", Spec(IL, G1), T, kW, kStages, {}, std::nullopt},
      {"G1 v0.4 hot (Deploy,Waiting): nothing",
       Spec(IL, G1, {.hot = true}),
       D,
       kW,
       Hot(kStages),
       {}},
      {"G1 v0.4 hot (Deploy,Running): job -> deployNode, delete evalNode",
       Spec(IL, G1, {.hot = true}),
       D,
       kRn,
       Hot(kStages),
       {"insert job -> dn", "delete job -> en"}},
      {"G1 v0.4 hot (Deploy,Completed): delete deployNode if not dsNode",
       Spec(IL, G1, {.hot = true}),
       D,
       kC,
       Hot(kStages),
       {"delete job -> dn"}},
      // ---- G1 LL (44609f00 GMLLd): every update to the train-spec node ----------------------
      {"G1 LL: every update -> train-spec node",
       Spec(LL, G1, {.train_spec_node = "tsn"}),
       E,
       kRd,
       kStages,
       {"insert job -> tsn"}},
      {"G1 LL: Completed too",
       Spec(LL, G1, {.train_spec_node = "tsn"}),
       D,
       kC,
       kStages,
       {"insert job -> tsn"}},
      {"G1 LL: empty train-spec node: nothing (error)", Spec(LL, G1), T, kW, kStages, {}},
  };
  return rows;
}

TEST(GmSyncSends, Table) {
  for (const Row& r : Table()) {
    SCOPED_TRACE(r.doc_row);
    EXPECT_EQ(Show(SyncSends(r.spec, State(r.stage, r.type, r.ann), r.ds)), r.sends);
  }
}

TEST(GmSyncSends, NoConditionsSendsNothing) {
  for (const GmJobSpec& spec : {Spec(IL, G1), Spec(IL, G2), Spec(LL, G2)}) {
    GmJobState st;
    st.annotations = kStages;
    EXPECT_TRUE(SyncSends(spec, st, "ds").empty());
  }
  // G1 LL sends every update, the first (no conditions yet) included.
  EXPECT_EQ(Show(SyncSends(Spec(LL, G1, {.train_spec_node = "tsn"}), GmJobState{}, "ds")),
            std::vector<std::string>{"insert job -> tsn"});
}

// Single node, all pods on the dataset node: G1 SyncSends sends the job (and Model) exactly when
// the standalone DownstreamFor says so.
TEST(GmSyncSends, G1SingleNodeAgreesWithDownstreamFor) {
  for (Stage s : {T, E, D}) {
    for (ConditionType t : {kW, kRd, kSt, kRn, kC, kF}) {
      SCOPED_TRACE(std::string(StageName(s)) + "/" + ConditionTypeName(t));
      const GmJobState st = State(s, t, kOneNode);
      const Downstream d = DownstreamFor(IL, st);
      std::vector<std::string> want;
      if (d.send_job) want.push_back("insert job -> ds");
      if (d.model == Downstream::ModelToSend::kInitial) want.push_back("insert initialModel -> ds");
      if (d.model == Downstream::ModelToSend::kDeploy) want.push_back("insert deployModel -> ds");
      EXPECT_EQ(Show(SyncSends(Spec(IL, G1), st, "ds")), want);
    }
  }
}

struct DeleteRow {
  const char* doc_row;
  GmJobSpec spec;
  Annotations ann;
  std::optional<std::string> ds;
  bool conditions;
  std::vector<std::string> sends;
};

TEST(GmDeleteSends, Table) {
  const std::vector<DeleteRow> rows = {
      {"1.4 CR deleted: every distinct node incl. \"\" (cold: no deploy node)",
       Spec(IL, G2),
       {{"sedna.io/Train", "tn"}, {"sedna.io/Eval", "ds"}},
       "ds",
       true,
       {"delete job -> \"\"", "delete job -> ds", "delete job -> tn"}},
      {"1.4 CR deleted, hot: deploy node too",
       Spec(IL, G2, {.hot = true}),
       Hot(kStages),
       "ds",
       true,
       {"delete job -> dn", "delete job -> ds", "delete job -> en", "delete job -> tn"}},
      {"1.4 CR deleted, Dataset GET failed: ds = \"\"",
       Spec(IL, G2),
       kOneNode,
       std::nullopt,
       true,
       {"delete job -> \"\"", "delete job -> ds"}},
      {"1.4 CR deleted, no conditions: still sent (delete is checked first)",
       Spec(IL, G2),
       kOneNode,
       "ds",
       false,
       {"delete job -> \"\"", "delete job -> ds"}},
      {"1.7 LL CR deleted: distinct {ds, Train, Eval, Deploy}",
       Spec(LL, G2),
       kStages,
       "ds",
       true,
       {"delete job -> dn", "delete job -> ds", "delete job -> en", "delete job -> tn"}},
      {"G1 CR deleted: non-empty of {ds, train, eval}",
       Spec(IL, G1),
       {{"sedna.io/Train", "tn"}},
       "ds",
       true,
       {"delete job -> ds", "delete job -> tn"}},
      {"G1 CR deleted, no conditions: nothing", Spec(IL, G1), kStages, "ds", false, {}},
      {"G1 CR deleted, Dataset GET failed: nothing", Spec(IL, G1), kStages, std::nullopt, true, {}},
      {"G1 v0.4 hot CR deleted: deploy node too",
       Spec(IL, G1, {.hot = true}),
       Hot(kStages),
       "ds",
       true,
       {"delete job -> dn", "delete job -> ds", "delete job -> en", "delete job -> tn"}},
      {"G1 LL CR deleted: the train-spec node",
       Spec(LL, G1, {.train_spec_node = "tsn"}),
       kStages,
       "ds",
       true,
       {"delete job -> tsn"}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.doc_row);
    GmJobState st = State(T, kW, r.ann);
    if (!r.conditions) st.conditions.clear();
    EXPECT_EQ(Show(DeleteSends(r.spec, st, r.ds)), r.sends);
  }
}

TEST(GmSyncSends, ToStringNamesOpWhatAndNode) {
  EXPECT_EQ(ToString(EdgeSend{EdgeSend::Op::kInsert, "n1", EdgeSend::What::kInitialEvalModel}),
            "insert initialEvalModel -> n1");
  EXPECT_EQ(ToString(EdgeSend{EdgeSend::Op::kDelete, "", EdgeSend::What::kJob}),
            "delete job -> \"\"");
}

}  // namespace
}  // namespace sedna::core::gm
