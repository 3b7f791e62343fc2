// Transit/Settle per generation and spec (docs/protocol.md §H1.3 IL, §H1.7 LL): the rows where
// G2, hot update and pod nodes change what the GM does. Every other (stage, type, pod) combination
// is pinned to the G1 machine of gm_conditions_test.cc by GmTransitG2.EqualsG1Elsewhere.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/gm_conditions.h"

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
constexpr PodPhase N = PodPhase::kNone;
constexpr PodPhase P = PodPhase::kPending;
constexpr PodPhase R = PodPhase::kRunning;
constexpr PodPhase S = PodPhase::kSucceeded;
constexpr PodPhase F = PodPhase::kFailed;
constexpr JobKind IL = JobKind::kIncremental;
constexpr JobKind LL = JobKind::kLifelong;
constexpr Generation G1 = Generation::kG1;
constexpr Generation G2 = Generation::kG2;
const std::string kCfg =
    "/var/lib/sedna/model-hot-update/default/incrementallearningjob/j/model_config.json";
using Annotations = std::map<std::string, std::string>;

GmJobSpec Spec(JobKind kind, Generation g, bool hot = false) {
  GmJobSpec s;
  s.kind = kind;
  s.generation = g;
  s.hot_update = hot;
  if (hot) s.hot_update_config = kCfg;
  return s;
}

JobCondition Cond(Stage stage, ConditionType type, std::string time = "t0") {
  JobCondition c;
  c.stage = stage;
  c.type = type;
  c.last_transition_time = std::move(time);
  return c;
}

std::string Show(const std::vector<GmAction>& as) {
  std::string out;
  for (const auto& a : as) out += ToString(a) + ";";
  return out;
}
std::string Show(const std::optional<JobCondition>& c) {
  if (!c) return "none";
  return std::string(StageName(c->stage)) + "/" + ConditionTypeName(c->type);
}
std::string Show(const Annotations& a) {
  std::string out;
  for (const auto& [k, v] : a) out += k + "=" + v + ";";
  return out;
}

// Pods with `phase` for `stage`, every pod placed on its own node, decoys elsewhere.
Pods PodsWith(Stage stage, PodPhase phase) {
  const PodPhase decoy = phase == F ? R : F;
  Pods p{decoy, decoy, decoy, "node-t", "node-e", "node-i"};
  if (stage == T) p.train = phase;
  if (stage == E) p.eval = phase;
  if (stage == D) p.inference = phase;
  return p;
}

struct Row {
  const char* doc_row;  // the row of §H1.3 / §H1.7 it pins
  GmJobSpec spec;
  Stage stage;
  ConditionType type;
  PodPhase pod;
  Annotations before;
  std::vector<GmAction> actions;
  std::optional<std::pair<Stage, ConditionType>> appended;
  Annotations after;
  bool changed;
};

std::optional<std::pair<Stage, ConditionType>> At(Stage s, ConditionType t) {
  return std::make_pair(s, t);
}
constexpr std::nullopt_t kNothing = std::nullopt;
const GmAction kRestart = RestartInferencePod{};

const std::vector<Row>& Table() {
  static const std::vector<Row> rows = {
      // §H1.3 (Deploy, Ready) cold: restart, then (Deploy, Completed) directly (new:GMIL:399-408).
      {"1.3 (Deploy,Ready) cold, G2", Spec(IL, G2), D, kRd, R, {}, {kRestart}, At(D, kC), {}, true},
      {"1.3 (Deploy,Ready) cold, G2, no pod",
       Spec(IL, G2),
       D,
       kRd,
       N,
       {},
       {kRestart},
       At(D, kC),
       {},
       true},
      {"1.3 (Deploy,Ready) cold, G1 (old)",
       Spec(IL, G1),
       D,
       kRd,
       R,
       {},
       {kRestart},
       At(D, kSt),
       {},
       true},
      // §H1.3 (Deploy, Ready) hot: no restart, (Deploy, Starting) (new:GMIL:409-411; v0.4 too).
      {"1.3 (Deploy,Ready) hot, G2", Spec(IL, G2, true), D, kRd, R, {}, {}, At(D, kSt), {}, true},
      {"1.3 (Deploy,Ready) hot, G1/v0.4",
       Spec(IL, G1, true),
       D,
       kRd,
       R,
       {},
       {},
       At(D, kSt),
       {},
       true},
      // §H1.3 (Deploy, Starting|Running) + inference Running, cold: Completed.
      {"1.3 (Deploy,Starting)+Running cold, G2",
       Spec(IL, G2),
       D,
       kSt,
       R,
       {},
       {},
       At(D, kC),
       {},
       true},
      // §H1.3 hot: annotate sedna.io/Deploy=<inference node>, (Deploy, Running); stays there.
      {"1.3 (Deploy,Starting)+Running hot, G2",
       Spec(IL, G2, true),
       D,
       kSt,
       R,
       {},
       {},
       At(D, kRn),
       {{"sedna.io/Deploy", "node-i"}},
       true},
      {"1.3 (Deploy,Starting)+Running hot, G1/v0.4",
       Spec(IL, G1, true),
       D,
       kSt,
       R,
       {},
       {},
       At(D, kRn),
       {{"sedna.io/Deploy", "node-i"}},
       true},
      {"1.3 (Deploy,Running) hot stays while the pod runs",
       Spec(IL, G2, true),
       D,
       kRn,
       R,
       {{"sedna.io/Deploy", "node-i"}},
       {},
       kNothing,
       {{"sedna.io/Deploy", "node-i"}},
       false},
      {"1.3 (Deploy,Running) hot, inference pod ends",
       Spec(IL, G2, true),
       D,
       kRn,
       S,
       {},
       {},
       At(D, kC),
       {},
       true},
      {"1.3 (Deploy,Running) hot, inference pod fails",
       Spec(IL, G2, true),
       D,
       kRn,
       F,
       {},
       {},
       At(D, kF),
       {},
       true},
      {"1.3 (Deploy,Starting) hot, pod pending",
       Spec(IL, G2, true),
       D,
       kSt,
       P,
       {},
       {},
       kNothing,
       {},
       false},
      // Stage pod Running: sedna.io/<Stage> = its node (IL both generations, LL G2).
      {"1.4 (Train,Starting)+Running annotates Train, G2",
       Spec(IL, G2),
       T,
       kSt,
       R,
       {},
       {},
       At(T, kRn),
       {{"sedna.io/Train", "node-t"}},
       true},
      {"1.4 (Eval,Starting)+Running annotates Eval, G2",
       Spec(IL, G2),
       E,
       kSt,
       R,
       {},
       {},
       At(E, kRn),
       {{"sedna.io/Eval", "node-e"}},
       true},
      {"44609f00 IL annotates Train too, G1",
       Spec(IL, G1),
       T,
       kSt,
       R,
       {},
       {},
       At(T, kRn),
       {{"sedna.io/Train", "node-t"}},
       true},
      {"annotation already there: no change",
       Spec(IL, G2),
       T,
       kRn,
       R,
       {{"sedna.io/Train", "node-t"}},
       {},
       kNothing,
       {{"sedna.io/Train", "node-t"}},
       false},
      {"pod moved: annotation rewritten, no condition",
       Spec(IL, G2),
       E,
       kRn,
       R,
       {{"sedna.io/Eval", "old"}},
       {},
       kNothing,
       {{"sedna.io/Eval", "node-e"}},
       true},
      {"pod Succeeded: no annotation", Spec(IL, G2), T, kSt, S, {}, {}, At(T, kC), {}, true},
      // §H1.7 LL.
      {"1.7 LL (Deploy,Ready), G2: restart, Completed",
       Spec(LL, G2),
       D,
       kRd,
       R,
       {},
       {kRestart},
       At(D, kC),
       {},
       true},
      {"1.7 LL (Deploy,Ready), G1 (old): restart, Starting",
       Spec(LL, G1),
       D,
       kRd,
       R,
       {},
       {kRestart},
       At(D, kSt),
       {},
       true},
      {"1.7 LL (Train,Starting)+Running annotates, G2",
       Spec(LL, G2),
       T,
       kSt,
       R,
       {},
       {},
       At(T, kRn),
       {{"sedna.io/Train", "node-t"}},
       true},
      {"1.7 LL (Eval,Starting)+Running annotates, G2",
       Spec(LL, G2),
       E,
       kSt,
       R,
       {},
       {},
       At(E, kRn),
       {{"sedna.io/Eval", "node-e"}},
       true},
      {"1.7 LL (Deploy,Starting)+Running, G2 (no Deploy special case)",
       Spec(LL, G2),
       D,
       kSt,
       R,
       {},
       {},
       At(D, kRn),
       {{"sedna.io/Deploy", "node-i"}},
       true},
      {"old LL never annotates, G1", Spec(LL, G1), T, kSt, R, {}, {}, At(T, kRn), {}, true},
      {"old LL (Deploy,Starting)+Running: Completed, G1",
       Spec(LL, G1),
       D,
       kSt,
       R,
       {},
       {},
       At(D, kC),
       {},
       true},
  };
  return rows;
}

TEST(GmTransitG2, Table) {
  const std::string now = "t1";
  for (const Row& r : Table()) {
    SCOPED_TRACE(r.doc_row);
    GmJobState in;
    in.started = true;
    in.conditions = {Cond(E, kRd), Cond(r.stage, r.type)};
    in.annotations = r.before;
    const GmStep out = Transit(r.spec, in, PodsWith(r.stage, r.pod), now);
    EXPECT_EQ(Show(out.actions), Show(r.actions));
    std::optional<JobCondition> appended;
    if (out.state.conditions.size() > in.conditions.size()) appended = out.state.conditions.back();
    EXPECT_EQ(out.state.conditions.size(), in.conditions.size() + (r.appended ? 1 : 0));
    EXPECT_EQ(Show(appended),
              r.appended ? Show(Cond(r.appended->first, r.appended->second)) : std::string("none"));
    if (appended) {
      EXPECT_EQ(appended->last_transition_time, now);
    }
    EXPECT_EQ(Show(out.state.annotations), Show(r.after));
    EXPECT_EQ(out.changed, r.changed);
  }
}

// An empty pod node never adds the key: Go's addJobAnnotations sees ann[key] == "" already.
TEST(GmTransitG2, EmptyNodeAddsNoAnnotation) {
  GmJobState in;
  in.started = true;
  in.conditions = {Cond(T, kSt)};
  Pods pods;
  pods.train = R;
  const GmStep out = Transit(Spec(IL, G2), in, pods, "t1");
  EXPECT_TRUE(out.state.annotations.empty());
  EXPECT_EQ(Show(std::optional<JobCondition>(out.state.conditions.back())), "Train/Running");
}

// Outside the rows above, G2 and hot update change nothing: with node-less pods (so no annotation
// can differ) every (stage, type, pod) gives what the G1 machine gives, for IL and LL.
TEST(GmTransitG2, EqualsG1Elsewhere) {
  std::set<std::tuple<JobKind, Stage, ConditionType, PodPhase>> differ;
  for (PodPhase p : {N, P, R, S, F}) {
    differ.insert({IL, D, kRd, p});
    differ.insert({LL, D, kRd, p});
    differ.insert({IL, D, kSt, p});  // hot only
    differ.insert({IL, D, kRn, p});  // hot only
  }
  differ.insert({LL, D, kSt, R});
  differ.insert({LL, D, kRn, R});
  int compared = 0;
  for (JobKind kind : {IL, LL}) {
    for (Stage s : {T, E, D}) {
      for (ConditionType t : {kW, kRd, kSt, kRn, kC, kF}) {
        for (PodPhase p : {N, P, R, S, F}) {
          if (differ.count({kind, s, t, p})) continue;
          SCOPED_TRACE(std::string(StageName(s)) + "/" + ConditionTypeName(t) + " pod " +
                       PodPhaseName(p));
          GmJobState in;
          in.started = true;
          in.conditions = {Cond(s, t)};
          Pods pods;
          pods.train = pods.eval = pods.inference = p;
          const GmStep g1 = Transit(kind, in, pods, "t1");
          for (const GmJobSpec& spec :
               {Spec(kind, G2), Spec(kind, G2, true), Spec(kind, G1, true)}) {
            if (kind == LL && spec.hot_update) continue;
            const GmStep other = Transit(spec, in, pods, "t1");
            EXPECT_EQ(Show(other.actions), Show(g1.actions));
            EXPECT_EQ(other.state.conditions.size(), g1.state.conditions.size());
            EXPECT_EQ(Show(std::optional<JobCondition>(other.state.conditions.back())),
                      Show(std::optional<JobCondition>(g1.state.conditions.back())));
            EXPECT_EQ(other.changed, g1.changed);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 200);
}

// §H1.3 first sync of a hot job: the inference pod is created and the job annotated with its
// model_config.json path; not when an inference pod is already active, and never for a cold job.
TEST(GmTransitG2, FirstSyncAnnotatesHotJobs) {
  struct StartRow {
    const char* name;
    GmJobSpec spec;
    PodPhase inference;
    std::string actions;
    Annotations after;
  };
  const std::vector<StartRow> rows = {
      {"G2 hot",
       Spec(IL, G2, true),
       N,
       "CreateInferencePod;",
       {{kHotUpdateConfigAnnotation, kCfg}}},
      {"G1/v0.4 hot",
       Spec(IL, G1, true),
       N,
       "CreateInferencePod;",
       {{kHotUpdateConfigAnnotation, kCfg}}},
      {"G2 hot, pod running", Spec(IL, G2, true), R, "", {}},
      {"G2 hot, old pod failed",
       Spec(IL, G2, true),
       F,
       "CreateInferencePod;",
       {{kHotUpdateConfigAnnotation, kCfg}}},
      {"G2 cold", Spec(IL, G2), N, "CreateInferencePod;", {}},
      {"G2 LL", Spec(LL, G2), N, "", {}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    Pods pods;
    pods.inference = r.inference;
    const GmStep out = Transit(r.spec, GmJobState{}, pods, "t0");
    EXPECT_EQ(Show(out.actions), r.actions);
    EXPECT_EQ(Show(out.state.annotations), Show(r.after));
    EXPECT_TRUE(out.state.started);
    EXPECT_EQ(Show(std::optional<JobCondition>(out.state.conditions.back())), "Train/Waiting");
  }
}

TEST(GmTransitG2, HotUpdateConfigPathIsLowerCased) {
  EXPECT_EQ(HotUpdateConfigPath("Default", "Helmet-Demo"),
            "/var/lib/sedna/model-hot-update/default/incrementallearningjob/helmet-demo/"
            "model_config.json");
  EXPECT_STREQ(GenerationName(G1), "G1");
  EXPECT_STREQ(GenerationName(G2), "G2");
}

// A G2 hot deploy settles from the LC's Deploy Ready to (Deploy, Running) with the inference
// pod's node annotated, and only the LC's forwarded report moves it on to the next round.
TEST(GmTransitG2, HotDeploySettlesAtRunningUntilTheReport) {
  const GmJobSpec spec = Spec(IL, G2, true);
  GmJobState st;
  st.started = true;
  st.conditions = {Cond(E, kC), Cond(D, kW), Cond(D, kRd)};
  Pods pods;
  pods.inference = R;
  pods.inference_node = "edge-2";
  GmSettled s = Settle(spec, st, pods, "t1");
  EXPECT_EQ(Show(s.step.actions), "");
  EXPECT_EQ(Show(std::optional<JobCondition>(s.step.state.conditions.back())), "Deploy/Running");
  EXPECT_EQ(s.step.state.conditions.size(), 5u);
  EXPECT_EQ(s.step.state.annotations.at("sedna.io/Deploy"), "edge-2");
  // A resync changes nothing.
  EXPECT_FALSE(Settle(spec, s.step.state, s.pods, "t2").step.changed);
  // The LC forwards the inference worker's "deploy completed".
  auto report = ApplyUpstream(IL, s.step.state, "deploy", "completed", "{\"output\":{}}", "t3");
  ASSERT_TRUE(report.ok());
  GmSettled next = Settle(spec, report->state, s.pods, "t4");
  EXPECT_EQ(Show(std::optional<JobCondition>(next.step.state.conditions.back())), "Train/Waiting");
  EXPECT_EQ(Show(next.step.actions), "");
}

// G2 cold (Deploy, Ready) restarts the inference pod and closes the round in one pass.
TEST(GmTransitG2, ColdDeployClosesTheRoundWithoutStarting) {
  GmJobState st;
  st.started = true;
  st.conditions = {Cond(D, kW), Cond(D, kRd)};
  Pods pods;
  pods.inference = R;
  GmSettled s = Settle(Spec(IL, G2), st, pods, "t1");
  EXPECT_EQ(Show(s.step.actions), "RestartInferencePod;");
  ASSERT_EQ(s.step.state.conditions.size(), 4u);
  EXPECT_EQ(Show(std::optional<JobCondition>(s.step.state.conditions[2])), "Deploy/Completed");
  EXPECT_EQ(Show(std::optional<JobCondition>(s.step.state.conditions[3])), "Train/Waiting");
  EXPECT_EQ(s.pods.inference, P);
}

}  // namespace
}  // namespace sedna::core::gm
