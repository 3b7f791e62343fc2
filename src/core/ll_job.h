// The lifelong-learning job as seen by the LC that answers the GM's Waiting conditions: the LC on
// the Dataset's node with a G2 GM (docs/protocol.md §H1.7), the LC on
// trainSpec.template.spec.nodeName with a G1 GM (which sends it every update, §H2.3). Pure:
// Step(spec, state, event, now) -> {state, actions, facts}, with the IL event and action types so
// one controller path runs both kinds.
//
// Condition-driven on every GM generation (§H3.2): each answer follows a Waiting the GM committed,
// once per condition index (the index in status.conditions, which only grows) and once per round
// (State::answered_eval_version; a stale GM object shows a round at other indexes, [D:I23]):
//   latest (Train, Waiting), train trigger fired -> train samples written -> train ready (LL-1)
//   latest (Eval, Waiting)  -> eval windows written -> eval ready with every output model of this
//                              round's (Train, Completed), else of the train report this LC
//                              recorded ([P:B6]); neither -> eval failed (never a null content)
//   latest (Deploy, Waiting) -> this round's (Eval, Completed) output models[0] (else the eval
//                              report this LC recorded) copied to <out>/deploy/index.pkl -> deploy
//                              ready (LL-5), deploy failed on a copy error (LL-6, where v0.7.0
//                              retries forever, §H4.5); no eval output -> deploy completed (NL6 of
//                              §H1.9)
// Only (Deploy, Waiting) is answered in the Deploy stage (v0.7.0 acts on any Deploy-stage latest
// condition and needs a per-round flag to not answer its own Ready; both GMs append (Deploy,
// Waiting) after every (Eval, Completed) and send it to this LC). "This round" is the conditions
// after the latest (stage, Ready|Waiting) before the Waiting, so an older round's output is never
// used.
//
// A worker report never makes the LC send anything: a completed report records its models for
// the [P:B6] fallback, a failed one (or a (Train|Eval, Failed) condition about the Ready this LC
// sent) ends the round's worker for the sample accounting and back-off; the next answer waits for
// the GM's Waiting. Reports for a stage this LC did not dispatch (another node's LC sent its Ready,
// or none is open) are forwarded only (ScopeOfReport: not awaited); a Waiting whose previous stage
// ran elsewhere is answered from the conditions' data alone.
//
// Lost answers: an answer is sent once per index; if a job message the GM sent at least
// kLostAnswerMs after the answer was committed still has that Waiting as its latest condition,
// the GM does not hold the answer (an erase of §H2.0, a GM restart, a frame lost with its
// connection) and the same report is sent again (no file is rewritten, nothing is copied again).
//
// Versions: a version is committed when its train file is written ([P:L5]); files of a committed
// version are never rewritten for another cycle, so after any failure the next train uses the
// next number. Samples: train samples sent to a train that fails return to the pending set, and
// that round's eval window is reopened, so a failure loses no sample (each eval sample is in
// exactly one window, [P:B2]).
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

// Layout helpers shared with IL (§P7.4, §P8.1).
using il::EvalDataUrl;
using il::OutputRoot;
using il::TrainDataUrl;
using il::TrainOutputDir;

using il::kDeploymentsKept;
using il::kEvalWindows;
using il::kLostAnswerMs;

enum class Phase { kTrain, kEval, kDeploy };
const char* PhaseName(Phase p);  // "train", "eval", "deploy" (the LL wire spelling)

// Invariants: work kWriteTrain: phase kTrain, !worker_awaited, train_range holds the samples being
// written; kWriteEval: work_models are the eval ready's models; kDeploy: work_models = [the eval
// model]; worker_awaited implies work == kNone and phase kTrain or kEval.
struct State {
  // The stage this LC is in: that of its open ready (worker_awaited) or in-flight work; kTrain
  // otherwise (before any, and once a round's deploy or a failure was answered: the next step is
  // a train). Status shows it as "<phase>/<work>".
  Phase phase = Phase::kTrain;
  // The last committed version (0: none yet). Train files/outputs of version v are
  // data/train/<v>, train/<v>; its eval files/outputs data/eval/<v>, eval/<v>. A train in flight
  // writes version + 1.
  int64_t version = 0;
  // Sample accounting (design-notes §D4), as in IL.
  int64_t samples_seen = 0;
  SpoolRange train_pending;              // train samples waiting for the trigger
  SpoolRange eval_open;                  // eval samples since the last committed train
  std::vector<SpoolRange> eval_windows;  // closed windows, oldest first; at most kEvalWindows,
                                         // one more while the train of `version` is open
  // The train samples being written (kWriteTrain) or sent in the train ready of `version` while
  // its train is open; empty otherwise.
  SpoolRange train_range;
  // In-flight file or copy work; re-issued on Resume. work_condition: the index of the Waiting
  // it answers.
  Work work = Work::kNone;
  int64_t work_condition = -1;
  std::vector<ModelRef> work_models;
  // The ready this LC sent for `phase` (train: LL-1, eval: LL-3) is open: the GM has not yet
  // moved on to the next stage's Waiting and no failure of it was seen.
  bool worker_awaited = false;
  // The models of the last eval ready (what an eval report may name besides eval/<version>).
  std::vector<ModelRef> eval_inputs;
  // Index of the last Waiting answered, per stage (-1: none). A Waiting is answered only when its
  // index is greater.
  int64_t answered_train_waiting = -1;
  int64_t answered_eval_waiting = -1;
  int64_t answered_deploy_waiting = -1;
  // Once per round, not per index ([D:I23]): the version whose eval / deploy Waiting this LC
  // answered last (0: none). A GM object from a stale cache, or one whose status write erased
  // conditions, shows a round's Waiting at another index; its round is the version in the
  // outputDir (<out>/train/<v>, <out>/eval/<v>) of the latest Ready before it, and a Waiting of
  // a round already answered is not answered again (the lost-answer rule still applies at the
  // answered index). A (Train, Waiting) after version v's Ready starts v + 1: not answered when
  // this LC already committed that version.
  int64_t answered_eval_version = 0;
  int64_t answered_deploy_version = 0;
  int64_t last_stale_waiting = -1;  // the stale Waiting last logged (not persisted)
  // The last answer (for the lost-answer rule): its Waiting's index, when it was committed, and
  // the report itself.
  int64_t answer_condition = -1;
  int64_t answer_at_ms = 0;
  std::optional<StatusReport> answer;
  // Results (format and url) of the completed train / eval reports of `*_version` this LC
  // received (the [P:B6] fallback when the conditions lack the output).
  std::vector<ModelRef> train_models;
  int64_t train_models_version = 0;
  std::vector<ModelRef> eval_models;
  int64_t eval_models_version = 0;
  // Number of job conditions already examined for (stage, Failed) (indices [0, conditions_seen));
  // only grows.
  int64_t conditions_seen = 0;
  // Observability.
  std::vector<Deployment> deployments;  // round = version deployed; at most kDeploymentsKept
  int64_t deploy_count = 0;             // deploy attempts finished (copied or failed), ever
  // Worker failures since the last completed train. The first is retried at once; from the second
  // on the next train waits 1 s, 2 s, 4 s ... 60 s (retry_after_ms), so a worker that fails at
  // once is not restarted in a tight loop.
  int64_t consecutive_failures = 0;
  int64_t retry_after_ms = 0;  // no Waiting is answered before this time
  std::string last_error;

  bool operator==(const State&) const = default;
};

// Everything the step needs besides the state. References stay valid for the call only.
struct Spec {
  const LlJob* job = nullptr;  // metadata, spec and the latest conditions (with `data` parsed)
  const Trigger* train_trigger = nullptr;  // compiled when the job was loaded
  bool dataset_known = false;              // sample files are written only while it is known
  bool csv =
      false;  // the dataset's format is csv, any case ([P:L8]): data.csv with the header line
  bool dataset_s3 = false;  // as il::Spec::dataset_s3
  // The tokens dataIndex.txt lists (il::Layout; the eval directory is data/eval/<v> in both).
  il::Layout index_layout = il::Layout::kV07;
  // When the GM sent the job object in `job` (unix ms); 0: unknown (e.g. loaded from the
  // database), and then no answer is re-sent.
  int64_t job_received_ms = 0;
};

struct Output {
  State state;
  std::vector<Action> actions;
  std::vector<Fact> facts;  // what the step did, for the observers (core/facts.h)
};

Output Step(const Spec& spec, const State& state, const Event& event, const Now& now);

// What a completed report may name now: train, the output directory of the version whose train
// ready this LC sent, while it is open; eval, that version's eval output directory or the models
// sent in the eval ready, while it is open. Otherwise not awaited (forwarded only).
ReportScope ScopeOfReport(const Spec& spec, const State& state, const std::string& kind);

// `out` is spec.outputDir with trailing '/' removed (OutputRoot).
std::string EvalOutputDir(const std::string& out, int64_t version);  // <out>/eval/<v>
std::string DeployModelUrl(const std::string& out);                  // <out>/deploy/index.pkl

}  // namespace sedna::core::ll
