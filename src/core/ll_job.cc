#include "core/ll_job.h"

#include <algorithm>
#include <cctype>

#include "core/overloaded.h"

namespace sedna::core::ll {
namespace {

constexpr int64_t kWriteRetryMs = 10'000;
constexpr int64_t kFailureRetryCapMs = 60'000;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

ModelRef WithoutMetrics(const ModelRef& m) { return ModelRef{m.format, m.url, {}, {}}; }

std::vector<ModelRef> WithoutMetrics(const std::vector<ModelRef>& v) {
  std::vector<ModelRef> out;
  out.reserve(v.size());
  for (const auto& m : v) out.push_back(WithoutMetrics(m));
  return out;
}

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

struct Stepper {
  const Spec& spec;
  const Now& now;
  State s;
  std::vector<Action> actions;
  std::vector<Fact> facts;

  void Info(std::string t) { actions.push_back(Log{Log::Level::kInfo, std::move(t)}); }
  void Warn(std::string t) { actions.push_back(Log{Log::Level::kWarn, std::move(t)}); }
  void Error(std::string t) { actions.push_back(Log{Log::Level::kError, std::move(t)}); }
  // Records a blocking problem once: logged when it first appears or changes, not on every check.
  void Blocked(const std::string& t) {
    if (s.last_error != t) Warn(t);
    s.last_error = t;
  }
  // Sends the answer to the Waiting at `idx` (about version `s.version`) and remembers it for
  // the lost-answer rule.
  void Answer(int64_t idx, StatusReport r) {
    s.answer_condition = idx;
    s.answer_at_ms = now.unix_ms;
    s.answer = r;
    facts.push_back(ReportSent{s.version, r.phase, r.status, r.data_url, r.output_dir});
    actions.push_back(SendReport{std::move(r)});
  }

  const std::vector<JobCondition>& Conds() const { return spec.job->conditions; }
  std::string Out() const { return OutputRoot(spec.job->spec.output_dir); }
  std::string V() const { return std::to_string(s.version); }
  std::string Waiting(int64_t idx, Stage stage) const {
    return "condition #" + std::to_string(idx) + " (" + StageName(stage) + ", Waiting)";
  }

  std::vector<SpoolRange> EvalRanges() const {
    std::vector<SpoolRange> r;
    for (const auto& w : s.eval_windows) {
      if (w.count > 0) r.push_back(w);
    }
    return r;
  }

  void TrimEvalWindows() {
    while (static_cast<int>(s.eval_windows.size()) > kEvalWindows) {
      s.eval_windows.erase(s.eval_windows.begin());
    }
  }

  // ---- the round in the conditions

  // The version of the round condition `idx` is in: that of the latest (Train|Eval, Ready) before
  // it, from its outputDir <out>/train/<v> or <out>/eval/<v>. 0: no Ready before it (the first
  // round); -1: unknown (a Ready without this job's layout).
  int64_t VersionBefore(int64_t idx) const {
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
  bool AnsweredRound(int64_t idx, Stage stage) {
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
  const JobCondition* RoundReady(int64_t idx, Stage stage) const {
    for (int64_t j = idx; j-- > 0;) {
      const JobCondition& c = Conds()[static_cast<size_t>(j)];
      if (c.stage != stage) continue;
      if (c.type == ConditionType::kReady) return &c;
      if (c.type == ConditionType::kWaiting) return nullptr;
    }
    return nullptr;
  }

  // Output models of the round's latest (stage, Completed) that carries any (same scan).
  const std::vector<ModelRef>* RoundOutput(int64_t idx, Stage stage) const {
    for (int64_t j = idx; j-- > 0;) {
      const JobCondition& c = Conds()[static_cast<size_t>(j)];
      if (c.stage != stage) continue;
      if (c.type == ConditionType::kReady || c.type == ConditionType::kWaiting) return nullptr;
      if (c.type == ConditionType::kCompleted && c.data.has_output &&
          !c.data.output_models.empty()) {
        return &c.data.output_models;
      }
    }
    return nullptr;
  }

  std::string OurOutputDir(Stage stage) const {
    return stage == Stage::kTrain ? TrainOutputDir(Out(), s.version)
                                  : EvalOutputDir(Out(), s.version);
  }

  // The round's ready was this LC's for `version`: it is in the conditions with our outputDir,
  // or it is not there and ours is still open.
  bool RoundIsOurs(int64_t idx, Stage stage) const {
    if (s.version == 0) return false;
    if (const JobCondition* r = RoundReady(idx, stage)) {
      return r->data.output_dir == OurOutputDir(stage);
    }
    const Phase p = stage == Stage::kTrain ? Phase::kTrain : Phase::kEval;
    return s.phase == p && s.worker_awaited;
  }

  // ---- work

  void IssueWork() {
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
                                       EvalRanges(), spec.csv, std::move(index),
                                       spec.index_layout});
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

  void EndWork() {
    s.work = Work::kNone;
    s.work_condition = -1;
    s.work_models.clear();
  }

  // ---- failures

  // The open train failed: its samples return to the pending set and its eval window is reopened
  // (both are contiguous with what accumulated since).
  void TrainFailed() {
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
  void WorkerFailed() {
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
  void TrainSucceeded() {
    s.worker_awaited = false;
    s.train_range = {};
    s.consecutive_failures = 0;
    TrimEvalWindows();
  }

  // ---- answering the latest condition

  void Advance() {
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
  bool MaybeResend(int64_t idx, Stage stage) {
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

  bool DatasetReady() {
    if (spec.dataset_known) return true;
    Blocked("waiting for Dataset " + spec.job->meta.ns + "/" + spec.job->spec.dataset_name);
    return false;
  }

  void MaybeStartTrain(int64_t idx) {
    if (!DatasetReady()) return;
    Metrics stats{
        {"num_of_samples", MetricValue::Number(static_cast<double>(s.train_pending.count))}};
    TriggerDecision d = EvaluateTrigger(*spec.train_trigger, stats, now.minute_of_day);
    if (!d.fired) return;
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

  void StartEval(int64_t idx) {
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

  void StartDeploy(int64_t idx) {
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

  // ---- events

  void OnIngested(const SamplesIngested& e) {
    s.samples_seen = e.samples_seen;
    s.train_pending.end = e.train_end;
    s.train_pending.count += e.train_added;
    s.eval_open.end = e.eval_end;
    s.eval_open.count += e.eval_added;
  }

  void OnFileWritten(const FileWritten& e) {
    if ((e.work != Work::kWriteTrain && e.work != Work::kWriteEval) || e.work != s.work ||
        e.round != (s.work == Work::kWriteTrain ? s.version + 1 : s.version)) {
      return;  // stale completion (e.g. re-issued after a restart and already handled)
    }
    const bool train = e.work == Work::kWriteTrain;
    if (!e.ok) {
      Error(std::string("writing ") + (train ? "train" : "eval") + " samples of version " +
            std::to_string(e.round) + " failed: " + e.error + "; retrying in 10 s");
      s.last_error = e.error;
      if (train) s.train_range = {};  // [P:L5]: the version stays uncommitted, the samples pending
      EndWork();
      s.retry_after_ms = now.unix_ms + kWriteRetryMs;
      return;
    }
    const std::string out = Out();
    const int64_t idx = s.work_condition;
    s.worker_awaited = true;
    if (train) {
      s.version = e.round;
      const std::string data = TrainDataUrl(out, s.version, spec.csv);
      s.answered_train_waiting = idx;
      Answer(idx, StatusReport{ReportPhase::kTrain,
                               ReportStatus::kReady,
                               true,
                               {},
                               data,
                               il::DataIndexUrl(data, spec.dataset_s3, spec.csv),
                               TrainOutputDir(out, s.version)});
      s.train_pending.begin = s.train_range.end;
      s.train_pending.count -= s.train_range.count;
      s.eval_windows.push_back(s.eval_open);
      s.eval_open = SpoolRange{s.eval_open.end, s.eval_open.end, 0};
    } else {
      const std::string data = EvalDataUrl(out, s.version, spec.csv);
      s.answered_eval_waiting = idx;
      s.answered_eval_version = s.version;
      s.eval_inputs = s.work_models;
      Answer(idx, StatusReport{ReportPhase::kEval, ReportStatus::kReady, true, s.work_models, data,
                               il::DataIndexUrl(data, spec.dataset_s3, spec.csv),
                               EvalOutputDir(out, s.version)});
    }
    EndWork();
  }

  void OnWorkerReport(const WorkerReport& r) {
    const std::string kind = Lower(r.kind);
    const std::string status = Lower(r.status);
    const std::string who = "worker " + r.worker_name + " (" + r.kind + ", " + r.status + ")";
    if (kind != "train" && kind != "eval") {
      Warn(who + ": kind \"" + r.kind + "\" is not train or eval; forwarded only");
      return;
    }
    const Phase phase = kind == "train" ? Phase::kTrain : Phase::kEval;
    if (s.phase != phase || !s.worker_awaited) {
      Warn(who + ": no " + kind + " dispatched by this LC is open (phase " + PhaseName(s.phase) +
           ", version " + V() + "); forwarded only");
      return;
    }
    const ReportPhase stage = phase == Phase::kTrain ? ReportPhase::kTrain : ReportPhase::kEval;
    if (status == "failed") {
      Warn(who + ": " + kind + " of version " + V() + " failed; the GM starts the next round");
      facts.push_back(StageReported{s.version, stage, false, "", {}});
      WorkerFailed();
      return;
    }
    if (status != "completed") return;
    if (!r.results_error.empty()) {
      Error(who + ": rejected: " + r.results_error);
      return;
    }
    if (r.results.empty()) {
      Error(who + ": rejected: results: empty");
      return;
    }
    for (size_t i = 0; i < r.results.size(); ++i) {
      if (r.results[i].url.empty()) {
        Error(who + ": rejected: results[" + std::to_string(i) + "].url: empty");
        return;
      }
    }
    // Recorded only: the next step waits for the GM's Waiting.
    facts.push_back(StageReported{s.version, stage, true, r.results[0].url, ObservedMetrics(r)});
    if (phase == Phase::kTrain) {
      s.train_models = WithoutMetrics(r.results);
      s.train_models_version = s.version;
      Info("version " + V() + " trained: " + r.results[0].url);
    } else {
      s.eval_models = WithoutMetrics(r.results);
      s.eval_models_version = s.version;
      Info("version " + V() + " evaluated: " + r.results[0].url);
    }
  }

  void OnCopied(const ModelCopied& e) {
    if (s.work != Work::kDeploy || s.work_models.empty()) return;  // stale completion
    const std::string dst = DeployModelUrl(Out());
    const ModelRef model = s.work_models[0];
    const int64_t idx = s.work_condition;
    s.answered_deploy_waiting = idx;
    s.answered_deploy_version = s.version;
    if (e.ok) {
      Answer(idx, StatusReport{ReportPhase::kDeploy, ReportStatus::kReady, true, {model}});
      s.deployments.push_back(Deployment{s.version, model.url, now.rfc3339});
      while (static_cast<int>(s.deployments.size()) > kDeploymentsKept) {
        s.deployments.erase(s.deployments.begin());
      }
      Info("deployed version " + V() + ": " + model.url + " to " + dst);
    } else {
      Error("deploy copy " + model.url + " -> " + dst + " failed: " + e.error +
            "; reporting deploy failed");
      s.last_error = e.error;
      Answer(idx, StatusReport{ReportPhase::kDeploy, ReportStatus::kFailed});
    }
    s.deploy_count++;
    s.phase = Phase::kTrain;  // the round is answered; the next step is a train
    EndWork();
  }

  // Whether the latest (stage, Ready) before condition `idx` is the ready this LC sent for the
  // open worker (its outputDir names the current version).
  bool ReadyIsOurs(size_t idx, Stage stage) const {
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
  void ScanConditions() {
    const int64_t n = static_cast<int64_t>(Conds().size());
    for (int64_t i = s.conditions_seen; i < n; ++i) {
      const JobCondition& c = Conds()[static_cast<size_t>(i)];
      if (c.type != ConditionType::kFailed ||
          (c.stage != Stage::kTrain && c.stage != Stage::kEval)) {
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
};

}  // namespace

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kTrain:
      return "train";
    case Phase::kEval:
      return "eval";
    case Phase::kDeploy:
      return "deploy";
  }
  return "train";
}

ReportScope ScopeOfReport(const Spec& spec, const State& s, const std::string& kind) {
  ReportScope scope;
  const std::string k = Lower(kind);
  const std::string out = il::OutputRoot(spec.job->spec.output_dir);
  if (!s.worker_awaited) return scope;
  if (k == "train" && s.phase == Phase::kTrain) {
    scope.awaited = true;
    scope.dirs = {TrainOutputDir(out, s.version)};
    scope.what = "the output directory of version " + std::to_string(s.version);
  } else if (k == "eval" && s.phase == Phase::kEval) {
    scope.awaited = true;
    scope.dirs = {EvalOutputDir(out, s.version)};
    for (const auto& m : s.eval_inputs) scope.exact.push_back(m.url);
    scope.what = "the eval output directory of version " + std::to_string(s.version) +
                 " or a model sent in its eval ready";
  }
  return scope;
}

std::string EvalOutputDir(const std::string& out, int64_t version) {
  return out + "/eval/" + std::to_string(version);
}

std::string DeployModelUrl(const std::string& out) { return out + "/deploy/index.pkl"; }

Output Step(const Spec& spec, const State& state, const Event& event, const Now& now) {
  Stepper st{spec, now, state, {}};
  // Exhaustive (core/overloaded.h): an Event alternative without a handler here does not compile.
  std::visit(Overloaded{
                 // ScanConditions and Advance below read the new object.
                 [](const JobChanged&) {},
                 // The same: a back-off that ended is seen by Advance below.
                 [](const Tick&) {},
                 [&](const Resume&) { st.IssueWork(); },
                 [&](const SamplesIngested& e) { st.OnIngested(e); },
                 [&](const FileWritten& e) { st.OnFileWritten(e); },
                 [&](const WorkerReported& e) { st.OnWorkerReport(e.report); },
                 [&](const ModelCopied& e) { st.OnCopied(e); },
                 // IL only: LL has no deploy decision that a refused eval report must end.
                 [](const il::EvalReportRefused&) {},
                 // IL only: LL never asks for a WriteHotUpdate.
                 [](const il::HotUpdateWritten&) {},
                 // IL only: LL has no deploy wait that starts at the forward's write.
                 [](const il::EvalForwardWritten&) {},
             },
             event);
  st.ScanConditions();
  st.Advance();
  return Output{std::move(st.s), std::move(st.actions), std::move(st.facts)};
}

}  // namespace sedna::core::ll
