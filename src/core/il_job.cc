#include "core/il_job.h"

#include <algorithm>
#include <cctype>

namespace sedna::core::il {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

ModelRef WithoutMetrics(const ModelRef& m) { return ModelRef{m.format, m.url, {}}; }

// Output models of the latest (Train, Completed) condition that carries an output (§8.2).
const std::vector<ModelRef>* LatestTrainOutput(const IlJob& job) {
  for (auto it = job.conditions.rbegin(); it != job.conditions.rend(); ++it) {
    if (it->stage == Stage::kTrain && it->type == ConditionType::kCompleted &&
        it->data.has_output && !it->data.output_models.empty()) {
      return &it->data.output_models;
    }
  }
  return nullptr;
}

struct Stepper {
  const Spec& spec;
  const Now& now;
  State s;
  std::vector<Action> actions;

  void Info(std::string t) { actions.push_back(Log{Log::Level::kInfo, std::move(t)}); }
  void Warn(std::string t) { actions.push_back(Log{Log::Level::kWarn, std::move(t)}); }
  void Error(std::string t) { actions.push_back(Log{Log::Level::kError, std::move(t)}); }
  // Records a blocking problem once: logged when it first appears or changes, not on every check.
  void Blocked(const std::string& t) {
    if (s.last_error != t) Warn(t);
    s.last_error = t;
  }
  void Report(StatusReport r) { actions.push_back(SendReport{std::move(r)}); }

  std::string Out() const { return OutputRoot(spec.job->spec.output_dir); }

  // Base model for the next training round: the retrain checkpoint of the latest completed train
  // (models[1], or models[0] for one-model reports), else the initial model (B5: a failed first
  // round falls back to the initial model instead of stalling).
  std::optional<ModelRef> BaseModel() const {
    if (const auto* out = LatestTrainOutput(*spec.job)) {
      return WithoutMetrics(out->size() >= 2 ? (*out)[1] : (*out)[0]);
    }
    if (s.trained_base) return WithoutMetrics(*s.trained_base);
    if (spec.initial_model) return WithoutMetrics(*spec.initial_model);
    return std::nullopt;
  }

  // The model to evaluate: models[0] of the latest completed train (B6 fallback: our own record).
  std::optional<ModelRef> TrainedModel() const {
    if (const auto* out = LatestTrainOutput(*spec.job)) return WithoutMetrics((*out)[0]);
    if (s.trained) return WithoutMetrics(*s.trained);
    return std::nullopt;
  }

  std::vector<SpoolRange> EvalRanges() const {
    std::vector<SpoolRange> r;
    for (const auto& w : s.eval_windows) {
      if (w.count > 0) r.push_back(w);
    }
    return r;
  }

  void IssueWork() {
    switch (s.work) {
      case Work::kNone:
        return;
      case Work::kWriteTrain: {
        std::string url = TrainDataUrl(Out(), s.work_round, spec.csv);
        std::string index = DataIndexUrl(url, spec.dataset_s3, spec.csv);
        actions.push_back(WriteSamples{Stage::kTrain,
                                       s.work_round,
                                       std::move(url),
                                       SpoolKind::kTrain,
                                       {s.work_range},
                                       spec.csv,
                                       std::move(index)});
        return;
      }
      case Work::kWriteEval: {
        std::string url = EvalDataUrl(Out(), s.work_round, spec.csv);
        std::string index = DataIndexUrl(url, spec.dataset_s3, spec.csv);
        actions.push_back(WriteSamples{Stage::kEval, s.work_round, std::move(url), SpoolKind::kEval,
                                       EvalRanges(), spec.csv, std::move(index)});
        return;
      }
      case Work::kDeploy:
        actions.push_back(CopyModel{s.work_models[0].url, s.work_models[1].url});
        return;
      case Work::kHotUpdate:
        return;
    }
  }

  // Answers the latest condition if it is a Waiting this LC has not answered yet.
  void Advance() {
    if (s.work != Work::kNone || spec.job->conditions.empty()) return;
    const int64_t idx = static_cast<int64_t>(spec.job->conditions.size()) - 1;
    const JobCondition& last = spec.job->conditions.back();
    if (last.type != ConditionType::kWaiting) return;
    if (now.unix_ms < s.retry_after_ms) return;
    if (last.stage == Stage::kTrain && idx != s.answered_train_waiting) {
      MaybeStartTrain(idx);
    } else if (last.stage == Stage::kEval && idx != s.answered_eval_waiting) {
      StartEval(idx);
    } else if (last.stage == Stage::kDeploy && s.eval_outstanding &&
               idx != s.answered_deploy_waiting) {
      // The eval pod ended without a valid report (none, or one refused as invalid): decide now,
      // or the round never ends.
      s.answered_deploy_waiting = idx;
      DecideWithoutEval("before (Deploy, Waiting)");
    }
  }

  void MaybeStartTrain(int64_t idx) {
    if (!spec.dataset_known) {
      Blocked("waiting for Dataset " + spec.job->meta.ns + "/" + spec.job->spec.dataset_name);
      return;
    }
    Metrics stats{
        {"num_of_samples", MetricValue::Number(static_cast<double>(s.train_pending.count))}};
    TriggerDecision d = EvaluateTrigger(*spec.train_trigger, stats, now.minute_of_day);
    if (!d.fired) return;
    std::optional<ModelRef> base = BaseModel();
    if (!base) {
      Blocked("train trigger fired but Model " + spec.job->meta.ns + "/" +
              spec.job->spec.initial_model_name + " (spec.initialModel.name) is not known yet");
      return;
    }
    s.last_error.clear();
    Info("train trigger fired for round " + std::to_string(s.round) + ": " + d.reason);
    s.work = Work::kWriteTrain;
    s.work_condition = idx;
    s.work_round = s.round;
    s.work_range = s.train_pending;
    s.work_models = {*base};
    IssueWork();
  }

  void StartEval(int64_t idx) {
    std::optional<ModelRef> trained = TrainedModel();
    if (!trained) {
      // B6: never send a null report and stall; fail the stage so the GM starts a new round.
      Error(
          "eval requested but no trained model is known (no Train/Completed output); "
          "reporting Eval Failed");
      s.answered_eval_waiting = idx;
      Report(StatusReport{"Eval", "Failed"});
      return;
    }
    if (!spec.deploy_model) {
      Blocked("eval requested but Model " + spec.job->meta.ns + "/" +
              spec.job->spec.deploy_model_name + " (spec.deploySpec.model.name) is not known yet");
      return;
    }
    s.last_error.clear();
    s.work = Work::kWriteEval;
    s.work_condition = idx;
    s.work_round = s.round;
    s.work_models = {*trained, WithoutMetrics(*spec.deploy_model)};
    IssueWork();
  }

  void OnIngested(const SamplesIngested& e) {
    s.samples_seen = e.samples_seen;
    s.train_pending.end = e.train_end;
    s.train_pending.count += e.train_added;
    s.eval_open.end = e.eval_end;
    s.eval_open.count += e.eval_added;
  }

  void OnFileWritten(const FileWritten& e) {
    if (e.work != s.work || e.round != s.work_round ||
        (e.work != Work::kWriteTrain && e.work != Work::kWriteEval)) {
      return;  // stale completion (e.g. re-issued after a restart and already handled)
    }
    if (!e.ok) {
      Error(std::string("writing ") + (e.work == Work::kWriteTrain ? "train" : "eval") +
            " samples for round " + std::to_string(e.round) + " failed: " + e.error +
            "; retrying in 10 s");
      s.last_error = e.error;
      s.work = Work::kNone;
      s.retry_after_ms = now.unix_ms + 10000;
      return;
    }
    if (e.work == Work::kWriteTrain) {
      const std::string out = Out();
      const std::string data = TrainDataUrl(out, s.round, spec.csv);
      StatusReport r{"Train",
                     "Ready",
                     true,
                     s.work_models,
                     data,
                     DataIndexUrl(data, spec.dataset_s3, spec.csv),
                     TrainOutputDir(out, s.round)};
      Report(std::move(r));
      s.answered_train_waiting = s.work_condition;
      s.train_pending.begin = s.work_range.end;
      s.train_pending.count -= s.work_range.count;
      s.eval_windows.push_back(s.eval_open);
      while (static_cast<int>(s.eval_windows.size()) > kEvalWindows) {
        s.eval_windows.erase(s.eval_windows.begin());
      }
      s.eval_open = SpoolRange{s.eval_open.end, s.eval_open.end, 0};
      s.round++;
    } else {
      const std::string data = EvalDataUrl(Out(), s.work_round, spec.csv);
      StatusReport r{"Eval",        "Ready", true,
                     s.work_models, data,    DataIndexUrl(data, spec.dataset_s3, spec.csv)};
      Report(std::move(r));
      s.answered_eval_waiting = s.work_condition;
      s.eval_outstanding = true;
      s.eval_round = s.work_round;
      s.eval_models = s.work_models;
    }
    s.work = Work::kNone;
    s.work_models.clear();
    s.work_range = {};
    s.work_condition = -1;
  }

  void OnWorkerReport(const WorkerReport& r) {
    const std::string kind = Lower(r.kind);
    const std::string status = Lower(r.status);
    const std::string who = "worker " + r.worker_name + " (" + kind + ", " + status + ")";
    if (kind != "train" && kind != "eval") {
      Warn(who + ": kind \"" + r.kind + "\" is not train or eval; forwarded only");
      return;
    }
    if (status != "completed") {
      if (status == "failed") Warn(who + " reported failure");
      if (kind == "eval" && status == "failed") {
        s.eval_outstanding = false;
        ClearEvalDeadline();
      }
      return;
    }
    if (!r.results_error.empty()) {
      Error(who + ": rejected: " + r.results_error);
      return;
    }
    if (r.results.empty()) {
      Error(who + ": rejected: results: empty");
      return;
    }
    if (kind == "train") {
      s.trained = r.results[0];
      s.trained_base = r.results.size() >= 2 ? r.results[1] : r.results[0];
      Info("train round finished: model " + r.results[0].url);
      return;
    }
    if (!s.eval_outstanding) {
      Warn(who + ": no eval was dispatched by this LC (or it was already decided); forwarded only");
      return;
    }
    s.eval_outstanding = false;
    ClearEvalDeadline();
    s.last_eval_results = r.results;
    s.decisions++;
    s.decided_round = s.eval_round - 1;
    if (r.results.size() < 2) {
      s.last_decision = "not deployed: eval reported " + std::to_string(r.results.size()) +
                        " result(s), need [trained, deployed]";
      Error(who + ": " + s.last_decision);
      Report(StatusReport{"Deploy", "Completed"});
      return;
    }
    DeployStats ds = BuildDeployStats(r.results[0].metrics, r.results[1].metrics);
    for (const auto& n : ds.notes) Warn("deploy trigger: " + n);
    TriggerDecision d = EvaluateTrigger(*spec.deploy_trigger, ds.stats, now.minute_of_day);
    if (!d.fired) {
      s.last_decision = "kept deployed model: " + d.reason;
      Info("round " + std::to_string(s.eval_round - 1) + " " + s.last_decision);
      Report(StatusReport{"Deploy", "Completed"});
      return;
    }
    s.last_decision = "deploying trained model: " + d.reason;
    Info("round " + std::to_string(s.eval_round - 1) + " " + s.last_decision);
    s.work = Work::kDeploy;
    s.work_round = s.eval_round - 1;
    s.work_models = s.eval_models;
    IssueWork();
  }

  void OnEvalRefused(const EvalReportRefused& e) {
    if (!s.eval_outstanding || s.eval_refused_deadline_ms != 0) return;
    s.eval_refused_deadline_ms = now.unix_ms + spec.deploy_wait_ms;
    s.retry_after_ms = std::max(s.retry_after_ms, s.eval_refused_deadline_ms);
    Warn("eval report of worker " + e.worker + " refused (" + e.why + "); round " +
         std::to_string(s.eval_round - 1) + " is decided without it in " +
         std::to_string(spec.deploy_wait_ms) + " ms unless a valid one comes");
  }

  // Decides the outstanding eval "not deployed" when it has no valid report: at the refused
  // report's deadline, or when the GM already asks for the decision (a G2 GM's (Deploy, Waiting)).
  void ClearEvalDeadline() {
    if (s.eval_refused_deadline_ms != 0 && s.retry_after_ms == s.eval_refused_deadline_ms) {
      s.retry_after_ms = 0;
    }
    s.eval_refused_deadline_ms = 0;
  }

  void DecideWithoutEval(const std::string& why) {
    s.eval_outstanding = false;
    ClearEvalDeadline();
    s.decisions++;
    s.decided_round = s.eval_round - 1;
    s.last_decision = "not deployed: no valid eval report for round " +
                      std::to_string(s.eval_round - 1) + " " + why;
    Error(s.last_decision);
    Report(StatusReport{"Deploy", "Completed"});
  }

  void CheckEvalDeadline() {
    if (s.eval_outstanding && s.eval_refused_deadline_ms != 0 &&
        now.unix_ms >= s.eval_refused_deadline_ms) {
      DecideWithoutEval("within --deploy-wait of a refused one");
    }
  }

  void OnCopied(const ModelCopied& e) {
    if (s.work != Work::kDeploy) return;
    if (e.ok) {
      Report(StatusReport{"Deploy", "Ready", true, {s.work_models[0]}});
      s.deployments.push_back(Deployment{s.work_round, s.work_models[0].url, now.rfc3339});
      while (static_cast<int>(s.deployments.size()) > kDeploymentsKept) {
        s.deployments.erase(s.deployments.begin());
      }
      Info("deployed " + s.work_models[0].url + " to " + s.work_models[1].url);
    } else {
      Error("deploy copy " + s.work_models[0].url + " -> " + s.work_models[1].url +
            " failed: " + e.error);
      s.last_error = e.error;
      Report(StatusReport{"Deploy", "Failed"});
    }
    s.work = Work::kNone;
    s.work_models.clear();
  }
};

}  // namespace

const char* WorkName(Work w) {
  switch (w) {
    case Work::kNone:
      return "none";
    case Work::kWriteTrain:
      return "write-train";
    case Work::kWriteEval:
      return "write-eval";
    case Work::kDeploy:
      return "deploy";
    case Work::kHotUpdate:
      return "hot-update";
  }
  return "none";
}

std::string OutputRoot(const std::string& output_dir) {
  std::string out = output_dir;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string TrainDataUrl(const std::string& out, int64_t round, bool csv) {
  return out + "/data/train/" + std::to_string(round) + (csv ? "/data.csv" : "/data.txt");
}

std::string EvalDataUrl(const std::string& out, int64_t round, bool csv) {
  return out + "/data/eval/" + std::to_string(round) + (csv ? "/data.csv" : "/data.txt");
}

std::string DataIndexUrl(const std::string& data_url, bool dataset_s3, bool csv) {
  if (!dataset_s3 || csv) return "";
  return data_url.substr(0, data_url.rfind('/') + 1) + "dataIndex.txt";
}

std::string TrainOutputDir(const std::string& out, int64_t round) {
  return out + "/train/" + std::to_string(round);
}

ReportScope ScopeOfReport(const Spec& spec, const State& s, const std::string& kind) {
  ReportScope scope;
  const std::string k = Lower(kind);
  const std::string out = OutputRoot(spec.job->spec.output_dir);
  if (k == "train" && s.answered_train_waiting >= 0 && s.round > 1) {
    scope.awaited = true;
    scope.dirs = {TrainOutputDir(out, s.round - 1)};
    scope.what = "the output directory of train round " + std::to_string(s.round - 1);
  } else if (k == "eval" && s.eval_outstanding) {
    scope.awaited = true;
    for (const auto& m : s.eval_models) scope.exact.push_back(m.url);
    scope.what = "the models sent for the eval of round " + std::to_string(s.eval_round - 1);
  }
  return scope;
}

Output Step(const Spec& spec, const State& state, const Event& event, const Now& now) {
  Stepper st{spec, now, state, {}};
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, Resume>) {
          st.IssueWork();
        } else if constexpr (std::is_same_v<E, SamplesIngested>) {
          st.OnIngested(e);
        } else if constexpr (std::is_same_v<E, FileWritten>) {
          st.OnFileWritten(e);
        } else if constexpr (std::is_same_v<E, WorkerReported>) {
          st.OnWorkerReport(e.report);
        } else if constexpr (std::is_same_v<E, ModelCopied>) {
          st.OnCopied(e);
        } else if constexpr (std::is_same_v<E, EvalReportRefused>) {
          st.OnEvalRefused(e);
        }
      },
      event);
  st.CheckEvalDeadline();
  st.Advance();
  return Output{std::move(st.s), std::move(st.actions)};
}

}  // namespace sedna::core::il
