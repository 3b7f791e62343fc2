// Pass-through objects (passthrough.h).
#include "app/cluster/intake/passthrough.h"

#include "adapters/log/log.h"

#include "adapters/json/envelope.h"
#include "core/resources.h"

namespace sedna::app {

void Passthrough::Upsert(const std::string& key, const json::Decoded<json::OpaqueObject>& object) {
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) {
    return tx.UpsertResource(
        {key, object.type_meta_json, object.object_meta_json, object.spec_json});
  });
  if (!s.ok()) spdlog::error("{}: persisting: {}", key, s.message());
  if (keys_.insert(key).second) spdlog::info("{}: stored (worker messages forwarded)", key);
}

void Passthrough::Delete(const std::string& key) {
  keys_.erase(key);
  (void)ctx_.store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
  spdlog::info("{}: deleted", key);
}

Passthrough::Forward Passthrough::ForwardWorkerMessage(const json::WorkerMessage& m) {
  const auto& rep = m.report;
  const std::string key = core::ResourceKey(rep.ns, rep.owner_kind, rep.owner_name);
  if (!keys_.count(key)) {
    spdlog::warn("worker {}: message for unknown {} dropped", rep.worker_name, key);
    return Forward::kUnknown;
  }
  std::string fwd = json::EncodeFrame({rep.ns, rep.owner_kind, rep.owner_name, "status"},
                                      json::EncodeForwardedWorkerMessage(m));
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) { return Outbox::Append(tx, fwd); });
  if (!s.ok()) {
    spdlog::error("{}: forwarding worker {}: {}", key, rep.worker_name, s.message());
    return Forward::kFailed;
  }
  outbox_.PostPump();
  return Forward::kForwarded;
}

}  // namespace sedna::app
