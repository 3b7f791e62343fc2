// Pass-through objects: joint-inference services and federated-learning jobs. The LC only stores
// them and forwards their workers' messages upstream (§3.5).
//
// Owns: the keys of the stored objects.
// Calls: the store, the outbox (Append, PostPump), the report intake (a forward commits pending
//   reports first, so the outbox keeps arrival order).
// Called by: the composition root (GM frames, start-up reload), the worker endpoint (Forward).
#pragma once

#include <set>
#include <string>

#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/context.h"
#include "app/cluster/outbox.h"
#include "app/cluster/report_intake.h"

namespace sedna::app {

class Passthrough {
 public:
  Passthrough(Context& ctx, Outbox& outbox, ReportIntake& intake)
      : ctx_(ctx), outbox_(outbox), intake_(intake) {}

  // A stored object, at start-up.
  void Reloaded(const std::string& key) { keys_.insert(key); }
  // From the GM, decoded under the limits every GM object has (json::DecodeOpaqueObject; GmFrames
  // rejects the others): the parts are stored as they are, the key is the frame's.
  void Upsert(const std::string& key, const json::Decoded<json::OpaqueObject>& object);
  void Delete(const std::string& key);

  enum class Forward { kForwarded, kUnknown, kFailed };
  // A worker message for a stored object, forwarded upstream. kFailed: not persisted (the worker
  // is answered 500 and retries).
  Forward ForwardWorkerMessage(const json::WorkerMessage& m);

 private:
  Context& ctx_;
  Outbox& outbox_;
  ReportIntake& intake_;
  std::set<std::string> keys_;
};

}  // namespace sedna::app
