#include "core/il_job.h"

#include <algorithm>
#include <cctype>

#include "core/ascii.h"
#include "core/il_stepper.h"
#include "core/model_select.h"
#include "core/overloaded.h"

namespace sedna::core::il {
namespace internal {

int64_t LatestIndex(const IlJob& job, Stage stage, ConditionType type, int64_t before) {
  before = std::min<int64_t>(before, static_cast<int64_t>(job.conditions.size()));
  for (int64_t i = before - 1; i >= 0; --i) {
    const JobCondition& c = job.conditions[static_cast<size_t>(i)];
    if (c.stage == stage && c.type == type) return i;
  }
  return -1;
}

const std::vector<ModelRef>* TrainOutputBefore(const IlJob& job, int64_t before) {
  before = std::min<int64_t>(before, static_cast<int64_t>(job.conditions.size()));
  for (int64_t i = before - 1; i >= 0; --i) {
    const JobCondition& c = job.conditions[static_cast<size_t>(i)];
    if (c.stage == Stage::kTrain && c.type == ConditionType::kCompleted && c.data.has_output &&
        !c.data.output_models.empty()) {
      return &c.data.output_models;
    }
  }
  return nullptr;
}

// Base model for the next training round: the latest completed train's output model matching
// the initialModel CR (§H4.3; the 2021 rule models[1], or models[0] for one-model reports, when
// none matches or the CR is unknown, and always under a 2021 GM: Spec::g1_rules), else the
// recorded train report, else the initial model ([P:B5]: a failed first round falls back to the
// initial model instead of stalling).
std::optional<ModelRef> Stepper::BaseModel() const {
  if (const auto* out = TrainOutputBefore(*spec.job, LastIndex() + 1)) {
    if (spec.initial_model && !spec.g1_rules) {
      ModelChoice c = SelectModel(*out, *spec.initial_model, 1);
      if (c.model) return WithoutMetrics(*c.model);
    }
    return WithoutMetrics(out->size() >= 2 ? (*out)[1] : (*out)[0]);
  }
  if (s.trained_base) return WithoutMetrics(*s.trained_base);
  if (spec.initial_model) return WithoutMetrics(*spec.initial_model);
  return std::nullopt;
}

// The latest completed train's output model matching `reference` (§H4.3), models[0] when none
// matches (logged, naming the formats: upstream dereferences nil there, [P:U387]), else this LC's
// record of the train report ([P:B6]). Metrics are kept: v0.7.0 sends them in Eval/Deploy Ready.
std::optional<ModelRef> Stepper::TrainedModel(const ModelRef& reference, const char* stage) {
  if (const auto* out = TrainOutputBefore(*spec.job, LastIndex() + 1)) {
    ModelChoice c = SelectModel(*out, reference, 0);
    if (!c.matched && c.model) Warn(std::string(stage) + ": " + c.note);
    return c.model;
  }
  if (s.trained) return *s.trained;
  return std::nullopt;
}

// The model a new model is evaluated against: the initialEvalModel CR if the job names one, else
// the deploy Model CR (§H4.2). Unset while the named CR is not known.
std::optional<ModelRef> Stepper::EvalModel() const {
  const ModelRef* m =
      spec.job->spec.initial_eval_model_name.empty() ? spec.deploy_model : spec.initial_eval_model;
  if (m == nullptr) return std::nullopt;
  return *m;
}

void Stepper::IssueWork() {
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
                                     std::move(index),
                                     s.work_layout});
      return;
    }
    case Work::kWriteEval: {
      std::string url = EvalDataUrl(Out(), EvalDirRound(s.work_round, s.work_layout), spec.csv);
      std::string index = DataIndexUrl(url, spec.dataset_s3, spec.csv);
      std::vector<SpoolRange> ranges;
      for (const auto& w : s.eval_windows) {
        if (w.count > 0) ranges.push_back(w);
      }
      actions.push_back(WriteSamples{Stage::kEval, s.work_round, std::move(url), SpoolKind::kEval,
                                     std::move(ranges), spec.csv, std::move(index), s.work_layout});
      return;
    }
    case Work::kDeploy: {
      const size_t i = static_cast<size_t>(s.work_copies_done) * 2;
      if (i + 1 < s.work_models.size()) {
        actions.push_back(CopyModel{s.work_models[i].url, s.work_models[i + 1].url});
      }
      return;
    }
    case Work::kHotUpdate:
      // Not re-issued: after a restart the (Deploy, Running) is acted on again only once a fresh
      // GM message confirms it is still the latest condition (§H3.3).
      s.work = Work::kNone;
      s.work_condition = -1;
      return;
  }
}

// Answers the latest condition if this LC has not answered it yet.
void Stepper::Advance() {
  if (s.work != Work::kNone || spec.job->conditions.empty()) return;
  const int64_t idx = LastIndex();
  const JobCondition& last = spec.job->conditions.back();
  // The GM has moved on to a new round: a decision still pending for an older one is void (a
  // late one would land in the middle of the next round).
  // By the rounds' identity when the conditions carry it (a stale object's indexes may differ).
  const int64_t closed = last.stage == Stage::kTrain ? NoteClosedRounds(idx) : 0;
  const bool moved_on = s.pending_round_key > 0 && closed > 0 ? closed >= s.pending_round_key
                                                              : idx > s.pending_round_id;
  if (last.stage == Stage::kTrain && s.pending_round_id >= 0 && moved_on) {
    Warn("round " + std::to_string(s.eval_round - 1) + ": the GM moved on to " +
         std::string(StageName(last.stage)) + "/" + ConditionTypeName(last.type) +
         " before the deploy decision; none is sent");
    ClearPending();
  }
  if (last.stage == Stage::kDeploy) {
    if (last.type == ConditionType::kWaiting) OnDeployWaiting(idx);
    if (last.type == ConditionType::kRunning) MaybeHotUpdate(idx);
    return;
  }
  if (last.type != ConditionType::kWaiting) return;
  if (now.unix_ms < s.retry_after_ms) return;
  if (last.stage == Stage::kTrain && idx != s.answered_train_waiting) {
    MaybeStartTrain(idx);
  } else if (last.stage == Stage::kEval && idx != s.answered_eval_waiting) {
    StartEval(idx);
  }
}

void Stepper::MaybeStartTrain(int64_t idx) {
  if (!spec.dataset_known) {
    Blocked("waiting for Dataset " + spec.job->meta.ns + "/" + spec.job->spec.dataset_name);
    return;
  }
  Metrics stats{
      {"num_of_samples", MetricValue::Number(static_cast<double>(s.train_pending.count))}};
  if (!TriggerFires(*spec.train_trigger, stats, now.minute_of_day)) return;
  TriggerDecision d = EvaluateTrigger(*spec.train_trigger, stats, now.minute_of_day);
  std::optional<ModelRef> base = BaseModel();
  if (!base) {
    Blocked("train trigger fired but Model " + spec.job->meta.ns + "/" +
            spec.job->spec.initial_model_name + " (spec.initialModel.name) is not known yet");
    return;
  }
  s.last_error.clear();
  Info("train trigger fired for round " + std::to_string(s.round) + ": " + d.reason);
  facts.push_back(TrainTriggerFired{s.round, s.train_pending.count, d.reason});
  s.work = Work::kWriteTrain;
  s.work_condition = idx;
  s.work_round = s.round;
  s.work_layout = spec.layout;
  s.work_range = s.train_pending;
  s.work_models = {*base};
  IssueWork();
}

void Stepper::StartEval(int64_t idx) {
  std::optional<ModelRef> eval_model = EvalModel();
  if (!eval_model) {
    const bool initial = !spec.job->spec.initial_eval_model_name.empty();
    Blocked("eval requested but Model " + spec.job->meta.ns + "/" +
            (initial ? spec.job->spec.initial_eval_model_name + " (spec.evalSpec.initialEvalModel)"
                     : spec.job->spec.deploy_model_name + " (spec.deploySpec.model.name)") +
            " is not known yet");
    return;
  }
  std::optional<ModelRef> trained = TrainedModel(*eval_model, "eval");
  if (!trained) {
    // [P:B6]: never send a null report and stall; fail the stage so the GM starts a new round.
    Error(
        "eval requested but no trained model is known (no Train/Completed output); "
        "reporting Eval Failed");
    s.answered_eval_waiting = idx;
    Report(StatusReport{ReportPhase::kEval, ReportStatus::kFailed}, s.round - 1);
    return;
  }
  s.last_error.clear();
  s.work = Work::kWriteEval;
  s.work_condition = idx;
  s.work_round = s.round;
  s.work_layout = spec.layout;
  s.work_models = {WithoutMetrics(*trained), WithoutMetrics(*eval_model)};
  IssueWork();
}

void Stepper::OnFileWritten(const FileWritten& e) {
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
    StatusReport r{ReportPhase::kTrain,
                   ReportStatus::kReady,
                   true,
                   s.work_models,
                   data,
                   DataIndexUrl(data, spec.dataset_s3, spec.csv),
                   TrainOutputDir(out, s.round)};
    Report(std::move(r), s.round);
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
    const std::string data =
        EvalDataUrl(Out(), EvalDirRound(s.work_round, s.work_layout), spec.csv);
    StatusReport r{ReportPhase::kEval,
                   ReportStatus::kReady,
                   true,
                   s.work_models,
                   data,
                   DataIndexUrl(data, spec.dataset_s3, spec.csv)};
    Report(std::move(r), s.work_round - 1);  // the train round (eval files use round + 1)
    s.answered_eval_waiting = s.work_condition;
    ClearPending();
    s.eval_outstanding = true;
    s.eval_round = s.work_round;
    s.eval_models = s.work_models;
    s.pending_round_id = s.work_condition;
    s.pending_round_key = s.work_round - 1;  // the train round (eval files use round + 1)
    s.pending_models = s.work_models;
  }
  s.work = Work::kNone;
  s.work_models.clear();
  s.work_range = {};
  s.work_condition = -1;
}

void Stepper::OnWorkerReport(const WorkerReport& r) {
  const std::string kind = core::AsciiLowered(r.kind);
  const std::string status = core::AsciiLowered(r.status);
  const std::string who = core::internal::ReportWho(r.worker_name, kind, status);
  if (kind != "train" && kind != "eval") {
    // A hot-update inference worker's "deploy" report (§H4.1) is the GM's business.
    if (kind != "deploy")
      Warn(who + ": kind \"" + r.kind + "\" is not train or eval; forwarded only");
    return;
  }
  const ReportPhase stage = kind == "train" ? ReportPhase::kTrain : ReportPhase::kEval;
  // The round the report is about: the train of the last Train Ready, the outstanding eval.
  const int64_t round = stage == ReportPhase::kTrain ? std::max<int64_t>(s.round - 1, 0)
                        : s.eval_outstanding         ? s.eval_round - 1
                                                     : 0;
  if (status != "completed") {
    if (status == "failed") {
      Warn(who + " reported failure");
      facts.push_back(StageReported{round, stage, false, "", {}});
    }
    if (kind == "eval" && status == "failed" && s.eval_outstanding) {
      s.eval_outstanding = false;  // the GM goes (Eval, Failed) -> (Train, Waiting): no decision
      ClearPending();
    }
    return;
  }
  if (!ResultsUsable(r, who, false)) return;
  facts.push_back(StageReported{round, stage, true, r.results[0].url, ObservedMetrics(r)});
  if (kind == "train") {
    s.trained = r.results[0];
    s.trained_base = r.results.size() >= 2 ? r.results[1] : r.results[0];
    Info("train round finished: model " + r.results[0].url);
    return;
  }
  OnEvalReport(r, who);
}

}  // namespace internal

using internal::Stepper;

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

const char* LayoutName(Layout l) { return l == Layout::kV07 ? "v0.7" : "2021"; }

int64_t EvalDirRound(int64_t round, Layout layout) {
  return layout == Layout::kV07 ? round - 1 : round;
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
  const std::string k = core::AsciiLowered(kind);
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
  Stepper st{{spec, now, state, {}, {}}};
  // Exhaustive (core/overloaded.h): an Event alternative without a handler here does not compile.
  std::visit(Overloaded{
                 // The step after the dispatch (the deploy wait, Advance) reads the new object.
                 [](const JobChanged&) {},
                 // The same: what is due now (a back-off, the deploy wait) is checked below.
                 [](const Tick&) {},
                 [&](const Resume&) {
                   // The forwarded eval report of a pending round is re-sent from the outbox now:
                   // the deploy wait starts at that write (§H3.3).
                   if (st.s.eval_reported && st.s.eval_written_ms == 0) {
                     st.s.eval_written_ms = now.unix_ms;
                   }
                   st.IssueWork();
                 },
                 [&](const SamplesIngested& e) { st.OnIngested(e); },
                 [&](const FileWritten& e) { st.OnFileWritten(e); },
                 [&](const WorkerReported& e) { st.OnWorkerReport(e.report); },
                 [&](const ModelCopied& e) { st.OnCopied(e); },
                 [&](const EvalReportRefused& e) { st.OnEvalRefused(e); },
                 [&](const HotUpdateWritten& e) { st.OnHotUpdateWritten(e); },
                 [&](const EvalForwardWritten& e) { st.OnEvalForwardWritten(e); },
             },
             event);
  st.CheckDeployWait();
  st.Advance();
  return Output{std::move(st.s), std::move(st.actions), std::move(st.facts)};
}

}  // namespace sedna::core::il
