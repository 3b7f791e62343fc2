// A test GM: a real websocket server on 127.0.0.1 (WsTestServer) that sends Sedna objects as the
// GM does (docs/protocol.md §P1.5, §P4.3; docs/protocol.md §H1.4, §H1.7 for G2) and keeps IL/LL
// job conditions with the GM's condition machine (core::gm, per generation). The test thread
// drives it step by step, so every assertion sees a deterministic sequence.
//
// Modes, all off by default (G1, one LC, no race), so tests written before them are unchanged:
// * generation: GmJob(kind, object, Generation::kG2) settles and routes as a v0.5-v0.7 GM;
// * multi-node: GmEmulator::SetMultiNode(true) keeps one connection per Node-Name and Sync
//   delivers each send to its node's connection (a send to "" or to a node with no connection is
//   kept in undelivered());
// * [P:R1] race (§H2.0): GmJob::EnableR1(lag) lands each controller status write `lag` after the
// sync
//   that computed it, over whatever the LC appended meanwhile;
// * informer lag: every job object Sync sent is kept (sent_jobs()); SendStale re-sends one of
//   them later, as a GM whose informer cache is behind sends an object computed from an older
//   status (Reindexed: with the conditions a later status write erased, or without the ones it
//   erased, so the same round shows at other condition indexes).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/json/envelope.h"
#include "core/gm_conditions.h"
#include "core/gm_downstream.h"
#include "ws_test_server.h"

namespace sedna::testing {

namespace wire = sedna::json;
using Json = nlohmann::json;
using GmClock = std::chrono::steady_clock;

// The node of the emulator's default Dataset and of the single LC (objects.h, cluster_fixture).
inline constexpr const char* kDefaultNode = "edge-node";

struct UpstreamFrame {
  wire::MessageHeader header;
  std::string content;                            // decoded JSON text
  nlohmann::json body;                            // parsed content
  std::string raw;                                // the frame as received
  std::string node;                               // Node-Name of the connection it came on
  GmClock::time_point received = GmClock::now();  // when the server read it
};

class GmJob;

// A GM send that found no connection: to node "" (the GM never delivers those) or to a node
// with no LC connected.
struct Undelivered {
  std::string node;
  std::string op;    // insert | delete
  std::string kind;  // lower-case resourceKind
  std::string name;
};

class GmEmulator {
 public:
  explicit GmEmulator(uint16_t port = 0);  // 0: an ephemeral port
  WsTestServer& server() { return *server_; }
  std::string address() const { return server_->address(); }

  // Sends {"header":{ns,kind(lower),name,op},"content":base64(obj)} to the current (last
  // connected) LC; throws when none is connected.
  void Send(const std::string& op, const nlohmann::json& obj);

  // Multi-node mode (set before LCs connect): one connection per Node-Name at once.
  void SetMultiNode(bool on) { server_->SetMultiNode(on); }
  bool WaitForNode(const std::string& node,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    return server_->WaitForNode(node, timeout);
  }
  // Sends to the connection of `node`; false (and recorded in undelivered()) when the node is ""
  // or has no connection. In single-node mode the current connection counts only if its
  // Node-Name is `node`.
  bool SendTo(const std::string& node, const std::string& op, const nlohmann::json& obj);
  const std::vector<Undelivered>& undelivered() const { return undelivered_; }

  // Informer lag: the job objects Sync sent, oldest first.
  struct SentJob {
    GmClock::time_point at;
    std::string node;
    std::string name;  // metadata.name
    nlohmann::json object;
  };
  const std::vector<SentJob>& sent_jobs() const { return sent_jobs_; }
  // The latest job object sent to `node` at least `age` ago whose last condition is `last`
  // ("Deploy/Waiting"); nullptr for none.
  const nlohmann::json* SentBefore(
      const std::string& node, const std::string& last,
      std::chrono::milliseconds age = std::chrono::milliseconds(0)) const;
  // Re-sends `object` (an older one, possibly Reindexed) to `node`, as a lagging informer does.
  bool SendStale(const std::string& node, const nlohmann::json& object) {
    return SendTo(node, "insert", object);
  }
  // `object` with condition `at` of status.conditions duplicated (shift > 0: a condition a later
  // status write erased still shows) or removed (shift < 0: a condition the LC appended already
  // erased); with erase_output, the (Eval, Completed) conditions lose their data (the GM's
  // pod-driven condition replaced the LC's forwarded report, §H2.0).
  static nlohmann::json Reindexed(nlohmann::json object, size_t at, int shift, bool erase_output);

  // Carries out the job's SyncSends (or DeleteSends for `deleted`): the job object or the Model
  // the send names (GmJob::SetModel; a Model not set is skipped, as the GM's failed GET) to each
  // send's node. Returns the sends computed (delivered or not).
  std::vector<core::gm::EdgeSend> Sync(const GmJob& job, bool deleted = false);

  // Next upstream frame of the given object kind ("Dataset", "IncrementalLearningJob"); frames
  // of other kinds that arrive meanwhile are kept for their own Next calls. The bare header
  // frame of a (re)connection is recorded in bare_headers and skipped.
  std::optional<UpstreamFrame> Next(const std::string& kind,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(20));
  int bare_headers() const { return bare_headers_; }

  // Next, for a job in [P:R1] mode: while waiting, lands the job's status writes that fall due and
  // Syncs the job after each one (the GM's update event). A frame received before a write's due
  // time is returned first: Report it (at its receive time) and it is erased by that write.
  std::optional<UpstreamFrame> NextFor(
      GmJob& job, const std::string& kind,
      std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // The GM's loop for one job until done(job) holds (checked after every step) or timeout:
  // every upstream frame of the job's kind and name is Reported (at its receive time) and
  // on_frame(frame) is called, [P:R1] writes land when due, and the job is Synced after every
  // change. Pods the GM creates start Running on their placed node when run_created_pods is set
  // (workers still report through the LC: the test POSTs them, e.g. from on_frame). Returns
  // done(job) at the end.
  struct RunOptions {
    std::chrono::milliseconds timeout = std::chrono::seconds(30);
    bool run_created_pods = true;
    std::function<void(const UpstreamFrame&)> on_frame;
  };
  bool RunUntil(GmJob& job, const std::function<bool(const GmJob&)>& done, RunOptions opts);
  bool RunUntil(GmJob& job, const std::function<bool(const GmJob&)>& done) {
    return RunUntil(job, done, RunOptions{});
  }

 private:
  std::unique_ptr<WsTestServer> server_;
  std::vector<UpstreamFrame> pending_;
  std::vector<Undelivered> undelivered_;
  std::vector<SentJob> sent_jobs_;
  int bare_headers_ = 0;
};

// One job's GM-side record: the object without status, the status as stored in the API server,
// the GM's own annotations, and the job's pods with the node each worker type runs on.
class GmJob {
 public:
  // G1 unless told otherwise. The spec the GM reads (hot update, initialEvalModel, train-spec
  // node) and the hot-update config path come from `object`. Pods are placed on their template's
  // spec.nodeName in G2; in G1 they have no node unless Place()d (so the job objects existing G1
  // tests send carry no sedna.io/<Stage> annotation). The first sync runs at once.
  GmJob(core::gm::JobKind kind, nlohmann::json object,
        core::gm::Generation generation = core::gm::Generation::kG1);

  // Applies an LC "status" content (§P4.1) and settles the job (§P4.2). Returns the actions taken.
  // In [P:R1] mode: lands the writes due by `at`, appends the report (the GM's fresh GET + append)
  // and starts a sync if none is in flight; returns the actions of the syncs run.
  std::vector<core::gm::GmAction> Report(const std::string& content);
  std::vector<core::gm::GmAction> Report(const std::string& content, GmClock::time_point at);
  std::vector<core::gm::GmAction> Report(const UpstreamFrame& f) {
    return Report(f.content, f.received);
  }
  // Changes the newest pod of a stage and settles ([P:R1]: a pod event's sync, at `at`).
  std::vector<core::gm::GmAction> SetPod(core::Stage stage, core::gm::PodPhase phase);
  std::vector<core::gm::GmAction> SetPod(core::Stage stage, core::gm::PodPhase phase,
                                         GmClock::time_point at);
  std::vector<core::gm::GmAction> Settle();
  // Where pods of `stage`'s worker type run from now on (the inference pod for kDeploy).
  void Place(core::Stage stage, const std::string& node);
  // The hot-update annotation the GM sets (a hot job's own path unless a test names another).
  // Also replaces the annotation already set at the job's start.
  void SetHotUpdateConfig(const std::string& path) {
    spec_.hot_update_config = path;
    if (state_.annotations.count(core::kHotUpdateConfigAnnotation)) {
      state_.annotations[core::kHotUpdateConfigAnnotation] = path;
    }
  }

  // The GM generation; switching mid-job models a GM upgrade/downgrade (§H3.3; reconnect the LCs
  // with WsTestServer::DropConnection/DropNode to complete the picture).
  core::gm::Generation generation() const { return spec_.generation; }
  void SetGeneration(core::gm::Generation g) { spec_.generation = g; }
  const core::gm::GmJobSpec& spec() const { return spec_; }

  // Downstream inputs: the Dataset's nodeName (nullopt: the GM's Dataset GET fails) and the
  // Model CRs the job names, by what a send calls them.
  void SetDatasetNode(std::optional<std::string> node) { ds_node_ = std::move(node); }
  const std::optional<std::string>& dataset_node() const { return ds_node_; }
  void SetModel(core::gm::EdgeSend::What what, nlohmann::json model);
  const nlohmann::json* ModelFor(core::gm::EdgeSend::What what) const;
  std::vector<core::gm::EdgeSend> Sends() const;        // SyncSends of the stored state
  std::vector<core::gm::EdgeSend> DeleteSends() const;  // when the CR is deleted

  // [P:R1] race mode (§H2.0). A sync (started by a job update or a pod event) computes from the
  // stored status at its start, creates pods and patches annotations then, and its status write
  // (`newJob.Status = job.Status`) lands `lag` later, erasing every condition appended in
  // between. Syncs are serialised (the GM's work queue): updates during one start one more sync
  // when it lands. Times are the callers' (frame receive times, or explicit), never the
  // test thread's scheduling. lag 0 turns it off (immediate settling, as before).
  void EnableR1(std::chrono::milliseconds lag);
  bool r1() const { return lag_.count() > 0; }
  // Lands the writes due by `t` (and runs the syncs they trigger); returns their actions.
  std::vector<core::gm::GmAction> AdvanceTo(GmClock::time_point t);
  std::optional<GmClock::time_point> next_write() const;  // when the in-flight write lands
  // Conditions erased by [P:R1] writes so far, oldest first.
  const std::vector<core::JobCondition>& erased() const { return erased_; }

  const std::string& name() const;       // metadata.name
  const std::string& kind_name() const;  // "IncrementalLearningJob" | "LifelongLearningJob"
  // With status.conditions and the GM's annotations; for LL on G2 also status.knowledgeBase
  // (v0.6+, §H4.4: from the output models of the latest LC message that had any; zeros before).
  nlohmann::json Object() const;
  // LL on G2 (§H4.4): the train pod's HAS_COMPLETED_INITIAL_TRAINING ("true" iff any
  // (Train, Completed) exists) and, when true, CLOUD_KB_INDEX (url of output.models[0] of the
  // latest (Train, Completed) with output). Empty for IL and for G1.
  std::map<std::string, std::string> TrainPodEnv() const;
  const core::gm::GmJobState& state() const { return state_; }
  const core::gm::Pods& pods() const { return pods_; }
  std::string LastCondition() const;            // "Train/Waiting"
  std::vector<std::string> Conditions() const;  // every condition as "Stage/Type", oldest first
  core::gm::Downstream Downstream() const;      // G1 single node (standalone DownstreamFor)

 private:
  struct PendingWrite {
    core::gm::GmJobState written;  // the status it writes
    GmClock::time_point lands;
  };
  void RunDue(GmClock::time_point t, std::vector<core::gm::GmAction>& actions);
  void StartSync(GmClock::time_point at, std::vector<core::gm::GmAction>& actions);
  void Land(std::vector<core::gm::GmAction>& actions);

  core::gm::JobKind kind_;
  nlohmann::json object_;
  std::string kind_name_, name_;
  core::gm::GmJobSpec spec_;
  core::gm::GmJobState state_;
  core::gm::Pods pods_;
  std::optional<std::string> ds_node_ = std::string(kDefaultNode);
  std::map<core::gm::EdgeSend::What, nlohmann::json> models_;
  int clock_ = 0;
  std::chrono::milliseconds lag_{0};
  std::optional<PendingWrite> in_flight_;
  std::vector<core::JobCondition> erased_;
  nlohmann::json knowledge_base_;  // LL G2: status.knowledgeBase
};

std::string Rfc3339(int seconds_since_2021);

}  // namespace sedna::testing
