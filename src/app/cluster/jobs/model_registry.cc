// The model registry (model_registry.h).
#include "app/cluster/jobs/model_registry.h"

#include "adapters/log/log.h"

namespace sedna::app {

void ModelRegistry::Upsert(json::Decoded<core::Model> d, bool persist) {
  const auto& m = d.object;
  const std::string key = core::ResourceKey(m.meta.ns, core::kKindModel, m.meta.name);
  if (persist) {
    Status s = ctx_.store->Transact([&](store::Store::Tx& tx) {
      return tx.UpsertResource({key, d.type_meta_json, d.object_meta_json, d.spec_json});
    });
    if (!s.ok()) spdlog::error("Model {}: persisting: {}", key, s.message());
  }
  const std::string ns = m.meta.ns, name = m.meta.name;
  models_[key] = std::move(d);
  changed_(ns, name);
}

void ModelRegistry::Delete(const std::string& key) {
  models_.erase(key);
  (void)ctx_.store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
}

std::optional<core::ModelRef> ModelRegistry::RefFor(const std::string& ns,
                                                    const std::string& name) const {
  auto it = models_.find(core::ResourceKey(ns, core::kKindModel, name));
  if (it == models_.end()) return std::nullopt;
  const core::ModelSpec& spec = it->second.object.spec;
  return core::ModelRef{spec.format, spec.url, {}, spec.device_soc_versions};
}

}  // namespace sedna::app
