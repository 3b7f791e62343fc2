// A pure model of Sedna's GM job-condition machine for IL and LL jobs (docs/protocol.md
// §P4.1-§P4.3 for G1; docs/protocol.md §H1.3 and §H1.7 for G2), used where no GM exists: the
// standalone LC plays the GM's part with it, and the test GM emulator follows it. The caller owns
// one authoritative GmJobState per job and threads it through every call: each function returns the
// successor of the state it was given and only ever appends to its condition list, so a report can
// never be lost to a concurrent GM write (§P4.8 [P:R1] does not exist here) as long as calls for
// one job are serialised on that one state.
//
// No IO, clock or JSON: `now` is an RFC 3339 string from the caller, and condition data is the
// already re-marshalled `data` string built by the caller's codec (JobCondition::data is left
// for that codec to fill).
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/resources.h"
#include "core/status.h"

namespace sedna::core::gm {

enum class JobKind { kIncremental, kLifelong };

// The GM generation modelled (docs/protocol.md §H0): G1 = GM v0.3.x-v0.4.x (upstream
// 44609f00; a hot-update job follows v0.4's hot path), G2 = GM v0.5.0-v0.7.0 and HEAD.
enum class Generation { kG1, kG2 };
const char* GenerationName(Generation g);  // "G1", "G2"

// What the GM reads from the job besides its status: the generation it runs, and the spec fields
// that change its decisions.
struct GmJobSpec {
  JobKind kind = JobKind::kIncremental;
  Generation generation = Generation::kG1;
  bool hot_update = false;              // IL deploySpec.model.hotUpdateEnabled (§H4.1)
  std::string hot_update_config;        // its annotation value: HotUpdateConfigPath(ns, name)
  bool has_initial_eval_model = false;  // IL evalSpec.initialEvalModel is set (§H4.2)
  std::string train_spec_node;          // LL spec.trainSpec.template.spec.nodeName (G1 routing)
  bool operator==(const GmJobSpec&) const = default;
};

// lower("/var/lib/sedna/model-hot-update/<ns>/incrementallearningjob/<name>/model_config.json"),
// the GM's sedna.io/model-hot-update-config value (§H4.1; ASCII lower-casing).
std::string HotUpdateConfigPath(const std::string& ns, const std::string& name);

// Phase of the newest pod of one worker type; kNone when the job has no pod of that type.
enum class PodPhase { kNone, kPending, kRunning, kSucceeded, kFailed };
const char* PodPhaseName(PodPhase p);  // "None", "Pending", "Running", "Succeeded", "Failed"

// The newest pod per worker type and the node it runs on (spec.nodeName; "" = not scheduled or
// not known). The Deploy stage's pod is the inference pod.
struct Pods {
  PodPhase train = PodPhase::kNone;
  PodPhase eval = PodPhase::kNone;
  PodPhase inference = PodPhase::kNone;
  std::string train_node;
  std::string eval_node;
  std::string inference_node;
  bool operator==(const Pods&) const = default;
};

// Every condition the GM appends has status "True"; an LC-reported one has this message.
// (JobCondition carries neither status nor lastHeartbeatTime: codecs emit "True" and use
// last_transition_time for both times.)
inline constexpr const char* kConditionStatus = "True";
inline constexpr const char* kReportedByLcMessage = "reported by lc";

// Create a train or eval pod (stage kTrain or kEval) from the Ready condition's data.
struct CreatePod {
  Stage stage = Stage::kTrain;
  std::string data_json;
  bool operator==(const CreatePod&) const = default;
};
// IL only: create the inference pod at the job's first sync.
struct CreateInferencePod {
  bool operator==(const CreateInferencePod&) const = default;
};
// On (Deploy, Ready): delete the newest inference pod if any, then create a new one, so it loads
// the freshly deployed model. Also used for LL, whose GM creates its only inference pod here.
struct RestartInferencePod {
  bool operator==(const RestartInferencePod&) const = default;
};
using GmAction = std::variant<CreatePod, CreateInferencePod, RestartInferencePod>;
// "CreatePod(Train, <data>)", "CreateInferencePod", "RestartInferencePod".
std::string ToString(const GmAction& a);

struct GmJobState {
  std::vector<JobCondition> conditions;  // append-only, oldest first
  bool started = false;                  // status.startTime set (the first sync has happened)
  // The annotations the GM itself puts on the job: sedna.io/Train|Eval|Deploy = the node of that
  // stage's pod, sedna.io/model-hot-update-config. Job copies sent to an LC carry them.
  std::map<std::string, std::string> annotations;
};

struct GmStep {
  GmJobState state;
  std::vector<GmAction> actions;  // in the order the GM performs them
  bool changed = false;           // state differs from the input (a condition or `started`)
};

// Train -> Eval -> Deploy -> Train.
Stage NextStage(Stage s);

// §P4.1: the LC's "status" report for a job. Appends {type from `status`, stage from `phase`,
// message "reported by lc", empty reason, data = data_json, time = now} whatever the current state
// (the GM validates nothing, §P4.8 [P:R2]); identical for IL and LL. phase is one of
// train|eval|deploy, status one of ready|completed|failed|waiting, each matched as Go's
// strings.ToLower would (ASCII case, and U+0130 'İ' lowers to 'i'); no whitespace trimming.
// Otherwise an error naming the value, the phase checked first: `phase: unknown "deploy2" (expected
// train, eval or deploy)`, `status: unknown "running" (expected ready, completed, failed or
// waiting)`.
Result<GmStep> ApplyUpstream(JobKind kind, const GmJobState& state, const std::string& phase,
                             const std::string& status, const std::string& data_json,
                             const std::string& now);

// §P4.2: one sync of the job, i.e. one pass of transitJobState over the last condition and the
// newest pod of its stage. On the first sync (`started` false) it sets `started` and, for IL,
// creates the inference pod unless one is already Pending/Running. A condition {stage, type,
// status "True", empty reason/message/data, time = now} is appended only when the type changes
// (a stage change always comes with one). LL differs from IL only in creating no inference pod at
// the first sync. The GM re-runs a sync on every job/pod event: repeat while `changed`, after
// carrying out the actions (see PodsAfter), or use Settle.
GmStep Transit(JobKind kind, const GmJobState& state, const Pods& pods, const std::string& now);

// Transit for a generation and spec. Transit(kind, ...) above is this with {kind, kG1}. Beyond it:
// * A stage pod seen Running while its stage is Starting|Running sets the annotation
//   sedna.io/<Stage> = the pod's node (IL on both generations: 44609f00 does it for Train/Eval
//   too; LL on G2 only), as Go's addJobAnnotations does: nothing when the value is already there,
//   and a missing key counts as "", so an empty node never adds the key. A changed annotation is
//   a change (the GM's patch wakes the controller again).
// * First sync of a hot job (both generations, v0.4 on): when the inference pod is created, also
//   annotate sedna.io/model-hot-update-config = spec.hot_update_config (if non-empty).
// * IL (Deploy, Ready): G2 cold: RestartInferencePod and (Deploy, Completed) directly. Hot (G2
//   and G1/v0.4): no action, (Deploy, Starting); then the inference pod Running sets
//   sedna.io/Deploy and appends (Deploy, Running), which stays until an LC report or the pod ends.
//   G1 cold: as Transit(kind, ...).
// * LL (Deploy, Ready) on G2: RestartInferencePod and (Deploy, Completed) directly.
// (G2 returns a failed pod restart as an error and retries it; pods never fail to start here.)
GmStep Transit(const GmJobSpec& spec, const GmJobState& state, const Pods& pods,
               const std::string& now);

// The newest pods once `actions` are carried out: a created or restarted pod becomes the newest
// of its type and starts Pending. Node fields are kept: they are the caller's placement of that
// worker type (where its next pod runs).
Pods PodsAfter(const Pods& pods, const std::vector<GmAction>& actions);

struct GmSettled {
  GmStep step;     // final state; all actions of all passes, in order; changed if any pass changed
  Pods pods;       // `pods` advanced by PodsAfter over those actions
  int passes = 0;  // Transit passes run, including the final one that changed nothing
};
// Transit repeated, with pods advanced by PodsAfter between passes, until a pass changes nothing.
// Any state reaches that fixed point within 3 passes; kMaxSettlePasses is a safety bound.
inline constexpr int kMaxSettlePasses = 8;
GmSettled Settle(JobKind kind, const GmJobState& state, const Pods& pods, const std::string& now);
GmSettled Settle(const GmJobSpec& spec, const GmJobState& state, const Pods& pods,
                 const std::string& now);

// §P4.3: what the GM sends the LC on the dataset node after a job update leaving `state`. All
// workers are assumed to run on that node (standalone mode: one node), so the train/eval node
// annotations equal it: IL sends the job at (Train|Eval, Waiting|Running), with the initial Model
// on (Train, Waiting) and the deploySpec Model on (Eval, Waiting), and nothing otherwise (no
// conditions, Ready/Starting, Completed/Failed whose `delete` goes to other nodes only, any
// Deploy stage). LL sends the job on every update and never a Model.
struct Downstream {
  enum class ModelToSend { kNone, kInitial, kDeploy };
  bool send_job = false;
  ModelToSend model = ModelToSend::kNone;  // sent after the job
  bool operator==(const Downstream&) const = default;
};
Downstream DownstreamFor(JobKind kind, const GmJobState& state);

}  // namespace sedna::core::gm
