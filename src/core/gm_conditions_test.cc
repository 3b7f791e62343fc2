#include "core/gm_conditions.h"

#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
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
constexpr PodPhase N = PodPhase::kNone;
constexpr PodPhase P = PodPhase::kPending;
constexpr PodPhase R = PodPhase::kRunning;
constexpr PodPhase S = PodPhase::kSucceeded;
constexpr PodPhase F = PodPhase::kFailed;
constexpr JobKind IL = JobKind::kIncremental;
constexpr JobKind LL = JobKind::kLifelong;
using Model = Downstream::ModelToSend;

const char* KindName(JobKind k) { return k == IL ? "IL" : "LL"; }

JobCondition Cond(Stage stage, ConditionType type, std::string time, std::string data = "",
                  std::string message = "") {
  JobCondition c;
  c.stage = stage;
  c.type = type;
  c.last_transition_time = std::move(time);
  c.data_json = std::move(data);
  c.message = std::move(message);
  return c;
}

// Every field the model sets, so a comparison of these strings compares conditions exactly.
std::string Show(const JobCondition& c) {
  return std::string("(") + StageName(c.stage) + "," + ConditionTypeName(c.type) +
         ") t=" + c.last_transition_time + " reason=" + c.reason + " msg=" + c.message +
         " data=" + c.data_json;
}
std::vector<std::string> Show(const std::vector<JobCondition>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(Show(c));
  return out;
}
std::vector<std::string> Show(const std::vector<GmAction>& as) {
  std::vector<std::string> out;
  for (const auto& a : as) out.push_back(ToString(a));
  return out;
}

// The `data` a row's last condition carries; CreatePod must pass exactly this on.
std::string RowData(Stage s, ConditionType t) {
  return std::string("{\"row\":\"") + StageName(s) + "/" + ConditionTypeName(t) + "\"}";
}
GmAction Create(Stage s) { return CreatePod{s, RowData(s, kRd)}; }

// Pods with `phase` for `stage` and a decoy phase for the other two types, chosen so that reading
// the wrong pod gives a different answer.
Pods PodsWith(Stage stage, PodPhase phase) {
  const PodPhase decoy = phase == F ? R : F;
  Pods p{decoy, decoy, decoy};
  if (stage == T) p.train = phase;
  if (stage == E) p.eval = phase;
  if (stage == D) p.inference = phase;
  return p;
}

// ---------------------------------------------------------------------------------------------
// §P4.2 transitJobState, one row per (last stage, last type, newest pod of that stage). The job has
// started; every row holds for IL and LL alike (they differ only at the first sync, below).

struct TransitRow {
  Stage stage;
  ConditionType type;
  PodPhase pod;
  std::vector<GmAction> actions;
  std::optional<std::pair<Stage, ConditionType>> appended;
};

std::optional<std::pair<Stage, ConditionType>> At(Stage s, ConditionType t) {
  return std::make_pair(s, t);
}
constexpr std::nullopt_t kNothing = std::nullopt;
const GmAction kRestart = RestartInferencePod{};

const std::vector<TransitRow>& TransitTable() {
  static const std::vector<TransitRow> rows = {
      // (any, Waiting): nothing, waiting for the LC.
      {T, kW, N, {}, kNothing},
      {T, kW, P, {}, kNothing},
      {T, kW, R, {}, kNothing},
      {T, kW, S, {}, kNothing},
      {T, kW, F, {}, kNothing},
      {E, kW, N, {}, kNothing},
      {E, kW, P, {}, kNothing},
      {E, kW, R, {}, kNothing},
      {E, kW, S, {}, kNothing},
      {E, kW, F, {}, kNothing},
      {D, kW, N, {}, kNothing},
      {D, kW, P, {}, kNothing},
      {D, kW, R, {}, kNothing},
      {D, kW, S, {}, kNothing},
      {D, kW, F, {}, kNothing},
      // (Train|Eval, Ready): a pod from the Ready data unless one is Pending/Running; Starting.
      {T, kRd, N, {Create(T)}, At(T, kSt)},
      {T, kRd, P, {}, At(T, kSt)},
      {T, kRd, R, {}, At(T, kSt)},
      {T, kRd, S, {Create(T)}, At(T, kSt)},
      {T, kRd, F, {Create(T)}, At(T, kSt)},
      {E, kRd, N, {Create(E)}, At(E, kSt)},
      {E, kRd, P, {}, At(E, kSt)},
      {E, kRd, R, {}, At(E, kSt)},
      {E, kRd, S, {Create(E)}, At(E, kSt)},
      {E, kRd, F, {Create(E)}, At(E, kSt)},
      // (Deploy, Ready): restart the inference pod whatever its phase; Starting.
      {D, kRd, N, {kRestart}, At(D, kSt)},
      {D, kRd, P, {kRestart}, At(D, kSt)},
      {D, kRd, R, {kRestart}, At(D, kSt)},
      {D, kRd, S, {kRestart}, At(D, kSt)},
      {D, kRd, F, {kRestart}, At(D, kSt)},
      // (Train|Eval, Starting): follow the pod.
      {T, kSt, N, {}, kNothing},
      {T, kSt, P, {}, kNothing},
      {T, kSt, R, {}, At(T, kRn)},
      {T, kSt, S, {}, At(T, kC)},
      {T, kSt, F, {}, At(T, kF)},
      {E, kSt, N, {}, kNothing},
      {E, kSt, P, {}, kNothing},
      {E, kSt, R, {}, At(E, kRn)},
      {E, kSt, S, {}, At(E, kC)},
      {E, kSt, F, {}, At(E, kF)},
      // (Deploy, Starting): a Running inference pod completes the deploy.
      {D, kSt, N, {}, kNothing},
      {D, kSt, P, {}, kNothing},
      {D, kSt, R, {}, At(D, kC)},
      {D, kSt, S, {}, At(D, kC)},
      {D, kSt, F, {}, At(D, kF)},
      // (Train|Eval, Running): Running again appends nothing (type unchanged).
      {T, kRn, N, {}, kNothing},
      {T, kRn, P, {}, kNothing},
      {T, kRn, R, {}, kNothing},
      {T, kRn, S, {}, At(T, kC)},
      {T, kRn, F, {}, At(T, kF)},
      {E, kRn, N, {}, kNothing},
      {E, kRn, P, {}, kNothing},
      {E, kRn, R, {}, kNothing},
      {E, kRn, S, {}, At(E, kC)},
      {E, kRn, F, {}, At(E, kF)},
      {D, kRn, N, {}, kNothing},
      {D, kRn, P, {}, kNothing},
      {D, kRn, R, {}, At(D, kC)},
      {D, kRn, S, {}, At(D, kC)},
      {D, kRn, F, {}, At(D, kF)},
      // (any, Completed): next stage Waiting, Train -> Eval -> Deploy -> Train; pods ignored.
      {T, kC, N, {}, At(E, kW)},
      {T, kC, P, {}, At(E, kW)},
      {T, kC, R, {}, At(E, kW)},
      {T, kC, S, {}, At(E, kW)},
      {T, kC, F, {}, At(E, kW)},
      {E, kC, N, {}, At(D, kW)},
      {E, kC, P, {}, At(D, kW)},
      {E, kC, R, {}, At(D, kW)},
      {E, kC, S, {}, At(D, kW)},
      {E, kC, F, {}, At(D, kW)},
      {D, kC, N, {}, At(T, kW)},
      {D, kC, P, {}, At(T, kW)},
      {D, kC, R, {}, At(T, kW)},
      {D, kC, S, {}, At(T, kW)},
      {D, kC, F, {}, At(T, kW)},
      // (any, Failed): back to (Train, Waiting); pods ignored.
      {T, kF, N, {}, At(T, kW)},
      {T, kF, P, {}, At(T, kW)},
      {T, kF, R, {}, At(T, kW)},
      {T, kF, S, {}, At(T, kW)},
      {T, kF, F, {}, At(T, kW)},
      {E, kF, N, {}, At(T, kW)},
      {E, kF, P, {}, At(T, kW)},
      {E, kF, R, {}, At(T, kW)},
      {E, kF, S, {}, At(T, kW)},
      {E, kF, F, {}, At(T, kW)},
      {D, kF, N, {}, At(T, kW)},
      {D, kF, P, {}, At(T, kW)},
      {D, kF, R, {}, At(T, kW)},
      {D, kF, S, {}, At(T, kW)},
      {D, kF, F, {}, At(T, kW)},
  };
  return rows;
}

constexpr Stage kAllStages[] = {T, E, D};
constexpr ConditionType kAllTypes[] = {kW, kRd, kSt, kRn, kC, kF};
constexpr PodPhase kAllPhases[] = {N, P, R, S, F};

TEST(GmTransit, TableCoversEveryStageTypeAndPodOnce) {
  std::set<std::tuple<Stage, ConditionType, PodPhase>> seen;
  for (const auto& r : TransitTable()) {
    EXPECT_TRUE(seen.insert({r.stage, r.type, r.pod}).second)
        << "duplicate row " << StageName(r.stage) << "," << ConditionTypeName(r.type) << ","
        << PodPhaseName(r.pod);
  }
  EXPECT_EQ(seen.size(), std::size(kAllStages) * std::size(kAllTypes) * std::size(kAllPhases));
}

TEST(GmTransit, Table) {
  // An older condition first, so that reading anything but the last one shows.
  const JobCondition older = Cond(E, kRd, "2021-01-01T00:00:00Z", "{\"stale\":true}");
  const std::string now = "2021-08-20T08:41:07Z";
  for (JobKind kind : {IL, LL}) {
    for (const auto& r : TransitTable()) {
      SCOPED_TRACE(std::string(KindName(kind)) + " (" + StageName(r.stage) + "," +
                   ConditionTypeName(r.type) + ") pod " + PodPhaseName(r.pod));
      GmJobState in;
      in.started = true;
      in.conditions = {older, Cond(r.stage, r.type, "2021-08-20T08:40:00Z",
                                   RowData(r.stage, r.type), kReportedByLcMessage)};
      const GmStep out = Transit(kind, in, PodsWith(r.stage, r.pod), now);

      EXPECT_EQ(Show(out.actions), Show(r.actions));
      std::vector<JobCondition> want = in.conditions;
      if (r.appended) want.push_back(Cond(r.appended->first, r.appended->second, now));
      EXPECT_EQ(Show(out.state.conditions), Show(want));
      EXPECT_EQ(out.changed, r.appended.has_value());
      EXPECT_TRUE(out.state.started);
    }
  }
}

// The first sync (status.startTime unset): IL creates the inference pod unless one is already
// Pending/Running, before the transition's own actions; LL never does. `started` is set either way.
struct StartRow {
  JobKind kind;
  bool started;
  std::vector<JobCondition> conditions;
  Pods pods;
  std::vector<GmAction> actions;
  std::vector<JobCondition> appended;
  bool changed;
};

TEST(GmTransit, FirstSync) {
  const std::string now = "2021-08-20T08:40:00Z";
  const JobCondition waiting = Cond(T, kW, "2021-08-20T08:39:00Z");
  const JobCondition ready = Cond(T, kRd, "2021-08-20T08:39:00Z", RowData(T, kRd));
  const GmAction kCreateInfer = CreateInferencePod{};
  const std::vector<StartRow> rows = {
      {IL, false, {}, {N, N, N}, {kCreateInfer}, {Cond(T, kW, now)}, true},
      {IL, false, {}, {N, N, P}, {}, {Cond(T, kW, now)}, true},
      {IL, false, {}, {N, N, R}, {}, {Cond(T, kW, now)}, true},
      {IL, false, {}, {N, N, S}, {kCreateInfer}, {Cond(T, kW, now)}, true},
      {IL, false, {}, {R, R, F}, {kCreateInfer}, {Cond(T, kW, now)}, true},
      {LL, false, {}, {N, N, N}, {}, {Cond(T, kW, now)}, true},
      {LL, false, {}, {N, N, F}, {}, {Cond(T, kW, now)}, true},
      // Started already: no conditions still means (Train, Waiting), but no inference pod.
      {IL, true, {}, {N, N, N}, {}, {Cond(T, kW, now)}, true},
      {LL, true, {}, {N, N, N}, {}, {Cond(T, kW, now)}, true},
      // Not started but with conditions: the start still happens, then the normal transition.
      {IL, false, {waiting}, {N, N, N}, {kCreateInfer}, {}, true},
      {LL, false, {waiting}, {N, N, N}, {}, {}, true},
      {IL, false, {ready}, {N, N, N}, {kCreateInfer, Create(T)}, {Cond(T, kSt, now)}, true},
      {IL, true, {waiting}, {N, N, N}, {}, {}, false},
      {LL, true, {waiting}, {N, N, N}, {}, {}, false},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const StartRow& r = rows[i];
    SCOPED_TRACE("row " + std::to_string(i) + " " + KindName(r.kind));
    GmJobState in{r.conditions, r.started};
    const GmStep out = Transit(r.kind, in, r.pods, now);
    EXPECT_EQ(Show(out.actions), Show(r.actions));
    std::vector<JobCondition> want = r.conditions;
    want.insert(want.end(), r.appended.begin(), r.appended.end());
    EXPECT_EQ(Show(out.state.conditions), Show(want));
    EXPECT_TRUE(out.state.started);
    EXPECT_EQ(out.changed, r.changed);
  }
}

TEST(GmTransit, NextStageCycles) {
  EXPECT_EQ(NextStage(T), E);
  EXPECT_EQ(NextStage(E), D);
  EXPECT_EQ(NextStage(D), T);
}

// ---------------------------------------------------------------------------------------------
// PodsAfter and Settle.

TEST(GmSettle, PodsAfterMakesCreatedPodsNewestAndPending) {
  const Pods before{S, F, R};
  EXPECT_EQ(PodsAfter(before, {}), before);
  EXPECT_EQ(PodsAfter(before, {CreatePod{T, "{}"}}), (Pods{P, F, R}));
  EXPECT_EQ(PodsAfter(before, {CreatePod{E, "{}"}}), (Pods{S, P, R}));
  EXPECT_EQ(PodsAfter(before, {CreateInferencePod{}}), (Pods{S, F, P}));
  EXPECT_EQ(PodsAfter(before, {RestartInferencePod{}}), (Pods{S, F, P}));
  EXPECT_EQ(PodsAfter(before, {CreateInferencePod{}, CreatePod{T, "{}"}}), (Pods{P, F, P}));
}

// For every last condition, every combination of pods and both kinds, Settle stops at a state
// where one more pass changes nothing, within 3 passes, and its result equals chaining Transit
// and PodsAfter by hand.
TEST(GmSettle, ReachesFixedPointWithinThreePasses) {
  const std::string now = "2021-08-20T08:41:07Z";
  int cases = 0;
  for (JobKind kind : {IL, LL}) {
    for (bool started : {false, true}) {
      for (int last = -1; last < static_cast<int>(std::size(kAllStages) * std::size(kAllTypes));
           ++last) {
        GmJobState in;
        in.started = started;
        if (last >= 0) {
          const Stage s = kAllStages[last / std::size(kAllTypes)];
          const ConditionType t = kAllTypes[last % std::size(kAllTypes)];
          in.conditions = {Cond(s, t, "2021-08-20T08:40:00Z", RowData(s, t))};
        }
        for (PodPhase a : kAllPhases) {
          for (PodPhase b : kAllPhases) {
            for (PodPhase c : kAllPhases) {
              const Pods pods{a, b, c};
              SCOPED_TRACE(std::string(KindName(kind)) + " started=" + std::to_string(started) +
                           " last=" + std::to_string(last) + " pods=" + PodPhaseName(a) + "," +
                           PodPhaseName(b) + "," + PodPhaseName(c));
              const GmSettled s = Settle(kind, in, pods, now);
              EXPECT_LE(s.passes, 3);
              const GmStep again = Transit(kind, s.step.state, s.pods, now);
              EXPECT_FALSE(again.changed);
              EXPECT_TRUE(again.actions.empty());

              GmStep manual{in, {}, false};
              Pods manual_pods = pods;
              for (int i = 0; i < s.passes - 1; ++i) {
                GmStep pass = Transit(kind, manual.state, manual_pods, now);
                ASSERT_TRUE(pass.changed);
                manual_pods = PodsAfter(manual_pods, pass.actions);
                manual.state = pass.state;
                manual.actions.insert(manual.actions.end(), pass.actions.begin(),
                                      pass.actions.end());
              }
              EXPECT_EQ(Show(s.step.state.conditions), Show(manual.state.conditions));
              EXPECT_EQ(Show(s.step.actions), Show(manual.actions));
              EXPECT_EQ(s.pods, manual_pods);
              EXPECT_EQ(s.step.changed, s.passes > 1);
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 2 * 19 * 125);
}

// ---------------------------------------------------------------------------------------------
// §P4.1 upstream handler.

struct UpstreamRow {
  std::string phase;
  std::string status;
  Stage stage;
  ConditionType type;
};

TEST(GmApplyUpstream, AcceptsEveryPhaseAndStatusInAnyCase) {
  const std::vector<UpstreamRow> rows = {
      {"Train", "Ready", T, kRd},     // IL-1
      {"train", "completed", T, kC},  // IL-2 (forwarded worker message)
      {"TRAIN", "FAILED", T, kF},
      {"train", "Waiting", T, kW},
      {"Eval", "Ready", E, kRd},     // IL-3
      {"eval", "completed", E, kC},  // IL-4
      {"eVaL", "fAiLeD", E, kF},
      {"EVAL", "waiting", E, kW},
      {"Deploy", "Ready", D, kRd},     // IL-5
      {"Deploy", "Completed", D, kC},  // IL-7
      {"Deploy", "Failed", D, kF},     // IL-6
      {"dEPLOY", "WAITING", D, kW},
      {"train", "ready", T, kRd},         // LL-1
      {"deploy", "failed", D, kF},        // LL-6
      {"tra\xC4\xB0n", "READY", T, kRd},  // U+0130: Go's ToLower gives "train"
      {"TRAIN", "WA\xC4\xB0T\xC4\xB0NG", T, kW},
  };
  const std::string now = "2021-08-20T08:41:07Z";
  const std::string data = "{\"output\":{\"models\":[{\"format\":\"pb\",\"url\":\"/o/m.pb\"}]}}";
  for (JobKind kind : {IL, LL}) {
    for (bool started : {false, true}) {
      for (const auto& r : rows) {
        SCOPED_TRACE(std::string(KindName(kind)) + " " + r.phase + "/" + r.status);
        // Appended whatever the current state is (no validation, §P4.8 [P:R2]).
        GmJobState in{{Cond(D, kSt, "2021-08-20T08:40:00Z")}, started};
        const Result<GmStep> out = ApplyUpstream(kind, in, r.phase, r.status, data, now);
        ASSERT_TRUE(out.ok()) << out.message();
        EXPECT_EQ(Show(out->state.conditions),
                  Show({in.conditions[0], Cond(r.stage, r.type, now, data, "reported by lc")}));
        EXPECT_EQ(out->state.conditions.back().reason, "");
        EXPECT_TRUE(out->actions.empty());
        EXPECT_TRUE(out->changed);
        EXPECT_EQ(out->state.started, started);
      }
    }
  }
}

TEST(GmApplyUpstream, EmptyDataIsKept) {
  const Result<GmStep> out = ApplyUpstream(IL, {}, "Deploy", "Completed", "{}", "t1");
  ASSERT_TRUE(out.ok()) << out.message();
  ASSERT_EQ(out->state.conditions.size(), 1u);
  EXPECT_EQ(out->state.conditions[0].data_json, "{}");
}

struct RejectRow {
  std::string phase;
  std::string status;
  std::string error;
};

TEST(GmApplyUpstream, RejectsUnknownPhaseOrStatusNamingIt) {
  const std::string kPhases = " (expected train, eval or deploy)";
  const std::string kStatuses = " (expected ready, completed, failed or waiting)";
  const std::vector<RejectRow> rows = {
      {"deploy2", "Ready", "phase: unknown \"deploy2\"" + kPhases},
      {"", "ready", "phase: unknown \"\"" + kPhases},
      {" train", "ready", "phase: unknown \" train\"" + kPhases},
      {"training", "ready", "phase: unknown \"training\"" + kPhases},
      {"inference", "ready", "phase: unknown \"inference\"" + kPhases},
      {"tra\xC4\xB1n", "ready", "phase: unknown \"tra\xC4\xB1n\"" + kPhases},  // U+0131 stays
      {"bogus", "bogus", "phase: unknown \"bogus\"" + kPhases},         // phase is checked first
      {"train", "running", "status: unknown \"running\"" + kStatuses},  // §P3.5 forwarded running
      {"train", "starting", "status: unknown \"starting\"" + kStatuses},
      {"eval", "", "status: unknown \"\"" + kStatuses},
      {"deploy", "Complete", "status: unknown \"Complete\"" + kStatuses},
      {"Train", "ready ", "status: unknown \"ready \"" + kStatuses},
      {"Train", "True", "status: unknown \"True\"" + kStatuses},
  };
  for (JobKind kind : {IL, LL}) {
    for (const auto& r : rows) {
      SCOPED_TRACE(std::string(KindName(kind)) + " " + r.phase + "/" + r.status);
      const Result<GmStep> out =
          ApplyUpstream(kind, {{Cond(T, kW, "t0")}, true}, r.phase, r.status, "{}", "t1");
      ASSERT_FALSE(out.ok());
      EXPECT_EQ(out.message(), r.error);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// §P4.3 downstream.

struct DownstreamRow {
  std::optional<std::pair<Stage, ConditionType>> last;
  Downstream want;
};

TEST(GmDownstream, IncrementalTable) {
  const Downstream kNone{};
  const std::vector<DownstreamRow> rows = {
      {kNothing, kNone},  // no conditions yet
      {At(T, kW), {true, Model::kInitial}},
      {At(T, kRd), kNone},
      {At(T, kSt), kNone},
      {At(T, kRn), {true, Model::kNone}},  // train node = dataset node
      {At(T, kC), kNone},                  // the delete goes to another train node only
      {At(T, kF), kNone},
      {At(E, kW), {true, Model::kDeploy}},
      {At(E, kRd), kNone},
      {At(E, kSt), kNone},
      {At(E, kRn), {true, Model::kNone}},
      {At(E, kC), kNone},
      {At(E, kF), kNone},
      {At(D, kW), kNone},  // nothing for any Deploy-stage condition
      {At(D, kRd), kNone},
      {At(D, kSt), kNone},
      {At(D, kRn), kNone},
      {At(D, kC), kNone},
      {At(D, kF), kNone},
  };
  std::set<std::pair<Stage, ConditionType>> seen;
  for (const auto& r : rows) {
    GmJobState state;
    state.started = true;
    std::string trace = "no conditions";
    if (r.last) {
      seen.insert(*r.last);
      // An older (Eval, Waiting) first, so that reading anything but the last one shows.
      state.conditions = {Cond(E, kW, "t0"), Cond(r.last->first, r.last->second, "t1")};
      trace = std::string(StageName(r.last->first)) + "," + ConditionTypeName(r.last->second);
    }
    SCOPED_TRACE(trace);
    const Downstream got = DownstreamFor(IL, state);
    EXPECT_EQ(got.send_job, r.want.send_job);
    EXPECT_EQ(got.model, r.want.model);
  }
  EXPECT_EQ(seen.size(), std::size(kAllStages) * std::size(kAllTypes));
}

TEST(GmDownstream, LifelongAlwaysSendsTheJobAndNoModel) {
  EXPECT_EQ(DownstreamFor(LL, {}), (Downstream{true, Model::kNone}));
  for (Stage s : kAllStages) {
    for (ConditionType t : kAllTypes) {
      SCOPED_TRACE(std::string(StageName(s)) + "," + ConditionTypeName(t));
      EXPECT_EQ(DownstreamFor(LL, {{Cond(s, t, "t1")}, true}), (Downstream{true, Model::kNone}));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scripted round trips: a GM driven like the real one, the test playing the LC and the kubelet.

// Literal condition data of §P4.1 (IL-3 and IL-5 re-marshalled the same way).
const std::string kIl1 =
    R"({"input":{"models":[{"format":"ckpt","url":"/models/base_model"}],"dataURL":"/output/data/train/1/data.txt","outputDir":"/output/train/1"}})";
const std::string kIl2 =
    R"({"output":{"models":[{"format":"pb","url":"/output/train/1/model_finetune_tensorflow.pb","metrics":{"loss":0.8113}},{"format":"ckpt","url":"/output/train/1","metrics":{"loss":0.8113}}]}})";
const std::string kIl3 =
    R"({"input":{"models":[{"format":"pb","url":"/output/train/1/model_finetune_tensorflow.pb"},{"format":"pb","url":"/models/deploy_model/saved_model.pb"}],"dataURL":"/output/data/eval/2/data.txt"}})";
const std::string kIl4 =
    R"({"output":{"models":[{"format":"pb","url":"/output/train/1/model_finetune_tensorflow.pb","metrics":{"precision":[0.81,0.74,0.69,0.52],"recall":[0.77,0.7,0.61,0.48]}},{"format":"pb","url":"/models/deploy_model/saved_model.pb","metrics":{"precision":[0.66,0.71,0.58,0.4],"recall":[0.62,0.66,0.55,0.37]}}]}})";
const std::string kIl5 =
    R"({"input":{"models":[{"format":"pb","url":"/output/train/1/model_finetune_tensorflow.pb"}]}})";

std::string Time(int second) {
  return "2021-08-20T08:41:" + std::string(second < 10 ? "0" : "") + std::to_string(second) + "Z";
}

class FakeGm {
 public:
  explicit FakeGm(JobKind kind) : kind_(kind) {}

  // The LC's upstream report.
  void Report(const std::string& phase, const std::string& status, const std::string& data,
              int second) {
    Result<GmStep> r = ApplyUpstream(kind_, state_, phase, status, data, Time(second));
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_TRUE(r->actions.empty());
    state_ = std::move(r->state);
  }
  // A job/pod event: the GM syncs until nothing changes. Returns the actions it took.
  std::vector<std::string> Sync(int second) {
    const GmSettled s = Settle(kind_, state_, pods_, Time(second));
    state_ = s.step.state;
    pods_ = s.pods;
    return Show(s.step.actions);
  }
  // Conditions appended since the previous call.
  std::vector<std::string> Appended() {
    std::vector<std::string> out;
    for (size_t i = seen_; i < state_.conditions.size(); ++i) {
      out.push_back(Show(state_.conditions[i]));
    }
    seen_ = state_.conditions.size();
    return out;
  }
  Downstream Down() const { return DownstreamFor(kind_, state_); }
  Pods& pods() { return pods_; }
  const GmJobState& state() const { return state_; }

 private:
  JobKind kind_;
  GmJobState state_;
  Pods pods_;
  size_t seen_ = 0;
};

using Strings = std::vector<std::string>;
const std::string kLc = "reported by lc";
const Downstream kSendInitial{true, Model::kInitial};
const Downstream kSendDeploy{true, Model::kDeploy};
const Downstream kSendJob{true, Model::kNone};
const Downstream kSendNothing{};

// §P4.6 steps 2-15 on one node.
TEST(GmRoundTrip, IncrementalFullRound) {
  FakeGm gm(IL);
  // 2-3: first sync creates the inference pod; the job and the initial model go to the LC.
  EXPECT_EQ(gm.Sync(1), (Strings{"CreateInferencePod"}));
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(T, kW, Time(1)))}));
  EXPECT_TRUE(gm.state().started);
  EXPECT_EQ(gm.Down(), kSendInitial);
  EXPECT_EQ(gm.pods().inference, P);
  gm.pods().inference = R;
  EXPECT_EQ(gm.Sync(2), Strings{});
  EXPECT_EQ(gm.Appended(), Strings{});

  // 4-5: IL-1, then the train pod from its data.
  gm.Report("Train", "Ready", kIl1, 3);
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(T, kRd, Time(3), kIl1, kLc))}));
  EXPECT_EQ(gm.Down(), kSendNothing);
  EXPECT_EQ(gm.Sync(4), (Strings{"CreatePod(Train, " + kIl1 + ")"}));
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(T, kSt, Time(4)))}));
  EXPECT_EQ(gm.Down(), kSendNothing);
  EXPECT_EQ(gm.pods().train, P);

  // 6: train pod Running; the job goes to the (same) train node.
  gm.pods().train = R;
  EXPECT_EQ(gm.Sync(5), Strings{});
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(T, kRn, Time(5)))}));
  EXPECT_EQ(gm.Down(), kSendJob);

  // 8-9: IL-2 forwarded; next stage; the job and the deploy model go to the LC.
  gm.Report("train", "completed", kIl2, 7);
  EXPECT_EQ(gm.Sync(8), Strings{});
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(T, kC, Time(7), kIl2, kLc)), Show(Cond(E, kW, Time(8)))}));
  EXPECT_EQ(gm.Down(), kSendDeploy);
  gm.pods().train = S;  // after the report: the last condition is no longer in Train
  EXPECT_EQ(gm.Sync(9), Strings{});
  EXPECT_EQ(gm.Appended(), Strings{});

  // 10-11: IL-3, eval pod from its data, Running.
  gm.Report("Eval", "Ready", kIl3, 10);
  EXPECT_EQ(gm.Sync(11), (Strings{"CreatePod(Eval, " + kIl3 + ")"}));
  EXPECT_EQ(gm.pods().eval, P);
  gm.pods().eval = R;
  EXPECT_EQ(gm.Sync(12), Strings{});
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(E, kRd, Time(10), kIl3, kLc)),
                                    Show(Cond(E, kSt, Time(11))), Show(Cond(E, kRn, Time(12)))}));
  EXPECT_EQ(gm.Down(), kSendJob);

  // 13: IL-4 forwarded and IL-5 sent right after it, before the GM syncs.
  gm.Report("eval", "completed", kIl4, 14);
  gm.Report("Deploy", "Ready", kIl5, 14);
  EXPECT_EQ(gm.Down(), kSendNothing);

  // 14-15: restart the inference pod; once Running the deploy completes; back to Train.
  EXPECT_EQ(gm.Sync(15), (Strings{"RestartInferencePod"}));
  EXPECT_EQ(gm.pods().inference, P);
  EXPECT_EQ(gm.Down(), kSendNothing);
  gm.pods().inference = R;
  EXPECT_EQ(gm.Sync(16), Strings{});
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(E, kC, Time(14), kIl4, kLc)),
                     Show(Cond(D, kRd, Time(14), kIl5, kLc)), Show(Cond(D, kSt, Time(15))),
                     Show(Cond(D, kC, Time(16))), Show(Cond(T, kW, Time(16)))}));
  EXPECT_EQ(gm.Down(), kSendInitial);

  // The whole history, in order.
  const Strings kTypes = {"(Train,Waiting)",    "(Train,Ready)",     "(Train,Starting)",
                          "(Train,Running)",    "(Train,Completed)", "(Eval,Waiting)",
                          "(Eval,Ready)",       "(Eval,Starting)",   "(Eval,Running)",
                          "(Eval,Completed)",   "(Deploy,Ready)",    "(Deploy,Starting)",
                          "(Deploy,Completed)", "(Train,Waiting)"};
  Strings got;
  for (const auto& c : gm.state().conditions) {
    got.push_back(std::string("(") + StageName(c.stage) + "," + ConditionTypeName(c.type) + ")");
  }
  EXPECT_EQ(got, kTypes);
}

// §P4.6 step 9 note: the train pod succeeds before the LC's report arrives.
TEST(GmRoundTrip, TrainPodSucceedsBeforeTheReport) {
  FakeGm gm(IL);
  gm.Sync(1);
  gm.Report("Train", "Ready", kIl1, 2);
  gm.Sync(3);
  gm.pods().train = R;
  gm.Sync(4);
  gm.Appended();
  gm.pods().train = S;
  EXPECT_EQ(gm.Sync(5), Strings{});
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(T, kC, Time(5))), Show(Cond(E, kW, Time(5)))}));
  EXPECT_EQ(gm.Down(), kSendDeploy);
  // The late report lands after (Eval, Waiting) and leads to (Eval, Waiting) again.
  gm.Report("train", "completed", kIl2, 6);
  EXPECT_EQ(gm.Sync(7), Strings{});
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(T, kC, Time(6), kIl2, kLc)), Show(Cond(E, kW, Time(7)))}));
  EXPECT_EQ(gm.Down(), kSendDeploy);
}

// §P4.8 [P:R1] does not exist: IL-5 arriving after the GM appended (Deploy, Waiting) is kept and
// acted on.
TEST(GmRoundTrip, DeployReadyAfterDeployWaitingIsNotLost) {
  FakeGm gm(IL);
  gm.Sync(1);
  gm.pods() = {S, R, R};
  gm.Report("Eval", "Ready", kIl3, 2);
  gm.Sync(3);  // eval pod already Running: no pod created, Starting then Running
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(T, kW, Time(1))), Show(Cond(E, kRd, Time(2), kIl3, kLc)),
                     Show(Cond(E, kSt, Time(3))), Show(Cond(E, kRn, Time(3)))}));
  gm.Report("eval", "completed", kIl4, 4);
  EXPECT_EQ(gm.Sync(5), Strings{});
  gm.Report("Deploy", "Ready", kIl5, 6);
  EXPECT_EQ(gm.Sync(7), (Strings{"RestartInferencePod"}));
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(E, kC, Time(4), kIl4, kLc)), Show(Cond(D, kW, Time(5))),
                     Show(Cond(D, kRd, Time(6), kIl5, kLc)), Show(Cond(D, kSt, Time(7)))}));
}

// §P4.6: the deploy trigger does not fire; IL-7 goes to (Train, Waiting) without touching the pod.
TEST(GmRoundTrip, DeployNotTriggered) {
  FakeGm gm(IL);
  gm.Sync(1);
  gm.pods() = {S, R, R};
  gm.Report("Eval", "Ready", kIl3, 2);
  gm.Sync(3);
  gm.Appended();
  gm.Report("eval", "completed", kIl4, 4);
  gm.Report("Deploy", "Completed", "{}", 4);
  EXPECT_EQ(gm.Sync(5), Strings{});
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(E, kC, Time(4), kIl4, kLc)), Show(Cond(D, kC, Time(4), "{}", kLc)),
                     Show(Cond(T, kW, Time(5)))}));
  EXPECT_EQ(gm.pods().inference, R);
  EXPECT_EQ(gm.Down(), kSendInitial);
}

// A failed train pod: (Train, Failed) -> (Train, Waiting); the next Ready creates a new pod.
TEST(GmRoundTrip, FailedTrainPod) {
  FakeGm gm(IL);
  gm.Sync(1);
  gm.Report("Train", "Ready", kIl1, 2);
  EXPECT_EQ(gm.Sync(3), (Strings{"CreatePod(Train, " + kIl1 + ")"}));
  gm.pods().train = R;
  gm.Sync(4);
  gm.Appended();
  gm.pods().train = F;
  EXPECT_EQ(gm.Sync(5), Strings{});
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(T, kF, Time(5))), Show(Cond(T, kW, Time(5)))}));
  EXPECT_EQ(gm.Down(), kSendInitial);
  // The LC retries; the failed pod is not Pending/Running, so a new one is created.
  gm.Report("Train", "Ready", kIl1, 6);
  EXPECT_EQ(gm.Sync(7), (Strings{"CreatePod(Train, " + kIl1 + ")"}));
  EXPECT_EQ(gm.pods().train, P);
  EXPECT_EQ(gm.Appended(),
            (Strings{Show(Cond(T, kRd, Time(6), kIl1, kLc)), Show(Cond(T, kSt, Time(7)))}));
}

// A failed eval pod also restarts at Train.
TEST(GmRoundTrip, FailedEvalPod) {
  FakeGm gm(IL);
  gm.Sync(1);
  gm.Report("Eval", "Ready", kIl3, 2);
  gm.Sync(3);
  gm.Appended();
  gm.pods().eval = F;
  EXPECT_EQ(gm.Sync(4), Strings{});
  EXPECT_EQ(gm.Appended(), (Strings{Show(Cond(E, kF, Time(4))), Show(Cond(T, kW, Time(4)))}));
}

// §P4.7 LL round: no inference pod until (Deploy, Ready); the job is sent on every update.
TEST(GmRoundTrip, LifelongFullRound) {
  const std::string ll1 =
      R"({"input":{"dataURL":"/output/data/train/1/data.csv","outputDir":"/output/train/1"}})";
  const std::string ll3 =
      R"({"input":{"models":[{"format":"pkl","url":"/output/train/1/index.pkl"}],"dataURL":"/output/data/eval/1/data.csv","outputDir":"/output/eval/1"}})";
  FakeGm gm(LL);
  EXPECT_EQ(gm.Sync(1), Strings{});
  EXPECT_EQ(gm.pods().inference, N);
  gm.Report("train", "ready", ll1, 2);
  EXPECT_EQ(gm.Sync(3), (Strings{"CreatePod(Train, " + ll1 + ")"}));
  gm.pods().train = R;
  gm.Sync(4);
  gm.Report("train", "completed", "{\"output\":{}}", 5);
  gm.pods().train = S;
  gm.Sync(6);
  gm.Report("eval", "ready", ll3, 7);
  EXPECT_EQ(gm.Sync(8), (Strings{"CreatePod(Eval, " + ll3 + ")"}));
  gm.pods().eval = S;  // finished before any sync saw it Running
  gm.Sync(9);
  gm.Report("eval", "completed", "{\"output\":{}}", 10);
  gm.Sync(11);
  gm.Report("deploy", "ready", "{\"input\":{}}", 12);
  EXPECT_EQ(gm.Sync(13), (Strings{"RestartInferencePod"}));
  EXPECT_EQ(gm.Down(), kSendJob);
  gm.pods().inference = R;
  gm.Sync(14);
  EXPECT_EQ(gm.Down(), kSendJob);

  Strings got;
  for (const auto& c : gm.state().conditions) {
    got.push_back(std::string("(") + StageName(c.stage) + "," + ConditionTypeName(c.type) + ")@" +
                  c.last_transition_time.substr(17, 2));
  }
  // The eval pod's own success (data-less Completed at 09) comes before the report at 10.
  EXPECT_EQ(got, (Strings{"(Train,Waiting)@01", "(Train,Ready)@02", "(Train,Starting)@03",
                          "(Train,Running)@04", "(Train,Completed)@05", "(Eval,Waiting)@06",
                          "(Eval,Ready)@07", "(Eval,Starting)@08", "(Eval,Completed)@09",
                          "(Deploy,Waiting)@09", "(Eval,Completed)@10", "(Deploy,Waiting)@11",
                          "(Deploy,Ready)@12", "(Deploy,Starting)@13", "(Deploy,Completed)@14",
                          "(Train,Waiting)@14"}));
}

TEST(GmActions, ToStringNamesTheAction) {
  EXPECT_EQ(ToString(CreatePod{E, "{\"a\":1}"}), "CreatePod(Eval, {\"a\":1})");
  EXPECT_EQ(ToString(CreateInferencePod{}), "CreateInferencePod");
  EXPECT_EQ(ToString(RestartInferencePod{}), "RestartInferencePod");
  EXPECT_STREQ(PodPhaseName(S), "Succeeded");
}

}  // namespace
}  // namespace sedna::core::gm
