// A pure model of Sedna's GM job-condition machine for IL and LL jobs (sedna-protocol.md
// §4.1-§4.3), used where no GM exists: the standalone LC plays the GM's part with it, and the test
// GM emulator follows it. The caller owns one authoritative GmJobState per job and threads it
// through every call: each function returns the successor of the state it was given and only ever
// appends to its condition list, so a report can never be lost to a concurrent GM write (§4.8 R1
// does not exist here) as long as calls for one job are serialised on that one state.
//
// No IO, clock or JSON: `now` is an RFC 3339 string from the caller, and condition data is the
// already re-marshalled `data` string built by the caller's codec (JobCondition::data is left
// for that codec to fill).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "core/resources.h"
#include "core/status.h"

namespace sedna::core::gm {

enum class JobKind { kIncremental, kLifelong };

// Phase of the newest pod of one worker type; kNone when the job has no pod of that type.
enum class PodPhase { kNone, kPending, kRunning, kSucceeded, kFailed };
const char* PodPhaseName(PodPhase p);  // "None", "Pending", "Running", "Succeeded", "Failed"

// The newest pod per worker type. The Deploy stage's pod is the inference pod.
struct Pods {
  PodPhase train = PodPhase::kNone;
  PodPhase eval = PodPhase::kNone;
  PodPhase inference = PodPhase::kNone;
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
};

struct GmStep {
  GmJobState state;
  std::vector<GmAction> actions;  // in the order the GM performs them
  bool changed = false;           // state differs from the input (a condition or `started`)
};

// Train -> Eval -> Deploy -> Train.
Stage NextStage(Stage s);

// §4.1: the LC's "status" report for a job. Appends {type from `status`, stage from `phase`,
// message "reported by lc", empty reason, data = data_json, time = now} whatever the current state
// (the GM validates nothing, §4.8 R2); identical for IL and LL. phase is one of train|eval|deploy,
// status one of ready|completed|failed|waiting, each matched as Go's strings.ToLower would (ASCII
// case, and U+0130 'İ' lowers to 'i'); no whitespace trimming. Otherwise an error naming the value,
// the phase checked first: `phase: unknown "deploy2" (expected train, eval or deploy)`,
// `status: unknown "running" (expected ready, completed, failed or waiting)`.
Result<GmStep> ApplyUpstream(JobKind kind, const GmJobState& state, const std::string& phase,
                             const std::string& status, const std::string& data_json,
                             const std::string& now);

// §4.2: one sync of the job, i.e. one pass of transitJobState over the last condition and the
// newest pod of its stage. On the first sync (`started` false) it sets `started` and, for IL,
// creates the inference pod unless one is already Pending/Running. A condition {stage, type,
// status "True", empty reason/message/data, time = now} is appended only when the type changes
// (a stage change always comes with one). LL differs from IL only in creating no inference pod at
// the first sync. The GM re-runs a sync on every job/pod event: repeat while `changed`, after
// carrying out the actions (see PodsAfter), or use Settle.
GmStep Transit(JobKind kind, const GmJobState& state, const Pods& pods, const std::string& now);

// The newest pods once `actions` are carried out: a created or restarted pod becomes the newest
// of its type and starts Pending.
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

// §4.3: what the GM sends the LC on the dataset node after a job update leaving `state`. All
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
