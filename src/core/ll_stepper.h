// Internal to the LL job (ll_job.cc: the events and Step; ll_rounds.cc: the round in the
// conditions; ll_answer.cc: answering the latest Waiting): one Step's working state and its
// handlers. Not part of the core's interface.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/ll_job.h"
#include "core/stepper_base.h"

namespace sedna::core::ll::internal {

inline constexpr int64_t kWriteRetryMs = 10'000;
inline constexpr int64_t kFailureRetryCapMs = 60'000;

// The model without its metrics and devices: what an LL answer carries.
inline ModelRef WithoutMetrics(const ModelRef& m) { return ModelRef{m.format, m.url, {}, {}}; }
std::vector<ModelRef> WithoutMetrics(const std::vector<ModelRef>& v);
// The version n of "<prefix><n>" (n >= 1, decimal digits only), else 0.
int64_t VersionOf(const std::string& dir, const std::string& prefix);

struct Stepper : core::internal::StepperBase<Spec, State> {
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
  std::string OurOutputDir(Stage stage) const {
    return stage == Stage::kTrain ? TrainOutputDir(Out(), s.version)
                                  : EvalOutputDir(Out(), s.version);
  }

  // ll_rounds.cc: the round in the conditions.
  int64_t VersionBefore(int64_t idx) const;
  bool AnsweredRound(int64_t idx, Stage stage);
  const JobCondition* RoundReady(int64_t idx, Stage stage) const;
  const std::vector<ModelRef>* RoundOutput(int64_t idx, Stage stage) const;
  bool RoundIsOurs(int64_t idx, Stage stage) const;
  bool ReadyIsOurs(size_t idx, Stage stage) const;
  void ScanConditions();

  // ll_answer.cc: the work an answer needs, how a worker ends, answering the latest Waiting.
  void IssueWork();
  void EndWork();
  void TrainFailed();
  void WorkerFailed();
  void TrainSucceeded();
  void Advance();
  bool MaybeResend(int64_t idx, Stage stage);
  bool DatasetReady();
  void MaybeStartTrain(int64_t idx);
  void StartEval(int64_t idx);
  void StartDeploy(int64_t idx);

  // ll_job.cc: the events.
  void OnFileWritten(const FileWritten& e);
  void OnWorkerReport(const WorkerReport& r);
  void OnCopied(const ModelCopied& e);
};

}  // namespace sedna::core::ll::internal
