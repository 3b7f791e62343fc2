// GM frames: decodes each GM→LC frame (§P3) and routes it to the part that owns its object; on
// start-up, rebuilds the same parts from the store alone (no GM resync needed).
//
// Owns: the resource kinds already warned about, each job's last decode warnings (logged when
//   they change, not on every resync), and the GM evidence of this connection.
// Calls: the inbound queue (each frame is one of its events, applied once the reports
//   acknowledged before it are committed); then the dataset and model registries, the job runner,
//   the pass-through objects (Upsert, Delete); the store (Reload reads the stored objects).
// Called by: the GM link (OnFrame, on the loop thread), standalone mode's local manager, and the
//   composition root at start-up (Reload).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "app/cluster/context.h"
#include "app/cluster/datasets/dataset_registry.h"
#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/gm_evidence.h"
#include "app/cluster/intake/passthrough.h"
#include "app/cluster/jobs/job_runner.h"
#include "app/cluster/jobs/model_registry.h"

namespace sedna::app {

class GmFrames {
 public:
  GmFrames(Context& ctx, InboundQueue& inbound, DatasetRegistry& datasets, ModelRegistry& models,
           JobRunner& jobs, Passthrough& passthrough)
      : ctx_(ctx),
        inbound_(inbound),
        datasets_(datasets),
        models_(models),
        jobs_(jobs),
        passthrough_(passthrough) {}

  // One frame, applied as an event of the inbound queue (at once unless reports that cannot be
  // committed yet were acknowledged before it). A frame that cannot be decoded, or an object that
  // is invalid, is logged naming the object and the field, and counted; nothing else changes.
  void OnFrame(const std::string& text);
  // Every stored Dataset, Model, pass-through object and job, in that order (jobs resume under
  // their stored objects and status).
  Status Reload();
  // The GM link's (re)connection and loss: the evidence is per connection.
  void OnGmConnected() { evidence_.OnConnected(); }
  void OnGmDisconnected() { evidence_.OnDisconnected(); }
  const GmEvidence& evidence() const { return evidence_; }

 private:
  void Apply(const std::string& text);
  void Reject(const std::string& key, const std::string& msg);
  // Logs a decoded job's warnings (what was ignored in it) unless they are the ones last logged
  // for `key`.
  void Warn(const std::string& key, const std::vector<std::string>& warnings);

  Context& ctx_;
  InboundQueue& inbound_;
  DatasetRegistry& datasets_;
  ModelRegistry& models_;
  JobRunner& jobs_;
  Passthrough& passthrough_;
  std::set<std::string> warned_kinds_;
  std::map<std::string, std::vector<std::string>> warned_jobs_;
  GmEvidence evidence_;
};

}  // namespace sedna::app
