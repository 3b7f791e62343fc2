// Pass-through objects (passthrough.h).
#include "app/cluster/passthrough.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "adapters/json/envelope.h"
#include "core/resources.h"

namespace sedna::app {

void Passthrough::Upsert(const std::string& key, const std::string& content) {
  auto j = nlohmann::json::parse(content, nullptr, false);
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object()) {
    spdlog::error("GM object {} rejected: {}", key, "expected an object with metadata");
    ctx_.metrics.rejected_objects++;
    return;
  }
  nlohmann::json type_meta{{"kind", j.value("kind", "")},
                           {"apiVersion", j.value("apiVersion", "")}};
  nlohmann::json meta = j["metadata"];
  if (meta.contains("annotations") && meta["annotations"].is_object()) {
    meta["annotations"].erase(core::kCredentialAnnotation);  // B23: never persisted
  }
  const std::string spec = j.contains("spec") ? j["spec"].dump() : "{}";
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) {
    return tx.UpsertResource({key, type_meta.dump(), meta.dump(), spec});
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
  if (!intake_.Flush()) return Forward::kFailed;  // the outbox keeps arrival order
  Status s = ctx_.store->Transact([&](store::Store::Tx& tx) { return Outbox::Append(tx, fwd); });
  if (!s.ok()) {
    spdlog::error("{}: forwarding worker {}: {}", key, rep.worker_name, s.message());
    return Forward::kFailed;
  }
  outbox_.PostPump();
  return Forward::kForwarded;
}

}  // namespace sedna::app
