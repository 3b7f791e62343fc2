// Pass-through objects: joint-inference services and federated-learning jobs. The LC only stores
// them and forwards their workers' messages upstream (§P3.5).
//
// Owns: the keys of the stored objects.
// Calls: the store, the outbox (Append, PostPump).
// Called by: GM frames (events of the inbound queue), start-up (reload), the worker endpoint
//   (ForwardWorkerMessage, run as an inbound event: the reports acknowledged before it are
//   committed, so the outbox keeps arrival order).
#pragma once

#include <set>
#include <string>

#include "adapters/json/resource_codec.h"
#include "adapters/json/upstream_codec.h"
#include "app/cluster/context.h"
#include "app/cluster/intake/outbox.h"

namespace sedna::app {

class Passthrough {
 public:
  Passthrough(Context& ctx, Outbox& outbox) : ctx_(ctx), outbox_(outbox) {}

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
  std::set<std::string> keys_;
};

}  // namespace sedna::app
