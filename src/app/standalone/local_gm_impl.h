// Internal to src/app/local_gm*.cc: GmJob and LocalGm::Impl, the local manager's state.
#pragma once

#include <utility>  // before Asio (Boost 1.74 + g++ 12)

#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adapters/clock/system_clock.h"
#include "adapters/manifest/manifest.h"
#include "adapters/process/process_runner.h"
#include "adapters/store/store.h"
#include "app/standalone/local_credentials.h"
#include "app/standalone/local_gm.h"
#include "app/standalone/started_workers.h"
#include "app/standalone/worker_board.h"
#include "core/gm_conditions.h"
#include "core/resources.h"
#include "core/status.h"

namespace sedna::app {

// Helpers more than one local_gm*.cc needs (defined in local_gm.cc).
namespace local_gm_detail {

// The lc_state scope of the conditions kept for each job.
constexpr const char* kScope = "localgm";
// Standalone runs every worker on this machine: the GM's node routing (G2) collapses onto the
// Dataset's spec.nodeName, or onto this name when the Dataset has none.
constexpr const char* kStandaloneNode = "standalone";

// The JSON value at `path` under `o` (nullptr when any step is missing or not an object).
const nlohmann::json* Find(const nlohmann::json& o, std::initializer_list<const char*> path);

// "dataset" -> "Dataset", ..., for messages.
std::string KindName(const std::string& kind_lower);

// A v0.6+ GM's LL status.knowledgeBase computed from the content of an upstream LL message
// (docs/protocol.md §H4.4): AIClasses from output.models[0].classes; one AIModel per key of
// each output model's current_metric (averagePrecision: the key's first value, in the order the
// worker wrote it; numberOfTrainSamples: the model's number_of_labeled_unseen_sample);
// samples.numberOfLabeledUnseenSample the sum of the AIModels' numberOfTrainSamples,
// numberOfUnseenSample 0. nullopt when the message has no output model (the GM keeps the last).
// Stock lib/sedna reports none of these keys: all counts 0.
std::optional<nlohmann::json> KnowledgeBaseOf(const std::string& upstream_content);
// The knowledgeBase of an LL job no message has set yet (all zeros).
nlohmann::json ZeroKnowledgeBase();

}  // namespace local_gm_detail

// bugprone-exception-escape: its timers' destructors cancel them (Asio), which fails only if the
// reactor does, and epoll's cannot.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct GmJob {
  std::string kind;  // object kind: IncrementalLearningJob / LifelongLearningJob
  core::gm::JobKind gm_kind = core::gm::JobKind::kIncremental;
  std::string ns, name, key;
  nlohmann::json object;        // the manifest object, paths resolved
  std::string signature;        // object JSON, to detect changes
  core::gm::GmJobSpec gm_spec;  // what the GM reads from `object` (Impl::SpecOf)
  core::gm::GmJobState state;
  core::gm::Pods pods;
  std::map<core::Stage, int64_t> pod_ids;
  std::map<core::Stage, bool> reported;
  // A train/eval worker that exited 0 before its report reached this GM: the controller
  // acknowledges a report once journaled and forwards it after its batch commit, so the exit can
  // overtake it. The pod's verdict waits for the report (Succeeded) or opt.report_grace (Failed).
  std::map<core::Stage, std::unique_ptr<boost::asio::steady_timer>> unreported_exit;
  int64_t inference_id = -1;
  bool inference_hot = false;  // the running inference worker was started for model hot update
  bool warned_no_inference = false;
  bool warned_g1_hot = false;  // hotUpdateEnabled ignored with --gm-protocol g1 (logged once)
  // G2 LL: status.knowledgeBase from the latest message with output models (null: zeros).
  nlohmann::json knowledge_base;
  // securityContext fields warned about as not honoured or not applied (by path), once each.
  std::set<std::string> warned_security;
};

struct LocalGm::Impl {
  boost::asio::io_context& io;
  // Where GM frames go: the controller's OnGmFrame (a test's recorder in unit tests).
  std::function<void(const std::string&)> to_lc;
  LocalGmOptions opt;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<process::ProcessRunner> runner;
  // The workers started, for the report gate.
  StartedWorkers started;
  WorkerBoard board{clock()};  // the same workers, for the dashboard
  std::map<std::string, std::unique_ptr<GmJob>> jobs;
  std::map<std::string, std::string> plain;  // dataset/model key -> object JSON sent
  std::map<std::string, int64_t> sample_counts;
  std::map<std::string, std::string> source_file;  // object key -> manifest file it came from
  // The manifests' Secrets: in memory only (never logged, stored or written anywhere).
  SecretMap secrets;
  // Object key -> the Secret ("ns/name") it names but that is missing (logged once per Secret).
  std::map<std::string, std::string> missing_secret;
  std::unique_ptr<boost::asio::steady_timer> poll;
  std::string manifest_signature;
  bool stopped = false;
  core::gm::Generation generation;

  const core::Clock& clock() const { return opt.clock ? *opt.clock : clock::System(); }

  Impl(boost::asio::io_context& io_, std::function<void(const std::string&)> sink, LocalGmOptions o)
      : io(io_),
        to_lc(std::move(sink)),
        opt(std::move(o)),
        generation(opt.gm_protocol == "g1" ? core::gm::Generation::kG1
                                           : core::gm::Generation::kG2) {}

  // ---------------------------------------------------------------- the GM's view of a job
  // (local_gm_spec.cc)

  // The GM's reading of the job object: generation, hot update (IL, G2 only), initialEvalModel.
  core::gm::GmJobSpec SpecOf(GmJob& j);
  // The job's model_config.json under opt.hot_update_dir (the GM's annotation value, §H4.1).
  std::string HotUpdateConfig(const GmJob& j) const;
  // The node everything of the job runs on and is sent to: the Dataset's spec.nodeName, or
  // kStandaloneNode when it has none or is not loaded. (The GM syncs nothing then; here the one
  // LC holds the job anyway and shows it waiting for its Dataset, as with the G1 GM.)
  std::string DatasetNode(const GmJob& j);
  // Recomputes j.gm_spec after the object changed; a hot job that started before it was hot (or
  // under an older sedna-lc) gets its hot-update annotation, which the GM sets only at the first
  // sync, and an inference worker started the other way is restarted.
  void ApplySpec(GmJob& j);

  // ---------------------------------------------------------------- frames and conditions
  // (local_gm.cc)

  void Deliver(const std::string& op, const std::string& kind_lower, const std::string& ns,
               const std::string& name, const std::string& content);
  // Sends the job's Model CR `name` of its namespace, when loaded.
  void DeliverModel(const GmJob& j, const std::string& name);
  // Sends an object downstream (insert) as the GM does: with the credential of the Secret its
  // spec.credentialName names (§P2.5); without it, and an error in the log, when that Secret is
  // missing (Load sends it again when the Secret appears).
  void DeliverObject(const std::string& kind_lower, const std::string& ns, const std::string& name,
                     const std::string& text);
  nlohmann::json JobObject(const GmJob& j);
  // The job (and the Models that go with it) as the GM would send them to the LC: G1 §P4.3, G2
  // docs/protocol.md §H1.4/§H1.7 with every node collapsed onto DatasetNode (sends to another
  // node, e.g. "" for a stage whose pod was never seen running, are not delivered, as the GM's).
  void Sync(GmJob& j);
  // The job sent on its add, change or a Secret change: G1 (as before) the object as it is,
  // whatever its conditions; G2 syncs it (a G2 GM sends nothing for a job without conditions).
  void SendJob(GmJob& j);
  void Persist(const GmJob& j);
  // IL serves from the job's start; LL once a deploy happened.
  bool ServedBefore(const GmJob& j);
  // Returns whether stored conditions were found.
  bool Restore(GmJob& j);
  void SetPod(GmJob& j, core::Stage stage, core::gm::PodPhase phase);
  void Settle(GmJob& j);
  void Apply(const std::string& frame);

  // ---------------------------------------------------------------- workers
  // (local_gm_workers.cc)

  core::PodTemplate Template(const GmJob& j, const char* which);
  std::string DatasetUrl(const GmJob& j);
  // spec.credentialName of the Dataset or Model `name` of the job's namespace ("" when unset).
  std::string ObjectCredentialName(const GmJob& j, const char* kind_lower, const std::string& name);
  // A URL of the job's own (outputDir, the round's data, trained models): the job's Secret, else
  // the Dataset's.
  WorkerUrl JobUrl(const GmJob& j, const std::string& var, const std::string& url);
  // A URL of the Dataset or Model `name` of the job's namespace: that object's Secret, else the
  // job's.
  WorkerUrl ObjectUrl(const GmJob& j, const char* kind_lower, const std::string& name,
                      const std::string& var, const std::string& url);
  WorkerUrl DatasetOwned(const GmJob& j, const std::string& var, const std::string& url);
  // A model URL a train or eval worker gets (§P4.4): the initial Model's Secret when it is that
  // Model's URL, else the job's.
  WorkerUrl InputModelUrl(const GmJob& j, const std::string& var, const std::string& url);
  // Adds the S3 env of the worker's s3:// URLs to `env` (S3EnvForWorker). Logs the Secret's name
  // and the endpoint, never a key.
  void AddS3Env(const GmJob& j, const std::string& worker, const std::vector<WorkerUrl>& urls,
                std::map<std::string, std::string>& env);
  // Builds argv, env and working dir from the template's first container (image ignored).
  Result<process::ProcessSpec> WorkerSpec(const GmJob& j, const core::PodTemplate& t,
                                          const std::string& worker,
                                          const std::map<std::string, std::string>& contract);
  // Sets the process's credentials from the securityContext of spec.<part>.template
  // (worker_security.h), warning once per job and field about what is not honoured or applied.
  // An error (e.g. runAsNonRoot with a uid 0 worker) names the field: the worker is not started.
  Status ApplySecurityContext(GmJob& j, const char* part, process::ProcessSpec& p);
  void StartWorker(GmJob& j, core::Stage stage, const std::string& data_json);
  // G2's LL train pod env (docs/protocol.md §H4.4): HAS_COMPLETED_INITIAL_TRAINING and, when
  // true, CLOUD_KB_INDEX from the job's conditions.
  void AddKnowledgeBaseEnv(const GmJob& j, std::map<std::string, std::string>& env);
  void OnWorkerExit(const std::string& key, core::Stage stage, const std::string& worker,
                    const process::ExitInfo& info);
  // Holds the verdict of `stage`'s pod, which exited 0 before its report arrived, for
  // opt.report_grace.
  void WaitForReport(GmJob& j, core::Stage stage);
  // A train/eval report of `stage` reached the GM: a pod waiting for it succeeds.
  void ReportArrived(GmJob& j, core::Stage stage);
  void StartInference(GmJob& j);

  // ---------------------------------------------------------------- manifests
  // (local_gm_manifests.cc)

  // Changes when a manifest file is added, removed or edited: names, sizes and mtimes only (the
  // poll runs every few seconds; parsing happens in Load when this changes).
  std::string ManifestSignature();
  bool Load(bool first);
  // Replaces the Secrets with the loaded ones (a Secret of a file with an error keeps its previous
  // version, as objects do) and returns the (namespace, name) of those added, changed or removed.
  std::set<std::pair<std::string, std::string>> UpdateSecrets(
      const std::vector<manifest::Secret>& loaded, const std::set<std::string>& broken);
  // The GM resends its objects periodically, each with the Secret as it is then: objects whose
  // Secret was added, changed or removed (and that Load did not just send) are sent again.
  void ResendForSecrets(const std::set<std::pair<std::string, std::string>>& changed,
                        const std::set<std::string>& sent);
  // Objects the database still has from an earlier run but whose documents are gone were removed
  // while the daemon was stopped: delete them now (the controller reloaded them from SQLite).
  void ForgetStoredObjectsNotInManifests(const std::map<std::string, bool>& seen);
  void SchedulePoll();
};

}  // namespace sedna::app
