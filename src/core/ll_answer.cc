// The LL job (ll_job.h), answering the latest Waiting: the work each answer needs (samples
// written, a model copied), how the worker this LC dispatched ends, and the answer itself.
#include <algorithm>

#include "core/ll_stepper.h"

namespace sedna::core::ll::internal {

// ---- work

void Stepper::IssueWork() {
  switch (s.work) {
    case Work::kNone:
      return;
    case Work::kWriteTrain: {
      std::string url = TrainDataUrl(Out(), s.version + 1, spec.csv);
      std::string index = il::DataIndexUrl(url, spec.dataset_s3, spec.csv);
      actions.push_back(WriteSamples{Stage::kTrain,
                                     s.version + 1,
                                     std::move(url),
                                     SpoolKind::kTrain,
                                     {s.train_range},
                                     spec.csv,
                                     std::move(index),
                                     spec.index_layout});
      return;
    }
    case Work::kWriteEval: {
      std::string url = EvalDataUrl(Out(), s.version, spec.csv);
      std::string index = il::DataIndexUrl(url, spec.dataset_s3, spec.csv);
      actions.push_back(WriteSamples{Stage::kEval, s.version, std::move(url), SpoolKind::kEval,
                                     EvalRanges(), spec.csv, std::move(index), spec.index_layout});
      return;
    }
    case Work::kDeploy:
      if (s.work_models.empty()) {  // unreachable by the invariants; never copy from nowhere
        Error("deploy of version " + V() + " has no eval model; dropped");
        s.work = Work::kNone;
        s.work_condition = -1;
        return;
      }
      actions.push_back(CopyModel{s.work_models[0].url, DeployModelUrl(Out())});
      return;
    case Work::kHotUpdate:  // IL only
      return;
  }
}

void Stepper::EndWork() {
  s.work = Work::kNone;
  s.work_condition = -1;
  s.work_models.clear();
}

// ---- failures

// The open train failed: its samples return to the pending set and its eval window is reopened
// (both are contiguous with what accumulated since).
void Stepper::TrainFailed() {
  s.train_pending = SpoolRange{s.train_range.begin, s.train_pending.end,
                               s.train_range.count + s.train_pending.count};
  s.train_range = {};
  if (!s.eval_windows.empty()) {
    const SpoolRange last = s.eval_windows.back();
    s.eval_windows.pop_back();
    s.eval_open = SpoolRange{last.begin, s.eval_open.end, last.count + s.eval_open.count};
  }
  s.worker_awaited = false;
}

// The open worker of `phase` failed (its report, a Failed condition, or a train whose output
// nobody knows). The first failure retries at once; consecutive ones wait 1 s, 2 s ... 60 s.
void Stepper::WorkerFailed() {
  s.consecutive_failures++;
  if (s.consecutive_failures >= 2) {
    const int shift = static_cast<int>(std::min<int64_t>(s.consecutive_failures - 2, 6));
    s.retry_after_ms = now.unix_ms + std::min<int64_t>(1000LL << shift, kFailureRetryCapMs);
  }
  if (s.phase == Phase::kTrain) TrainFailed();
  s.phase = Phase::kTrain;
  s.worker_awaited = false;
}

// The GM moved on to the next stage: the open train succeeded.
void Stepper::TrainSucceeded() {
  s.worker_awaited = false;
  s.train_range = {};
  s.consecutive_failures = 0;
  TrimEvalWindows();
}

// ---- answering the latest condition

void Stepper::Advance() {
  if (s.work != Work::kNone || Conds().empty()) return;
  const int64_t idx = static_cast<int64_t>(Conds().size()) - 1;
  const JobCondition& last = Conds().back();
  if (last.type != ConditionType::kWaiting) return;
  if (MaybeResend(idx, last.stage)) return;
  if (now.unix_ms < s.retry_after_ms) return;
  const int64_t answered = last.stage == Stage::kTrain  ? s.answered_train_waiting
                           : last.stage == Stage::kEval ? s.answered_eval_waiting
                                                        : s.answered_deploy_waiting;
  if (idx > answered && AnsweredRound(idx, last.stage)) return;
  switch (last.stage) {
    case Stage::kTrain:
      if (idx > s.answered_train_waiting) MaybeStartTrain(idx);
      return;
    case Stage::kEval:
      if (idx > s.answered_eval_waiting) StartEval(idx);
      return;
    case Stage::kDeploy:
      if (idx > s.answered_deploy_waiting) StartDeploy(idx);
      return;
  }
}

// The lost-answer rule (ll_job.h).
bool Stepper::MaybeResend(int64_t idx, Stage stage) {
  if (!s.answer || s.answer_condition != idx || spec.job_received_ms == 0 ||
      spec.job_received_ms < s.answer_at_ms + kLostAnswerMs) {
    return false;
  }
  Warn(Waiting(idx, stage) + " is still the latest condition " +
       std::to_string((spec.job_received_ms - s.answer_at_ms) / 1000) +
       " s after this LC answered it: the GM lost the answer; sending it again");
  StatusReport r = *s.answer;
  Answer(idx, std::move(r));
  return true;
}

bool Stepper::DatasetReady() {
  if (spec.dataset_known) return true;
  Blocked("waiting for Dataset " + spec.job->meta.ns + "/" + spec.job->spec.dataset_name);
  return false;
}

void Stepper::MaybeStartTrain(int64_t idx) {
  if (!DatasetReady()) return;
  Metrics stats{
      {"num_of_samples", MetricValue::Number(static_cast<double>(s.train_pending.count))}};
  if (!TriggerFires(*spec.train_trigger, stats, now.minute_of_day)) return;
  TriggerDecision d = EvaluateTrigger(*spec.train_trigger, stats, now.minute_of_day);
  if (s.worker_awaited) {
    // A new round began without the GM asking for the open stage's next step.
    Warn(Waiting(idx, Stage::kTrain) + " ends the " + PhaseName(s.phase) + " of version " + V() +
         " that this LC dispatched, without its outcome");
    if (s.phase == Phase::kTrain) TrainFailed();
    s.worker_awaited = false;
  }
  s.last_error.clear();
  Info(Waiting(idx, Stage::kTrain) + ": train trigger fired for version " +
       std::to_string(s.version + 1) + ": " + d.reason);
  facts.push_back(TrainTriggerFired{s.version + 1, s.train_pending.count, d.reason});
  s.phase = Phase::kTrain;
  s.work = Work::kWriteTrain;
  s.work_condition = idx;
  s.train_range = s.train_pending;
  IssueWork();
}

void Stepper::StartEval(int64_t idx) {
  if (!DatasetReady()) return;
  s.last_error.clear();
  const bool ours = RoundIsOurs(idx, Stage::kTrain);
  std::vector<ModelRef> models;
  std::string from;
  if (const auto* out = RoundOutput(idx, Stage::kTrain)) {
    models = WithoutMetrics(*out);
    from = "the round's (Train, Completed) output";
  } else if (ours && s.train_models_version == s.version && !s.train_models.empty()) {
    models = s.train_models;
    from = "the train report this LC received (the condition has no output)";
  }
  const bool train_open = s.phase == Phase::kTrain && s.worker_awaited;
  if (models.empty()) {
    // [P:B6]: never send a null report and stall; fail the stage so the GM starts a new round. An
    // open train of this LC counts as failed (its samples are trained again).
    Error(Waiting(idx, Stage::kEval) +
          ": no trained model is known for this round (no (Train, Completed) output and no "
          "train report received); reporting eval failed");
    if (train_open) WorkerFailed();
    s.phase = Phase::kTrain;  // the next step is the GM's (Train, Waiting)
    s.worker_awaited = false;
    s.answered_eval_waiting = idx;
    s.answered_eval_version = s.version;
    Answer(idx, StatusReport{ReportPhase::kEval, ReportStatus::kFailed});
    return;
  }
  if (train_open && ours) {
    TrainSucceeded();
  } else if (train_open) {
    Warn(Waiting(idx, Stage::kEval) + " is not for the train of version " + V() +
         " that this LC dispatched; that train is ended without its outcome");
    TrainFailed();
  }
  if (!ours) {
    // Another LC dispatched this round's train (or this LC's record is gone): number the eval
    // as that train's version, and evaluate the samples gathered since this LC's last train.
    if (const JobCondition* r = RoundReady(idx, Stage::kTrain)) {
      const int64_t n = VersionOf(r->data.output_dir, Out() + "/train/");
      if (n > s.version) s.version = n;
    }
    if (s.eval_open.count > 0) {
      s.eval_windows.push_back(s.eval_open);
      s.eval_open = SpoolRange{s.eval_open.end, s.eval_open.end, 0};
      TrimEvalWindows();
    }
  }
  s.phase = Phase::kEval;
  int64_t n = 0;
  for (const auto& w : s.eval_windows) n += w.count;
  if (n == 0) Warn("eval set of version " + V() + " is empty (no eval samples yet)");
  Info(Waiting(idx, Stage::kEval) + ": evaluating version " + V() + " with " +
       std::to_string(models.size()) + " model(s) from " + from);
  s.work = Work::kWriteEval;
  s.work_condition = idx;
  s.work_models = std::move(models);
  IssueWork();
}

void Stepper::StartDeploy(int64_t idx) {
  s.last_error.clear();
  const bool ours = RoundIsOurs(idx, Stage::kEval);
  if (s.phase == Phase::kEval && s.worker_awaited) s.worker_awaited = false;
  std::vector<ModelRef> models;
  DeployDecided fact{s.version, DecisionKind::kDeploy, "", {}, {}, DeployModelUrl(Out())};
  if (const auto* out = RoundOutput(idx, Stage::kEval)) {
    models = WithoutMetrics(*out);
    fact.reason = "the round's (Eval, Completed) output";
    fact.new_metrics = NumbersOf(out->front().metrics);
  } else if (ours && s.eval_models_version == s.version && !s.eval_models.empty()) {
    models = s.eval_models;
    fact.reason = "the eval report this LC received";
    Info(Waiting(idx, Stage::kDeploy) +
         ": the (Eval, Completed) condition has no output; using the eval report this LC "
         "received");
  }
  s.phase = Phase::kDeploy;
  if (models.empty()) {
    Info(Waiting(idx, Stage::kDeploy) +
         ": this round has no eval output; nothing to deploy (deploy completed)");
    facts.push_back(DeployDecided{
        s.version, DecisionKind::kNotDeployed, "this round has no eval output", {}, {}, ""});
    s.answered_deploy_waiting = idx;
    s.answered_deploy_version = s.version;
    Answer(idx, StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted});
    s.phase = Phase::kTrain;
    return;
  }
  facts.push_back(std::move(fact));
  s.work = Work::kDeploy;
  s.work_condition = idx;
  s.work_models = {models[0]};
  IssueWork();
}

}  // namespace sedna::core::ll::internal
