// Internal to the IL job (il_job.cc, il_deploy.cc, il_hot_update.cc): one Step's working state and
// its handlers. Not part of the core's interface.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/il_job.h"
#include "core/stepper_base.h"

namespace sedna::core::il::internal {

inline ModelRef WithoutMetrics(const ModelRef& m) {
  return ModelRef{m.format, m.url, {}, m.devices};
}

// Index of the latest condition before `before` with this stage and type, -1 for none.
int64_t LatestIndex(const IlJob& job, Stage stage, ConditionType type, int64_t before);
// Output models of the latest (Train, Completed) with an output before `before` ([P:B6]: may be
// none when the GM's own pod-driven condition erased the forwarded report, §H2.0).
const std::vector<ModelRef>* TrainOutputBefore(const IlJob& job, int64_t before);
// The train round of the latest round-bearing condition before `before` (State::
// pending_round_key): an (Eval, Ready) or a (Train, Ready) the LC wrote. *from_train_ready says
// which it was. 0: none.
int64_t RoundBefore(const IlJob& job, const std::string& out, int64_t before,
                    bool* from_train_ready = nullptr);

struct Stepper : core::internal::StepperBase<Spec, State> {
  // Sends `r`, a report about train round `round` (0: not known here).
  void Report(StatusReport r, int64_t round) {
    facts.push_back(ReportSent{round, r.phase, r.status, r.data_url, r.output_dir});
    actions.push_back(SendReport{std::move(r)});
  }
  std::string Out() const { return OutputRoot(spec.job->spec.output_dir); }
  int64_t LastIndex() const { return static_cast<int64_t>(spec.job->conditions.size()) - 1; }

  // il_job.cc: train and eval.
  std::optional<ModelRef> BaseModel() const;
  std::optional<ModelRef> TrainedModel(const ModelRef& reference, const char* stage);
  std::optional<ModelRef> EvalModel() const;
  void IssueWork();
  void Advance();
  void MaybeStartTrain(int64_t idx);
  void StartEval(int64_t idx);
  void OnFileWritten(const FileWritten& e);
  void OnWorkerReport(const WorkerReport& r);

  // il_deploy.cc: the deploy decision and its copies.
  void OnEvalReport(const WorkerReport& r, const std::string& who);
  void OnEvalRefused(const EvalReportRefused& e);
  void OnEvalForwardWritten(const EvalForwardWritten& e);
  void OnDeployWaiting(int64_t idx);
  void CheckDeployWait();
  int64_t DeployWaitMs() const;
  void Decide(int64_t round_id, int64_t key, const std::string& by);
  void RecordDecision(int64_t round_id, int64_t key, DeployDecided d);
  void DecideNotDeployed(int64_t round_id, int64_t key, const std::string& why,
                         const std::string& by);
  int64_t NoteClosedRounds(int64_t idx);
  DecidedRound* FindDecided(int64_t key);
  void FinishDecision(StatusReport r, const std::string& by);
  void ClearPending();
  void OnCopied(const ModelCopied& e);
  void RecordDeployment(int64_t round, const std::string& url);

  // il_hot_update.cc: the model hot update.
  void MaybeHotUpdate(int64_t idx);
  void OnHotUpdateWritten(const HotUpdateWritten& e);
};

}  // namespace sedna::core::il::internal
