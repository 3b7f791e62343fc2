// One job kind's runner, behind the one interface the job runner dispatches to: IlRunner
// (il_runner.cc) and LlRunner (ll_runner.cc), over what they share (decoded_runner.h). A kind
// runner is one job of its kind: its last received object, its compiled deploy trigger (IL), its
// core state machine (core::il / core::ll Step) and state, and the codec of its lc_state record.
// Everything the kinds share (the sample ledger, the timers, the pool round trip, the
// transaction) is the job runner's.
//
// Owns: the job's object (json::Decoded), its core state, and the next state of the step planned
//   and not yet adopted.
// Calls: the core (Step, NextWakeMs, ScopeOfReport), the record codec (il_record.h), the model
//   registry and the Dataset source it is handed (KindWorld), read-only.
// Called by: the job runner (job_runner.cc, job_steps.cc, job_reports.cc), on the loop.
// Emits: nothing itself; the actions and facts of a step are returned (KindStep) for the job
//   runner to commit and act on.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "adapters/dataset/index_reader.h"
#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/jobs/model_registry.h"
#include "app/cluster/observation/status_view.h"
#include "core/facts.h"
#include "core/il_job.h"
#include "core/ll_job.h"
#include "core/resources.h"
#include "core/status.h"
#include "core/trigger.h"

namespace sedna::app {

enum class JobKind { kIl, kLl };

// What a job's step reads besides its own object and state: the job runner's view of the rest.
struct KindWorld {
  const ModelRegistry* models = nullptr;
  const DatasetSource* dataset = nullptr;  // the job's Dataset, nullptr while unknown
  const core::Trigger* train_trigger = nullptr;
  bool gm_is_g1 = false;       // --gm-protocol g1, or auto once this connection's evidence says G1
  int64_t deploy_wait_ms = 0;  // --deploy-wait
  int64_t deploy_report_delay_ms = 0;  // --deploy-report-delay
  bool conditions_fresh = true;        // the object came from the GM on this connection
  int64_t received_ms = 0;             // when the GM last sent the object (0: not since start)
};

// A planned step: what the core returned, its next state kept by the kind runner until Adopt.
struct KindStep {
  std::vector<core::il::Action> actions;
  std::vector<core::Fact> facts;
  bool state_changed = false;
  // IL: the step recorded a forwarded eval report whose write starts the deploy wait.
  bool forward_recorded = false;
  // When the job needs a Tick in its planned state even if nothing happens (0: none).
  int64_t next_wake_ms = 0;
};

// The objects' parts as stored (the resource row and the "status" record).
struct StoredObject {
  std::string type_meta, object_meta, spec, status;
};

using KindState = std::variant<core::il::State, core::ll::State>;

class KindRunner {
 public:
  virtual ~KindRunner() = default;

  // The object.
  virtual JobKind kind() const = 0;
  virtual const char* object_kind() const = 0;    // "IncrementalLearningJob", ...
  virtual const char* resource_kind() const = 0;  // core::kKindIlJob, ...
  virtual json::ReportSpelling spelling() const = 0;
  virtual const core::ObjectMeta& meta() const = 0;
  virtual const std::string& dataset_name() const = 0;
  virtual double train_prob() const = 0;
  virtual const std::string& output_dir() const = 0;
  virtual const std::vector<core::JobCondition>& conditions() const = 0;
  virtual const std::optional<std::string>& credential_json() const = 0;
  // The object's parts as stored, moved out of the runner, which keeps only the decoded fields:
  // taken once per object that arrives (TakeObject), to persist it.
  virtual StoredObject TakeStored() = 0;
  // The output subdirectories made before any Ready is sent (§P4.5).
  virtual std::vector<std::string> output_subdirs() const = 0;
  // Whether the Model CR `ns`/`name` is one the job's step reads.
  virtual bool reads_model(const std::string& ns, const std::string& name) const = 0;
  // Whether a delete removes the job's hot-update files (IL's, §H4.1).
  virtual bool has_hot_updates() const = 0;
  virtual const std::string& deploy_trigger_text() const = 0;  // "" when the kind has none

  // Compiles the object's triggers (the train trigger into `train`, a deploy trigger kept here)
  // and checks the common fields; an error names the field.
  virtual Status Validate(core::Trigger* train) = 0;
  // Takes the validated object (and deploy trigger) of `incoming`, a runner of the same kind.
  virtual void TakeObject(KindRunner& incoming) = 0;
  // The "loaded" log line's triggers part.
  virtual std::string TriggersText(const core::Trigger& train) const = 0;

  // The state.
  virtual int64_t samples_seen() const = 0;
  virtual int64_t train_committed() const = 0;
  virtual int64_t eval_committed() const = 0;
  // The record of the current state with `cursor`.
  virtual std::string EncodeRecord(const dataset::IndexCursor& cursor) const = 0;
  // Resumes from a stored record: the cursor into `cursor`, the "resumed at ..." text returned.
  virtual Result<std::string> LoadRecord(const std::string& record,
                                         dataset::IndexCursor* cursor) = 0;
  virtual KindState Snapshot() const = 0;
  virtual void Restore(KindState s) = 0;

  // Steps the core with `ev`, keeping the next state until Adopt (a later Plan replaces it).
  virtual KindStep Plan(const KindWorld& w, const core::il::Event& ev,
                        const core::il::Now& now) = 0;
  // The record of the planned state with `cursor`.
  virtual std::string EncodePlanned(const dataset::IndexCursor& cursor) const = 0;
  virtual void Adopt() = 0;
  // What a completed report of `kind` may name now (core ScopeOfReport).
  virtual core::ReportScope ScopeOfReport(const KindWorld& w, const std::string& kind) const = 0;
  // Whether a refused report of `kind` (lower case) must still end the round (IL's outstanding
  // eval: a G1 GM never asks for the deploy decision, §P4.3).
  virtual bool RefusalEndsRound(const std::string& kind) const = 0;
  virtual void FillView(JobView& v) const = 0;
};

// The checks both kinds make of an object: spec.dataset (trainProb, name) and spec.outputDir (an
// absolute host path or an s3:// URL); the error names the field.
Status ValidateJobCommon(const std::string& dataset, double train_prob,
                         const std::string& output_dir);

// A runner of each kind for a job, from its decoded object (Validate before use).
std::unique_ptr<KindRunner> MakeIlRunner(json::Decoded<core::IlJob> d);
std::unique_ptr<KindRunner> MakeLlRunner(json::Decoded<core::LlJob> d);

}  // namespace sedna::app
