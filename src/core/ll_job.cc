// The LL job (ll_job.h): the events a Step handles, the report scope, the layout helpers and Step
// itself (the working state and its handlers: ll_stepper.h).
#include "core/ll_job.h"

#include <algorithm>
#include <cctype>

#include "core/ascii.h"
#include "core/ll_stepper.h"
#include "core/overloaded.h"

namespace sedna::core::ll {
namespace internal {

std::vector<ModelRef> WithoutMetrics(const std::vector<ModelRef>& v) {
  std::vector<ModelRef> out;
  out.reserve(v.size());
  for (const auto& m : v) out.push_back(WithoutMetrics(m));
  return out;
}

// ---- events

void Stepper::OnFileWritten(const FileWritten& e) {
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

void Stepper::OnWorkerReport(const WorkerReport& r) {
  const std::string kind = core::AsciiLowered(r.kind);
  const std::string status = core::AsciiLowered(r.status);
  const std::string who = core::internal::ReportWho(r.worker_name, r.kind, r.status);
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
  if (!ResultsUsable(r, who, true)) return;
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

void Stepper::OnCopied(const ModelCopied& e) {
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

}  // namespace internal

using internal::Stepper;

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
  const std::string k = core::AsciiLowered(kind);
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
  Stepper st{{spec, now, state, {}, {}}};
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
