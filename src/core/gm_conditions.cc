#include "core/gm_conditions.h"

#include <optional>
#include <utility>

namespace sedna::core::gm {
namespace {

// Go's strings.ToLower restricted to what can matter for comparing against ASCII words: ASCII
// letters, and U+0130 (UTF-8 C4 B0), which Go lowers to plain 'i'. (U+212A KELVIN SIGN lowers to
// 'k', which no accepted word contains.)
std::string GoLower(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 'A' && c <= 'Z') {
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (c == 0xC4 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xB0) {
      out.push_back('i');
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::optional<Stage> ParsePhase(const std::string& phase) {
  const std::string p = GoLower(phase);
  if (p == "train") return Stage::kTrain;
  if (p == "eval") return Stage::kEval;
  if (p == "deploy") return Stage::kDeploy;
  return std::nullopt;
}

std::optional<ConditionType> ParseReportedStatus(const std::string& status) {
  const std::string s = GoLower(status);
  if (s == "ready") return ConditionType::kReady;
  if (s == "completed") return ConditionType::kCompleted;
  if (s == "failed") return ConditionType::kFailed;
  if (s == "waiting") return ConditionType::kWaiting;
  return std::nullopt;
}

PodPhase PodOf(const Pods& pods, Stage stage) {
  switch (stage) {
    case Stage::kTrain:
      return pods.train;
    case Stage::kEval:
      return pods.eval;
    case Stage::kDeploy:
      return pods.inference;
  }
  return PodPhase::kNone;
}

const std::string& NodeOf(const Pods& pods, Stage stage) {
  switch (stage) {
    case Stage::kTrain:
      return pods.train_node;
    case Stage::kEval:
      return pods.eval_node;
    case Stage::kDeploy:
      return pods.inference_node;
  }
  return pods.train_node;
}

bool Active(PodPhase p) { return p == PodPhase::kPending || p == PodPhase::kRunning; }

// Go's addJobAnnotations: a no-op when ann[key] already equals value (a missing key reads "").
bool Annotate(GmJobState& state, const std::string& key, const std::string& value) {
  auto it = state.annotations.find(key);
  const std::string current = it == state.annotations.end() ? "" : it->second;
  if (current == value) return false;
  state.annotations[key] = value;
  return true;
}

JobCondition GmCondition(Stage stage, ConditionType type, const std::string& now) {
  JobCondition c;
  c.stage = stage;
  c.type = type;
  c.last_transition_time = now;
  return c;
}

}  // namespace

const char* GenerationName(Generation g) { return g == Generation::kG2 ? "G2" : "G1"; }

std::string HotUpdateConfigPath(const std::string& ns, const std::string& name) {
  std::string p = "/var/lib/sedna/model-hot-update/" + ns + "/" + kKindIlJob + "/" + name +
                  "/model_config.json";
  for (auto& c : p) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return p;
}

const char* PodPhaseName(PodPhase p) {
  switch (p) {
    case PodPhase::kNone:
      return "None";
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
  }
  return "None";
}

std::string ToString(const GmAction& a) {
  if (const auto* c = std::get_if<CreatePod>(&a)) {
    return std::string("CreatePod(") + StageName(c->stage) + ", " + c->data_json + ")";
  }
  if (std::holds_alternative<CreateInferencePod>(a)) return "CreateInferencePod";
  return "RestartInferencePod";
}

Stage NextStage(Stage s) {
  switch (s) {
    case Stage::kTrain:
      return Stage::kEval;
    case Stage::kEval:
      return Stage::kDeploy;
    case Stage::kDeploy:
      return Stage::kTrain;
  }
  return Stage::kTrain;
}

Result<GmStep> ApplyUpstream(JobKind kind, const GmJobState& state, const std::string& phase,
                             const std::string& status, const std::string& data_json,
                             const std::string& now) {
  const std::optional<Stage> stage = ParsePhase(phase);
  if (!stage) {
    return Result<GmStep>::Error("phase: unknown \"" + phase +
                                 "\" (expected train, eval or deploy)");
  }
  const std::optional<ConditionType> type = ParseReportedStatus(status);
  if (!type) {
    return Result<GmStep>::Error("status: unknown \"" + status +
                                 "\" (expected ready, completed, failed or waiting)");
  }
  GmStep step{state, {}, true};
  JobCondition c = GmCondition(*stage, *type, now);
  c.message = kReportedByLcMessage;
  c.data_json = data_json;
  step.state.conditions.push_back(std::move(c));
  return step;
}

GmStep Transit(JobKind kind, const GmJobState& state, const Pods& pods, const std::string& now) {
  return Transit(GmJobSpec{kind, Generation::kG1}, state, pods, now);
}

GmStep Transit(const GmJobSpec& spec, const GmJobState& state, const Pods& pods,
               const std::string& now) {
  const bool il = spec.kind == JobKind::kIncremental;
  const bool g2 = spec.generation == Generation::kG2;
  const bool hot = il && spec.hot_update;
  GmStep step{state, {}, false};
  if (!state.started) {
    step.state.started = true;
    step.changed = true;
    if (il && !Active(pods.inference)) {
      step.actions.push_back(CreateInferencePod{});
      if (hot && !spec.hot_update_config.empty()) {
        Annotate(step.state, kHotUpdateConfigAnnotation, spec.hot_update_config);
      }
    }
  }
  if (state.conditions.empty()) {
    step.state.conditions.push_back(GmCondition(Stage::kTrain, ConditionType::kWaiting, now));
    step.changed = true;
    return step;
  }

  const JobCondition& last = state.conditions.back();
  Stage stage = last.stage;
  ConditionType type = last.type;
  const PodPhase pod = PodOf(pods, last.stage);
  // Which stages' pods the GM names in sedna.io/<Stage> when it sees them Running.
  const bool annotates = stage == Stage::kDeploy ? (hot || (g2 && !il)) : (il || g2);
  switch (last.type) {
    case ConditionType::kWaiting:
      break;
    case ConditionType::kReady:
      if (stage == Stage::kDeploy) {
        if (hot) {
          type = ConditionType::kStarting;
        } else {
          step.actions.push_back(RestartInferencePod{});
          type = g2 ? ConditionType::kCompleted : ConditionType::kStarting;
        }
      } else {
        if (!Active(pod)) step.actions.push_back(CreatePod{stage, last.data_json});
        type = ConditionType::kStarting;
      }
      break;
    case ConditionType::kStarting:
    case ConditionType::kRunning:
      if (pod == PodPhase::kRunning) {
        if (annotates && Annotate(step.state, StageNodeAnnotation(stage), NodeOf(pods, stage))) {
          step.changed = true;
        }
        type = stage == Stage::kDeploy && !hot && (il || !g2) ? ConditionType::kCompleted
                                                              : ConditionType::kRunning;
      } else if (pod == PodPhase::kSucceeded) {
        type = ConditionType::kCompleted;
      } else if (pod == PodPhase::kFailed) {
        type = ConditionType::kFailed;
      }
      break;
    case ConditionType::kCompleted:
      stage = NextStage(stage);
      type = ConditionType::kWaiting;
      break;
    case ConditionType::kFailed:
      stage = Stage::kTrain;
      type = ConditionType::kWaiting;
      break;
  }
  if (type != last.type) {
    step.state.conditions.push_back(GmCondition(stage, type, now));
    step.changed = true;
  }
  return step;
}

Pods PodsAfter(const Pods& pods, const std::vector<GmAction>& actions) {
  Pods out = pods;
  for (const GmAction& a : actions) {
    if (const auto* c = std::get_if<CreatePod>(&a)) {
      switch (c->stage) {
        case Stage::kTrain:
          out.train = PodPhase::kPending;
          break;
        case Stage::kEval:
          out.eval = PodPhase::kPending;
          break;
        case Stage::kDeploy:
          out.inference = PodPhase::kPending;
          break;
      }
    } else {
      out.inference = PodPhase::kPending;
    }
  }
  return out;
}

GmSettled Settle(JobKind kind, const GmJobState& state, const Pods& pods, const std::string& now) {
  return Settle(GmJobSpec{kind, Generation::kG1}, state, pods, now);
}

GmSettled Settle(const GmJobSpec& spec, const GmJobState& state, const Pods& pods,
                 const std::string& now) {
  GmSettled s{{state, {}, false}, pods, 0};
  while (s.passes < kMaxSettlePasses) {
    GmStep pass = Transit(spec, s.step.state, s.pods, now);
    ++s.passes;
    if (!pass.changed) break;
    s.pods = PodsAfter(s.pods, pass.actions);
    s.step.state = std::move(pass.state);
    for (GmAction& a : pass.actions) s.step.actions.push_back(std::move(a));
    s.step.changed = true;
  }
  return s;
}

Downstream DownstreamFor(JobKind kind, const GmJobState& state) {
  using Model = Downstream::ModelToSend;
  if (kind == JobKind::kLifelong) return {true, Model::kNone};
  if (state.conditions.empty()) return {};
  const JobCondition& last = state.conditions.back();
  if (last.stage == Stage::kDeploy) return {};
  switch (last.type) {
    case ConditionType::kWaiting:
      return {true, last.stage == Stage::kTrain ? Model::kInitial : Model::kDeploy};
    case ConditionType::kRunning:
      return {true, Model::kNone};
    default:
      return {};
  }
}

}  // namespace sedna::core::gm
