#include "core/resources.h"

namespace sedna::core {

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kTrain:
      return "Train";
    case Stage::kEval:
      return "Eval";
    case Stage::kDeploy:
      return "Deploy";
  }
  return "Train";
}

const char* ConditionTypeName(ConditionType t) {
  switch (t) {
    case ConditionType::kWaiting:
      return "Waiting";
    case ConditionType::kReady:
      return "Ready";
    case ConditionType::kStarting:
      return "Starting";
    case ConditionType::kRunning:
      return "Running";
    case ConditionType::kCompleted:
      return "Completed";
    case ConditionType::kFailed:
      return "Failed";
  }
  return "Waiting";
}

std::string StageNodeAnnotation(Stage s) {
  return std::string(kStageNodeAnnotationPrefix) + StageName(s);
}

std::optional<Stage> ParseStage(const std::string& s) {
  if (s == "Train") return Stage::kTrain;
  if (s == "Eval") return Stage::kEval;
  if (s == "Deploy") return Stage::kDeploy;
  return std::nullopt;
}

std::optional<ConditionType> ParseConditionType(const std::string& s) {
  for (auto t : {ConditionType::kWaiting, ConditionType::kReady, ConditionType::kStarting,
                 ConditionType::kRunning, ConditionType::kCompleted, ConditionType::kFailed}) {
    if (s == ConditionTypeName(t)) return t;
  }
  return std::nullopt;
}

}  // namespace sedna::core
