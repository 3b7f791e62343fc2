// The incremental-learning job as seen by the LC on the dataset node (docs/protocol.md §P8.2, with
// the §P8.5 IL bugs fixed). Pure: Step(spec, state, event, now) -> {state, actions, facts}.
//
// The GM drives the job with conditions; the LC answers each (Train,Waiting) and (Eval,Waiting)
// condition at most once (identified by its index in status.conditions, which only grows), so a
// GM re-send never produces a second Ready ([P:B4]). The deploy decision is taken once per round,
// identified by its train round (State::pending_round_key), not by an index: a stale GM object
// shows a round at other indexes ([D:I23]). Work that touches files (sample files, the deploy
// copy) is an action whose completion comes back as an event; the state says which work is in
// flight, so after a restart Resume re-issues it (actions are idempotent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/facts.h"
#include "core/report.h"
#include "core/resources.h"
#include "core/trigger.h"

namespace sedna::core::il {

inline constexpr int kEvalWindows =
    5;  // eval samples of the last 5 train rounds (design-notes §D4)
inline constexpr int kDeploymentsKept = 10;   // deploy history kept for status and rollback
inline constexpr int kDecidedRoundsKept = 4;  // decided rounds remembered (stale re-sends)
// The lost-answer rule (§H3.2), both kinds: a job object the GM sends at least this long after an
// answer was committed, still showing the Waiting it answered as latest, means the GM lost the
// answer, and the same report is sent again.
inline constexpr int64_t kLostAnswerMs = 60'000;

// Samples in a spool file: bytes [begin,end) holding `count` lines.
struct SpoolRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t count = 0;
  bool operator==(const SpoolRange&) const = default;
};

enum class SpoolKind { kTrain, kEval };

enum class Work { kNone, kWriteTrain, kWriteEval, kDeploy, kHotUpdate };
const char* WorkName(Work w);

// How sample files are laid out (docs/design-notes.md, "Both GM generations"): k2021 as the 2021
// LC (Sedna v0.3-v0.4): the eval file of train round r under data/eval/<r + 1>, dataIndex.txt
// lists the first space-separated token of each sample; kV07 as the v0.5-v0.7 LC: data/eval/<r>,
// dataIndex.txt lists every space-separated token with a non-empty extension (Go's path.Ext).
enum class Layout { k2021, kV07 };
const char* LayoutName(Layout l);  // "2021", "v0.7"

struct Deployment {
  int64_t round = 0;  // train round of the deployed model
  std::string url;    // trained model URL that was copied
  std::string at;     // RFC 3339
  bool operator==(const Deployment&) const = default;
};

// A decided round (one decision per round, whatever the GM re-sends): the train round number and
// the report that answered it, re-sent only by the lost-answer rule.
struct DecidedRound {
  int64_t round = 0;
  StatusReport report;
  int64_t at_ms = 0;  // when it was sent (or last re-sent)
  bool operator==(const DecidedRound&) const = default;
};

struct State {
  // Train files and outputs of the next cycle use `round`; the eval files of a cycle use the
  // already incremented value (§P8.2 round numbering).
  int64_t round = 1;
  // Sample accounting (design-notes §D4 split by running totals). samples_seen counts new samples
  // since the job started; the ranges locate them in the job's spool files.
  int64_t samples_seen = 0;
  SpoolRange train_pending;              // train samples waiting for the trigger
  SpoolRange eval_open;                  // eval samples since the last train trigger
  std::vector<SpoolRange> eval_windows;  // closed windows, oldest first, at most kEvalWindows
  // Index in status.conditions of the Waiting condition last answered, -1 for none.
  int64_t answered_train_waiting = -1;
  int64_t answered_eval_waiting = -1;
  // The deploy decision (docs/protocol.md §H3.2): one per eval round, taken at the first of
  // a (Deploy, Waiting) for that round and deploy_wait after the forwarded eval report was
  // written upstream. A round is identified by the index of the (Eval, Waiting) it answers: this
  // LC's answered_eval_waiting or, for an eval another node's LC dispatched, the latest one in the
  // conditions when its worker reported here.
  int64_t pending_round_id = -1;         // round awaiting its decision (-1: none)
  bool eval_reported = false;            // a valid eval report of pending_round_id was received
  std::vector<ModelRef> eval_report;     // its results (the fallback when conditions lack them)
  std::vector<ModelRef> pending_models;  // [trained, eval model] of that round's Eval Ready
  int64_t eval_written_ms = 0;           // when the forwarded report was written upstream
  // An eval report was refused ([D:I15]) while the eval was outstanding: unless a valid one
  // comes first, the round is decided "not deployed" at this time (unix ms; 0: none).
  int64_t eval_refused_deadline_ms = 0;
  int64_t decided_round_id = -1;                // round of the last decision
  int64_t decided_at_ms = 0;                    // when it was sent (or last re-sent)
  std::optional<StatusReport> decision_report;  // its report, re-sent by the lost-answer rule
  std::string decided_by;                       // "(Deploy, Waiting)", "deploy-wait", ...
  int64_t answered_deploy_waiting = -1;         // index of the last (Deploy, Waiting) answered
  // The round's identity that survives re-indexing (a GM object computed from a stale cache, or
  // whose status write erased conditions the LC appended, shows the same round at other indexes):
  // the train round N, from the round's (Eval, Ready) trained model under <out>/train/<N>/ (not
  // its dataURL, whose number depends on the layout), or a (Train, Ready) outputDir
  // <out>/train/<N>.
  // 0: unknown (conditions without that data), then the index rules above apply.
  int64_t pending_round_key = 0;             // train round of pending_round_id
  int64_t decided_round_key = 0;             // train round of decided_round_id
  std::vector<DecidedRound> decided_rounds;  // the last kDecidedRoundsKept decisions, oldest first
  // Rounds up to this train round are closed: a later round's Train condition was the latest. A
  // (Deploy, Waiting) of a closed round is a stale object and is never answered.
  int64_t closed_round = 0;
  int64_t answered_hot_update = -1;  // index of the last (Deploy, Running) written (§H4.1)
  // In-flight work and what it needs to finish.
  Work work = Work::kNone;
  int64_t work_condition = -1;
  int64_t work_round = 0;
  // kWriteTrain / kWriteEval: the layout the write started with (Spec::layout then), kept so a
  // re-issue after a restart writes the same files even if the GM generation is known by then.
  Layout work_layout = Layout::k2021;
  SpoolRange work_range;              // kWriteTrain: the train samples being written
  std::vector<ModelRef> work_models;  // kWriteTrain: [base]; kWriteEval: [trained, eval model];
                                      // kDeploy: [trained, deploy model] and, with an
                                      // initialEvalModel, [eval-format trained, eval model]
  int64_t work_copies_done = 0;       // kDeploy: copies of work_models pairs finished
  // Models learned from train reports (fallback when conditions lack the output, [P:B6]).
  std::optional<ModelRef> trained;       // models[0]: the deploy candidate
  std::optional<ModelRef> trained_base;  // models[1], or models[0] for one-model reports ([P:B5])
  // The outstanding eval: the models sent in IL-3 ([trained, deployed]).
  bool eval_outstanding = false;
  int64_t eval_round = 0;
  std::vector<ModelRef> eval_models;
  // Observability.
  std::vector<ModelRef> last_eval_results;
  std::string last_decision;
  int64_t decisions = 0;      // deploy decisions made (deployed, kept or failed)
  int64_t decided_round = 0;  // train round of the last decision
  std::vector<Deployment> deployments;
  int64_t retry_after_ms = 0;
  std::string last_error;

  bool operator==(const State&) const = default;
};

// Everything the step needs besides the state. References stay valid for the call only.
struct Spec {
  const IlJob* job = nullptr;              // metadata, spec and the latest conditions
  const Trigger* train_trigger = nullptr;  // compiled when the job was loaded
  const Trigger* deploy_trigger = nullptr;
  // The Models the job names, as the caller keeps them (null while not known): they live at least
  // as long as the Spec, like the job and the triggers.
  const ModelRef* initial_model = nullptr;  // the Model CR spec.initialModel.name
  const ModelRef* deploy_model = nullptr;   // the Model CR spec.deploySpec.model.name
  // The Model CR evalSpec.initialEvalModel.name, when the job names one (§H4.2).
  const ModelRef* initial_eval_model = nullptr;
  bool dataset_known = false;
  bool csv = false;  // the dataset's format is csv ([P:B19]: IL writes data.csv)
  // The dataset's index is on S3: txt sample files get a dataIndex.txt beside them (§P7.4) and
  // Ready reports carry its URL as dataIndexURL.
  bool dataset_s3 = false;
  // Branch 2 of the deploy decision (§H3.2): the decision is sent this long after the forwarded
  // eval report was written upstream unless a (Deploy, Waiting) came first; also how long a round
  // whose eval report was refused waits for a valid one. 0: no timer (pure v0.7.0, --gm-protocol
  // g2 with --deploy-wait 0).
  int64_t deploy_wait_ms = 30000;
  // The GM is the 2021 generation (--gm-protocol g1, or auto once the GM evidence says G1;
  // docs/design-notes.md, "GM generations"): round N > 1 trains from models[1] of the latest
  // (Train, Completed) output (models[0] for a one-model report), as the 2021 LC's
  // getTrainOrEvalModel does, instead of the v0.5+ format rule against the initialModel CR.
  bool g1_rules = false;
  // The sample file layout of writes started now: k2021 under G1 rules, else kV07.
  Layout layout = Layout::kV07;
  // The job object was received from the GM on the current connection (not only reloaded from
  // the store): a (Deploy, Running) is acted on only then (§H3.2 hot update).
  bool conditions_fresh = true;
  // When the GM last sent the job object (unix ms; 0: not since start). The lost-answer rule
  // (§H3.2) re-sends a decision only on a job object received >= 60 s after it was sent: a Model
  // or Dataset change steps the job with the last object, which proves nothing.
  int64_t job_received_ms = 0;
};

struct Now {
  int64_t unix_ms = 0;
  int minute_of_day = 0;  // local time of day in the LC's configured time zone
  std::string rfc3339;
};

// Events.
struct JobChanged {};  // the job, a Model or the Dataset was inserted/updated
struct Tick {};        // periodic check (checkPeriodSeconds)
struct Resume {};      // after a restart: re-issue in-flight work
struct SamplesIngested {
  int64_t samples_seen = 0;  // new running total
  int64_t train_added = 0;
  int64_t train_end = 0;  // train spool size after the append
  int64_t eval_added = 0;
  int64_t eval_end = 0;
};
struct FileWritten {
  Work work = Work::kNone;
  int64_t round = 0;
  bool ok = false;
  std::string error;
};
struct WorkerReported {
  WorkerReport report;
};
struct ModelCopied {
  bool ok = false;
  std::string error;
};
// The forwarded eval report of the pending round was written to the GM (branch 2 starts here).
struct EvalForwardWritten {
  int64_t at_ms = 0;
};
// The WriteHotUpdate of `condition` finished.
struct HotUpdateWritten {
  int64_t condition = -1;
  bool ok = false;
  std::string error;
};
// A worker's eval report was refused before it reached the job (malformed, or naming models the
// job may not use); `why` names the field.
struct EvalReportRefused {
  std::string worker;
  std::string why;
};
using Event = std::variant<JobChanged, Tick, Resume, SamplesIngested, FileWritten, WorkerReported,
                           ModelCopied, EvalReportRefused, HotUpdateWritten, EvalForwardWritten>;

// Actions.
struct WriteSamples {
  Stage stage = Stage::kTrain;  // kTrain or kEval
  int64_t round = 0;
  std::string url;  // host path (or s3 URL) of data.txt / data.csv
  SpoolKind spool = SpoolKind::kTrain;
  std::vector<SpoolRange> ranges;  // in order
  bool csv_header = false;         // prefix the dataset's csv header line
  // Non-empty: also write the dataset's dataIndex.txt here (§P7.4: the dataset's URL prefix, then
  // per sample the tokens `index_layout` names: the first, or every one with an extension).
  std::string index_url;
  Layout index_layout = Layout::k2021;
};
struct SendReport {
  StatusReport report;
};
struct CopyModel {
  std::string src_url;  // host paths (the adapter adds the rootfs prefix to both, [P:B12])
  std::string dst_url;
};
// Model hot update on (Deploy, Running) (docs/protocol.md §H4.1): the copies in order (each
// src -> dst, host paths or s3 URLs; the adapter adds the rootfs prefix to local paths and writes
// every file as temp + fsync + rename), then <rootfs><config_path> with the v0.7.0 LC's bytes:
// {"model_config":{"model_path":model_path,"model_update_time":<Go time.Now().String()>}}
// indented by one space, mode 0644, no trailing newline. Any failure stops before the config is
// written. Completion comes back as HotUpdateWritten{condition}.
struct WriteHotUpdate {
  int64_t condition = -1;
  // The job's namespace and name: its hot-update directory is derived from them
  // (<hot-update dir>/<ns>/incrementallearningjob/<name>, lower-cased as the GM does), and
  // config_path and the copies into that directory must lie beneath it.
  std::string job_namespace;
  std::string job_name;
  std::string config_path;  // the kHotUpdateConfigAnnotation value (a host path)
  std::vector<CopyModel> copies;
  std::string model_path;  // "/model-hot-update/<basename of the trained model url>"
};
struct Log {
  enum class Level { kInfo, kWarn, kError };
  Level level = Level::kInfo;
  std::string text;
};
using Action = std::variant<WriteSamples, SendReport, CopyModel, Log, WriteHotUpdate>;

struct Output {
  State state;
  std::vector<Action> actions;
  std::vector<Fact> facts;  // what the step did, for the observers (core/facts.h)
};

Output Step(const Spec& spec, const State& state, const Event& event, const Now& now);

// The earliest time a Tick must come even if nothing happens (retry back-off, the deploy wait);
// 0 for none.
int64_t NextWakeMs(const Spec& spec, const State& state);

// What a completed report of `kind` ("train", "eval", any case) may name now: train, the output
// directory of the train round in flight; eval, exactly the models sent in the outstanding eval.
ReportScope ScopeOfReport(const Spec& spec, const State& state, const std::string& kind);

// Layout helpers (§P7.4, §P8.1): `out` is spec.outputDir with trailing '/' removed.
std::string OutputRoot(const std::string& output_dir);
std::string TrainDataUrl(const std::string& out, int64_t round, bool csv);
std::string EvalDataUrl(const std::string& out, int64_t round, bool csv);
// The directory number of the eval samples of a cycle whose State::round is `round` (the train
// round + 1): `round` under k2021, the train round under kV07.
int64_t EvalDirRound(int64_t round, Layout layout);
std::string TrainOutputDir(const std::string& out, int64_t round);
// The dataIndex.txt beside a sample file (§P7.4), for txt samples of an S3 dataset; else "".
std::string DataIndexUrl(const std::string& data_url, bool dataset_s3, bool csv);

}  // namespace sedna::core::il
