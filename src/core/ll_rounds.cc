// The LL job (ll_job.h), the round in the conditions: which version a condition's round is, whether
// this LC answered it or sent its Ready, the round's output models, and the Failed conditions
// about the worker this LC awaits.
#include <algorithm>

#include "core/ll_stepper.h"

namespace sedna::core::ll::internal {

// The version n of "<prefix><n>" (n >= 1, decimal digits only), else 0.
int64_t VersionOf(const std::string& dir, const std::string& prefix) {
  if (dir.size() <= prefix.size() || dir.compare(0, prefix.size(), prefix) != 0) return 0;
  int64_t n = 0;
  for (size_t i = prefix.size(); i < dir.size(); ++i) {
    if (dir[i] < '0' || dir[i] > '9' || n > (int64_t{1} << 50)) return 0;
    n = n * 10 + (dir[i] - '0');
  }
  return n;
}

// ---- the round in the conditions

// The version of the round condition `idx` is in: that of the latest (Train|Eval, Ready) before
// it, from its outputDir <out>/train/<v> or <out>/eval/<v>. 0: no Ready before it (the first
// round); -1: unknown (a Ready without this job's layout).
int64_t Stepper::VersionBefore(int64_t idx) const {
  const std::string out = Out();
  for (int64_t j = std::min<int64_t>(idx, static_cast<int64_t>(Conds().size())); j-- > 0;) {
    const JobCondition& c = Conds()[static_cast<size_t>(j)];
    if (c.type != ConditionType::kReady || c.stage == Stage::kDeploy) continue;
    const std::string prefix = out + (c.stage == Stage::kTrain ? "/train/" : "/eval/");
    const std::string& dir = c.data.output_dir;
    if (out.empty() || dir.size() <= prefix.size() || dir.compare(0, prefix.size(), prefix)) {
      return -1;
    }
    int64_t v = 0;
    for (size_t i = prefix.size(); i < dir.size(); ++i) {
      if (dir[i] == '/' && i + 1 == dir.size()) break;
      if (dir[i] < '0' || dir[i] > '9' || v > (int64_t{1} << 50)) return -1;
      v = v * 10 + (dir[i] - '0');
    }
    return v > 0 ? v : -1;
  }
  return 0;
}

// A Waiting of a round this LC already answered, shown at a new index ([D:I23]).
bool Stepper::AnsweredRound(int64_t idx, Stage stage) {
  const int64_t v = VersionBefore(idx);
  bool answered = false;
  if (stage == Stage::kTrain) {
    answered = v >= 0 && s.answered_train_waiting >= 0 && v + 1 <= s.version;
  } else if (stage == Stage::kEval) {
    answered = v > 0 && v <= s.answered_eval_version;
  } else {
    answered = v > 0 && v <= s.answered_deploy_version;
  }
  if (answered && s.last_stale_waiting != idx) {
    Info(Waiting(idx, stage) + " is of version " +
         std::to_string(stage == Stage::kTrain ? v + 1 : v) + ", whose " + StageName(stage) +
         " this LC already answered: a stale GM object; not answered again");
  }
  if (answered) s.last_stale_waiting = idx;
  return answered;
}

// The latest (stage, Ready) of the round before condition `idx`: scanning back from idx - 1 to
// the first (stage, Ready) or (stage, Waiting); nullptr when a Waiting comes first.
const JobCondition* Stepper::RoundReady(int64_t idx, Stage stage) const {
  for (int64_t j = idx; j-- > 0;) {
    const JobCondition& c = Conds()[static_cast<size_t>(j)];
    if (c.stage != stage) continue;
    if (c.type == ConditionType::kReady) return &c;
    if (c.type == ConditionType::kWaiting) return nullptr;
  }
  return nullptr;
}

// Output models of the round's latest (stage, Completed) that carries any (same scan).
const std::vector<ModelRef>* Stepper::RoundOutput(int64_t idx, Stage stage) const {
  for (int64_t j = idx; j-- > 0;) {
    const JobCondition& c = Conds()[static_cast<size_t>(j)];
    if (c.stage != stage) continue;
    if (c.type == ConditionType::kReady || c.type == ConditionType::kWaiting) return nullptr;
    if (c.type == ConditionType::kCompleted && c.data.has_output && !c.data.output_models.empty()) {
      return &c.data.output_models;
    }
  }
  return nullptr;
}

// The round's ready was this LC's for `version`: it is in the conditions with our outputDir,
// or it is not there and ours is still open.
bool Stepper::RoundIsOurs(int64_t idx, Stage stage) const {
  if (s.version == 0) return false;
  if (const JobCondition* r = RoundReady(idx, stage)) {
    return r->data.output_dir == OurOutputDir(stage);
  }
  const Phase p = stage == Stage::kTrain ? Phase::kTrain : Phase::kEval;
  return s.phase == p && s.worker_awaited;
}

// Whether the latest (stage, Ready) before condition `idx` is the ready this LC sent for the
// open worker (its outputDir names the current version).
bool Stepper::ReadyIsOurs(size_t idx, Stage stage) const {
  for (size_t j = idx; j-- > 0;) {
    const JobCondition& c = Conds()[j];
    if (c.stage == stage && c.type == ConditionType::kReady) {
      return c.data.output_dir == OurOutputDir(stage);
    }
  }
  return false;
}

// Examines each condition appended since the last step once; a (Train|Eval, Failed) about the
// open worker ends it ([P:L1], [P:L2]).
void Stepper::ScanConditions() {
  const int64_t n = static_cast<int64_t>(Conds().size());
  for (int64_t i = s.conditions_seen; i < n; ++i) {
    const JobCondition& c = Conds()[static_cast<size_t>(i)];
    if (c.type != ConditionType::kFailed || (c.stage != Stage::kTrain && c.stage != Stage::kEval)) {
      continue;
    }
    const Phase phase = c.stage == Stage::kTrain ? Phase::kTrain : Phase::kEval;
    const std::string what =
        std::string("condition #") + std::to_string(i) + " (" + StageName(c.stage) + ", Failed)";
    if (s.phase != phase || !s.worker_awaited || !ReadyIsOurs(static_cast<size_t>(i), c.stage)) {
      Info(what + " is not about a worker this LC dispatched and awaits (phase " +
           PhaseName(s.phase) + ", version " + V() + "); ignored");
      continue;
    }
    Warn(what + ": " + PhaseName(phase) + " of version " + V() + " failed");
    WorkerFailed();
  }
  s.conditions_seen = std::max(s.conditions_seen, n);
}

}  // namespace sedna::core::ll::internal
