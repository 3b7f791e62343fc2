// The lifelong-learning job as seen by the LC on trainSpec.template.spec.nodeName
// (sedna-protocol.md §8.3, with the §8.5 LL items fixed). Pure: Step(spec, state, event, now) ->
// {state, actions}, with the IL event and action types so one controller path runs both kinds.
//
// The LC drives an LL job with its own phase machine, one version per cycle:
//   train:  the train trigger fires -> train samples written -> LL-1 -> train worker completes
//   eval:   eval windows written -> LL-3 -> eval worker completes
//   deploy: eval result copied to <out>/deploy/index.pkl -> LL-5 (or LL-6) -> train
// GM conditions are read only for failure recovery: a (Train|Eval, Failed) condition about the
// worker this LC awaits sends the job back to train, as the worker's own `failed` report does
// (L1, L2). Each condition index is examined once, so a GM re-send never acts twice.
//
// Versions: a version is committed when its train file is written (L5); files of a committed
// version are never rewritten for another cycle, so after any failure the next train uses the
// next number. Samples: train samples sent to a train that fails return to the pending set, and
// that round's eval window is reopened, so a failure loses no sample (each eval sample is in
// exactly one window, B2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/il_job.h"
#include "core/report.h"
#include "core/resources.h"
#include "core/trigger.h"

namespace sedna::core::ll {

// The IL event and action types (see il_job.h for their contracts).
using il::Action;
using il::CopyModel;
using il::Deployment;
using il::Event;
using il::FileWritten;
using il::JobChanged;
using il::Log;
using il::ModelCopied;
using il::Now;
using il::Resume;
using il::SamplesIngested;
using il::SendReport;
using il::SpoolKind;
using il::SpoolRange;
using il::Tick;
using il::Work;
using il::WorkerReported;
using il::WriteSamples;

// Layout helpers shared with IL (§7.4, §8.1).
using il::EvalDataUrl;
using il::OutputRoot;
using il::TrainDataUrl;
using il::TrainOutputDir;

using il::kDeploymentsKept;
using il::kEvalWindows;

enum class Phase { kTrain, kEval, kDeploy };
const char* PhaseName(Phase p);  // "train", "eval", "deploy" (the LL wire spelling)

// Invariants: phase kTrain: work is kNone or kWriteTrain; phase kEval: work is kNone or
// kWriteEval, train_model is set; phase kDeploy: work is kDeploy, eval_result is set.
// worker_awaited implies work == kNone.
struct State {
  Phase phase = Phase::kTrain;
  // The last committed version (0: none yet). Train files/outputs of version v are
  // data/train/<v>, train/<v>; its eval files/outputs data/eval/<v>, eval/<v>. A train in flight
  // writes version + 1.
  int64_t version = 0;
  // Sample accounting (design §4), as in IL.
  int64_t samples_seen = 0;
  SpoolRange train_pending;              // train samples waiting for the trigger
  SpoolRange eval_open;                  // eval samples since the last committed train
  std::vector<SpoolRange> eval_windows;  // closed windows, oldest first; at most kEvalWindows,
                                         // one more while the train worker of `version` runs
  // The train samples being written (kWriteTrain) or sent in LL-1 and awaiting the train worker;
  // empty otherwise.
  SpoolRange train_range;
  // In-flight file or copy work; re-issued on Resume.
  Work work = Work::kNone;
  // The ready report of `phase` (train: LL-1, eval: LL-3) was sent and its worker's completion
  // is awaited.
  bool worker_awaited = false;
  // results[0] of the completed train / eval of `version` (format and url only).
  std::optional<ModelRef> train_model;
  std::optional<ModelRef> eval_result;
  // Number of job conditions already examined (indices [0, conditions_seen)); only grows.
  int64_t conditions_seen = 0;
  // Observability.
  std::vector<Deployment> deployments;  // round = version deployed; at most kDeploymentsKept
  int64_t deploy_count = 0;             // deploy attempts finished (copied or failed), ever
  // Worker failures since the last completed train. The first is retried at once; from the second
  // on the next train waits 1 s, 2 s, 4 s ... 60 s (retry_after_ms), so a worker that fails at
  // once is not restarted in a tight loop.
  int64_t consecutive_failures = 0;
  int64_t retry_after_ms = 0;  // no file write is retried before this time
  std::string last_error;

  bool operator==(const State&) const = default;
};

// Everything the step needs besides the state. References stay valid for the call only.
struct Spec {
  const LlJob* job = nullptr;  // metadata, spec and the latest conditions (with `data` parsed:
                               // a Failed condition is matched to the Ready that carried this
                               // LC's outputDir)
  const Trigger* train_trigger = nullptr;  // compiled when the job was loaded
  bool dataset_known = false;              // sample files are written only while it is known
  bool csv = false;  // the dataset's format is csv, any case (L8): data.csv with the header line
  bool dataset_s3 = false;  // as il::Spec::dataset_s3
};

struct Output {
  State state;
  std::vector<Action> actions;
};

Output Step(const Spec& spec, const State& state, const Event& event, const Now& now);

// As il::ScopeOfReport: train, the output directory of the version in training; eval, that
// version's eval output directory or the trained model sent in the eval Ready.
ReportScope ScopeOfReport(const Spec& spec, const State& state, const std::string& kind);

// `out` is spec.outputDir with trailing '/' removed (OutputRoot).
std::string EvalOutputDir(const std::string& out, int64_t version);  // <out>/eval/<v>
std::string DeployModelUrl(const std::string& out);                  // <out>/deploy/index.pkl

}  // namespace sedna::core::ll
