// The IL deploy decision (docs/protocol.md §H3.2) and its copies, for both GM generations: one
// decision per eval round, at the first of its (Deploy, Waiting) and the deploy wait after the
// forwarded eval report was written, with the same content either way. The hot update (§H4.1) is
// il_hot_update.cc.
#include <algorithm>

#include "core/il_job.h"
#include "core/il_stepper.h"
#include "core/model_select.h"

namespace sedna::core::il {
namespace internal {
namespace {

// The State::last_decision text of a decision: its kind, then its reason.
std::string DecisionPrefix(DecisionKind k) {
  switch (k) {
    case DecisionKind::kDeploy:
      return "deploying trained model: ";
    case DecisionKind::kKept:
      return "kept deployed model: ";
    case DecisionKind::kNotDeployed:
      return "not deployed: ";
  }
  return "";
}

// A report status as the IL log lines name it ("Completed").
std::string StatusWord(ReportStatus st) {
  std::string w = ReportStatusName(st);
  w[0] = static_cast<char>(w[0] - 'a' + 'A');
  return w;
}

// Eval results of the round: the latest (Eval, Completed) with an output after its (Eval,
// Waiting) (never an older round's, unlike v0.7.0), else nullptr.
const std::vector<ModelRef>* EvalOutputAfter(const IlJob& job, int64_t round_id, int64_t before) {
  if (round_id < 0) return nullptr;
  before = std::min<int64_t>(before, static_cast<int64_t>(job.conditions.size()));
  for (int64_t i = before - 1; i > round_id; --i) {
    const JobCondition& c = job.conditions[static_cast<size_t>(i)];
    if (c.stage == Stage::kEval && c.type == ConditionType::kCompleted && c.data.has_output &&
        !c.data.output_models.empty()) {
      return &c.data.output_models;
    }
  }
  return nullptr;
}

// Input models of the round's (Eval, Ready) in the conditions ([trained, eval model]).
std::vector<ModelRef> EvalReadyModels(const IlJob& job, int64_t round_id) {
  if (round_id < 0) return {};
  for (size_t i = static_cast<size_t>(round_id) + 1; i < job.conditions.size(); ++i) {
    const JobCondition& c = job.conditions[i];
    if (c.stage == Stage::kEval && c.type == ConditionType::kReady) return c.data.input_models;
  }
  return {};
}

// The number right after `prefix` in `s`, ended by '/' or the end of `s`; 0 for none.
int64_t NumberAfter(const std::string& s, const std::string& prefix) {
  if (prefix.size() <= 1 || s.size() <= prefix.size() || s.compare(0, prefix.size(), prefix) != 0) {
    return 0;
  }
  int64_t n = 0;
  size_t i = prefix.size();
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (n > (int64_t{1} << 50)) return 0;
    n = n * 10 + (s[i] - '0');
  }
  if (i == prefix.size() || (i < s.size() && s[i] != '/')) return 0;
  return n;
}

}  // namespace

int64_t RoundBefore(const IlJob& job, const std::string& out, int64_t before,
                    bool* from_train_ready) {
  before = std::min<int64_t>(before, static_cast<int64_t>(job.conditions.size()));
  bool eval_ready_seen = false;
  for (int64_t i = before - 1; i >= 0; --i) {
    const JobCondition& c = job.conditions[static_cast<size_t>(i)];
    if (c.type != ConditionType::kReady) continue;
    if (c.stage == Stage::kEval) {
      // The round's trained model lies in its train output <out>/train/<N> (a train report may
      // name nothing else). Not the eval dataURL: its number is N + 1 in the 2021 layout and N in
      // the v0.7 one, and which one a round used is not in the conditions. Without a model there,
      // the (Train, Ready) before it names the round.
      const int64_t n = c.data.input_models.empty()
                            ? 0
                            : NumberAfter(c.data.input_models[0].url, out + "/train/");
      if (n > 0) {
        if (from_train_ready) *from_train_ready = false;
        return n;
      }
      eval_ready_seen = true;
    } else if (c.stage == Stage::kTrain) {
      const int64_t n = NumberAfter(c.data.output_dir, out + "/train/");
      if (n > 0) {
        if (from_train_ready) *from_train_ready = !eval_ready_seen;
        return n;
      }
    }
  }
  return 0;
}

int64_t Stepper::DeployWaitMs() const { return std::max<int64_t>(spec.deploy_wait_ms, 0); }

void Stepper::ClearPending() {
  s.eval_outstanding = false;
  s.pending_round_id = -1;
  s.pending_round_key = 0;
  s.eval_reported = false;
  s.eval_report.clear();
  s.pending_models.clear();
  s.eval_written_ms = 0;
  s.eval_refused_deadline_ms = 0;
}

void Stepper::OnEvalReport(const WorkerReport& r, const std::string& who) {
  if (s.eval_outstanding) {
    s.eval_outstanding = false;
    s.eval_refused_deadline_ms = 0;
    s.eval_reported = true;
    s.eval_report = r.results;
    Info("eval of round " + std::to_string(s.eval_round - 1) +
         " reported; the deploy decision follows the GM's (Deploy, Waiting)" +
         (DeployWaitMs() > 0
              ? " or comes " + std::to_string(DeployWaitMs()) + " ms after the report is sent"
              : ""));
    return;
  }
  // Dispatched by another node's LC (the eval pod runs here, §H1.4): this LC may decide (§H3.2).
  const int64_t round_id =
      LatestIndex(*spec.job, Stage::kEval, ConditionType::kWaiting, LastIndex() + 1);
  if (round_id < 0) {
    Warn(who + ": no eval round is in the job's conditions; forwarded only");
    return;
  }
  const int64_t key = RoundBefore(*spec.job, Out(), LastIndex() + 1);
  const bool decided =
      key > 0
          ? key <= s.closed_round || key == s.decided_round_key || FindDecided(key) != nullptr ||
                (s.eval_reported && key == s.pending_round_key)
          : round_id == s.decided_round_id || (s.eval_reported && round_id == s.pending_round_id);
  if (decided) {
    Warn(who + ": the eval of this round was already reported or decided; forwarded only");
    return;
  }
  ClearPending();
  s.pending_round_id = round_id;
  s.pending_round_key = key;
  s.pending_models = EvalReadyModels(*spec.job, round_id);
  s.eval_reported = true;
  s.eval_report = r.results;
  Info(who + ": an eval dispatched by another node's LC; this LC takes the deploy decision");
}

void Stepper::OnEvalRefused(const EvalReportRefused& e) {
  if (!s.eval_outstanding || s.eval_refused_deadline_ms != 0) return;
  s.eval_refused_deadline_ms = now.unix_ms + DeployWaitMs();
  Warn("eval report of worker " + e.worker + " refused (" + e.why + "); round " +
       std::to_string(s.eval_round - 1) + " is decided without it in " +
       std::to_string(DeployWaitMs()) + " ms unless a valid one comes");
}

void Stepper::OnEvalForwardWritten(const EvalForwardWritten& e) {
  if (s.eval_reported && s.eval_written_ms == 0) s.eval_written_ms = e.at_ms;
}

// Branch 2 of §H3.2, and the refused report's deadline.
void Stepper::CheckDeployWait() {
  if (s.work != Work::kNone) return;
  if (s.eval_outstanding && s.eval_refused_deadline_ms != 0 &&
      now.unix_ms >= s.eval_refused_deadline_ms) {
    DecideNotDeployed(s.pending_round_id, s.pending_round_key,
                      "no valid eval report for round " + std::to_string(s.eval_round - 1) +
                          " within --deploy-wait of a refused one",
                      "deploy-wait");
    return;
  }
  if (s.eval_reported && s.eval_written_ms > 0 && DeployWaitMs() > 0 &&
      now.unix_ms >= s.eval_written_ms + DeployWaitMs()) {
    Decide(s.pending_round_id, s.pending_round_key, "deploy-wait");
  }
}

DecidedRound* Stepper::FindDecided(int64_t key) {
  if (key <= 0) return nullptr;
  for (auto& d : s.decided_rounds) {
    if (d.round == key) return &d;
  }
  return nullptr;
}

// A Train condition is the latest: every round before the one it belongs to is closed (§H3.2, one
// decision per round): rounds up to N after an (Eval, Ready) of round N, up to M - 1 inside round
// M's train (after its (Train, Ready)).
// Returns the rounds this condition closes (0: unknown).
int64_t Stepper::NoteClosedRounds(int64_t idx) {
  bool from_train = false;
  int64_t closed = RoundBefore(*spec.job, Out(), idx, &from_train);
  if (from_train) closed--;
  if (closed > s.closed_round) s.closed_round = closed;
  return closed;
}

// Branch 1 of §H3.2, the lost-answer rule, and a (Deploy, Waiting) this LC has no record of. A
// round is decided once, whatever index its (Deploy, Waiting) shows in the object the GM sent (a
// stale cache's object, or conditions the GM's status write erased, §H2.0): a decided round gets
// its report again only by the lost-answer rule, a closed one nothing.
void Stepper::OnDeployWaiting(int64_t idx) {
  int64_t round_id = LatestIndex(*spec.job, Stage::kEval, ConditionType::kWaiting, idx);
  const int64_t key = RoundBefore(*spec.job, Out(), idx);
  if (key > 0 && key <= s.closed_round) {
    if (idx != s.answered_deploy_waiting) {
      Warn("(Deploy, Waiting) at condition " + std::to_string(idx) + " is of train round " +
           std::to_string(key) + ", which the GM has closed (a later round's Train was the " +
           "latest): a stale object; not answered");
    }
    s.answered_deploy_waiting = idx;
    return;
  }
  DecidedRound* d = FindDecided(key);
  const bool decided = key > 0 ? key == s.decided_round_key || d != nullptr
                               : round_id >= 0 && round_id == s.decided_round_id;
  if (decided) {
    // Already decided. Still the latest condition long after the answer: it was lost (the GM's
    // stale-cache write, §H2.0, or a restart) - send the same report again, without copying.
    const bool latest = key > 0 ? key == s.decided_round_key : true;
    const std::optional<StatusReport> report =
        latest ? s.decision_report : (d ? std::optional<StatusReport>(d->report) : std::nullopt);
    const int64_t at = latest ? s.decided_at_ms : (d ? d->at_ms : 0);
    if (report && s.work == Work::kNone &&
        spec.job_received_ms >= at + std::max(DeployWaitMs(), kLostAnswerMs)) {
      Warn("(Deploy, Waiting) at condition " + std::to_string(idx) + " is still the latest " +
           std::to_string((spec.job_received_ms - at) / 1000) +
           " s after this LC's answer; sending it again (Deploy " + StatusWord(report->status) +
           ")");
      Report(*report, latest ? s.decided_round : (d ? d->round : 0));
      if (latest) s.decided_at_ms = spec.job_received_ms;
      if (d) d->at_ms = spec.job_received_ms;
    } else if (idx != s.answered_deploy_waiting && key > 0) {
      Info("(Deploy, Waiting) at condition " + std::to_string(idx) + ": train round " +
           std::to_string(key) + " is already decided; not answered again");
    }
    s.answered_deploy_waiting = idx;
    return;
  }
  if (idx == s.answered_deploy_waiting || s.work != Work::kNone) return;
  s.answered_deploy_waiting = idx;
  // The pending round seen at another index: its identity is the key, its data the pending one.
  if (key > 0 && key == s.pending_round_key) round_id = s.pending_round_id;
  Decide(round_id, key, "(Deploy, Waiting)");
}

void Stepper::FinishDecision(StatusReport r, const std::string& by) {
  s.decision_report = r;
  s.decided_at_ms = now.unix_ms;
  s.decided_by = by;
  if (s.decided_round_key > 0) {
    if (DecidedRound* d = FindDecided(s.decided_round_key)) {
      *d = DecidedRound{s.decided_round_key, r, now.unix_ms};
    } else {
      s.decided_rounds.push_back(DecidedRound{s.decided_round_key, r, now.unix_ms});
      while (static_cast<int>(s.decided_rounds.size()) > kDecidedRoundsKept) {
        s.decided_rounds.erase(s.decided_rounds.begin());
      }
    }
  }
  Report(std::move(r), s.decided_round);
}

// The round `round_id` (train round `key`) is decided: no longer pending, counted, described
// (State::last_decision) and told (the DeployDecided fact, its round filled here).
void Stepper::RecordDecision(int64_t round_id, int64_t key, DeployDecided d) {
  ClearPending();
  s.decided_round_id = round_id;
  s.decided_round_key = key;
  s.decisions++;
  s.decided_round = s.eval_round > 0 ? s.eval_round - 1 : 0;
  s.last_decision = DecisionPrefix(d.kind) + d.reason;
  d.round = s.decided_round;
  facts.push_back(std::move(d));
}

void Stepper::DecideNotDeployed(int64_t round_id, int64_t key, const std::string& why,
                                const std::string& by) {
  RecordDecision(round_id, key, DeployDecided{0, DecisionKind::kNotDeployed, why, {}, {}, ""});
  Error(s.last_decision + " (decided on " + by + ")");
  FinishDecision(StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted}, by);
}

// The decision's content (§H3.2): eval results from this round's (Eval, Completed) output, else
// the eval report this LC received; the trained model by §H4.3 from the round's train output,
// else the recorded train report; cold: copy then Ready [trained, deploy] / Failed; hot: Ready
// without copying; not fired or not computable: Completed.
void Stepper::Decide(int64_t round_id, int64_t key, const std::string& by) {
  const IlJob& job = *spec.job;
  std::vector<ModelRef> results;
  if (const auto* out = EvalOutputAfter(job, round_id, LastIndex() + 1)) {
    results = *out;
  } else if (s.eval_reported && (round_id == s.pending_round_id || round_id < 0)) {
    results = s.eval_report;
  }
  std::vector<ModelRef> round_models =
      round_id == s.pending_round_id ? s.pending_models : EvalReadyModels(job, round_id);
  const std::string round =
      s.eval_round > 0 && round_id == s.pending_round_id ? std::to_string(s.eval_round - 1) : "";
  const std::string what = round.empty() ? "the round" : "round " + round;
  if (results.empty()) {
    DecideNotDeployed(round_id, key,
                      "no eval result for " + what + " (no (Eval, Completed) output and no " +
                          "valid eval report reached this LC)",
                      by);
    return;
  }
  if (results.size() < 2) {
    DecideNotDeployed(round_id, key,
                      "eval of " + what + " reported " + std::to_string(results.size()) +
                          " result(s), need [trained, deployed]",
                      by);
    return;
  }
  s.last_eval_results = results;
  DeployStats ds = BuildDeployStats(results[0].metrics, results[1].metrics);
  for (const auto& n : ds.notes) Warn("deploy trigger: " + n);
  TriggerDecision d = EvaluateTrigger(*spec.deploy_trigger, ds.stats, now.minute_of_day);
  // The deploy model: the CR (synced with (Deploy, Waiting) on a G2 GM), else the Eval Ready's
  // baseline when that was the deploy model (no initialEvalModel).
  std::optional<ModelRef> deploy;
  if (spec.deploy_model) deploy = *spec.deploy_model;
  if (!deploy && job.spec.initial_eval_model_name.empty() && round_models.size() >= 2) {
    deploy = round_models[1];
  }
  const MetricNumbers new_metrics = NumbersOf(results[0].metrics);
  const MetricNumbers deployed_metrics = NumbersOf(results[1].metrics);
  if (!d.fired) {
    RecordDecision(round_id, key,
                   DeployDecided{0, DecisionKind::kKept, d.reason, new_metrics, deployed_metrics});
    Info(what + " " + s.last_decision + " (decided on " + by + ")");
    FinishDecision(StatusReport{ReportPhase::kDeploy, ReportStatus::kCompleted}, by);
    return;
  }
  if (!deploy) {
    DecideNotDeployed(round_id, key,
                      "the deploy trigger fired but Model " + job.meta.ns + "/" +
                          job.spec.deploy_model_name + " (spec.deploySpec.model.name) is not known",
                      by);
    return;
  }
  // The trained model of the round, in the deploy model's format (§H4.3).
  std::optional<ModelRef> trained;
  const int64_t before = round_id >= 0 ? round_id : LastIndex() + 1;
  if (const auto* out = TrainOutputBefore(job, before)) {
    ModelChoice c = SelectModel(*out, *deploy, 0);
    if (!c.matched && c.model) Warn("deploy: " + c.note);
    trained = c.model;
  } else if (!round_models.empty()) {
    trained = round_models[0];
  } else if (s.trained) {
    trained = s.trained;
  }
  if (!trained) {
    DecideNotDeployed(round_id, key,
                      "the deploy trigger fired but no trained model of " + what + " is known", by);
    return;
  }
  std::vector<ModelRef> work = {WithoutMetrics(*trained), WithoutMetrics(*deploy)};
  std::optional<ModelRef> eval_model = EvalModel();
  if (!job.spec.initial_eval_model_name.empty() && eval_model) {
    // §H4.2: the next round's baseline is the new model in the eval format.
    if (const auto* out = TrainOutputBefore(job, before)) {
      ModelChoice c = SelectModel(*out, *eval_model, 0);
      if (!c.matched && c.model) Warn("deploy (eval model copy): " + c.note);
      if (c.model) {
        work.push_back(WithoutMetrics(*c.model));
        work.push_back(WithoutMetrics(*eval_model));
      }
    }
  }
  RecordDecision(round_id, key,
                 DeployDecided{0, DecisionKind::kDeploy, d.reason, new_metrics, deployed_metrics,
                               job.spec.hot_update_enabled ? "" : work[1].url});
  Info(what + " " + s.last_decision + " (decided on " + by + ")");
  if (job.spec.hot_update_enabled) {
    // Hot update: Ready without copying; the files are written on (Deploy, Running) (§H4.1).
    FinishDecision(
        StatusReport{ReportPhase::kDeploy, ReportStatus::kReady, true, {work[0], work[1]}}, by);
    return;
  }
  s.decided_by = by;
  s.work = Work::kDeploy;
  s.work_round = s.decided_round;
  s.work_models = std::move(work);
  s.work_copies_done = 0;
  IssueWork();
}

void Stepper::RecordDeployment(int64_t round, const std::string& url) {
  s.deployments.push_back(Deployment{round, url, now.rfc3339});
  while (static_cast<int>(s.deployments.size()) > kDeploymentsKept) {
    s.deployments.erase(s.deployments.begin());
  }
}

void Stepper::OnCopied(const ModelCopied& e) {
  if (s.work != Work::kDeploy || s.work_models.size() < 2) return;
  const std::vector<ModelRef> pair = {s.work_models[0], s.work_models[1]};
  const size_t i = static_cast<size_t>(s.work_copies_done) * 2;
  if (e.ok && i + 3 < s.work_models.size()) {
    Info("deployed " + s.work_models[i].url + " to " + s.work_models[i + 1].url);
    s.work_copies_done++;
    IssueWork();
    return;
  }
  if (e.ok) {
    if (i > 0)
      Info("copied " + s.work_models[i].url + " to " + s.work_models[i + 1].url);
    else
      Info("deployed " + pair[0].url + " to " + pair[1].url);
    RecordDeployment(s.work_round, pair[0].url);
    FinishDecision(StatusReport{ReportPhase::kDeploy, ReportStatus::kReady, true, pair},
                   s.decided_by);
  } else {
    Error("deploy copy " + s.work_models[i].url + " -> " + s.work_models[i + 1].url +
          " failed: " + e.error);
    s.last_error = e.error;
    FinishDecision(StatusReport{ReportPhase::kDeploy, ReportStatus::kFailed, true, pair},
                   s.decided_by);
  }
  s.work = Work::kNone;
  s.work_models.clear();
  s.work_copies_done = 0;
}

}  // namespace internal

int64_t NextWakeMs(const Spec& spec, const State& s) {
  int64_t at = s.retry_after_ms;
  auto earliest = [&](int64_t t) {
    if (t > 0 && (at == 0 || t < at)) at = t;
  };
  if (s.eval_outstanding) earliest(s.eval_refused_deadline_ms);
  if (s.eval_reported && s.eval_written_ms > 0 && spec.deploy_wait_ms > 0) {
    earliest(s.eval_written_ms + spec.deploy_wait_ms);
  }
  return at;
}

}  // namespace sedna::core::il
