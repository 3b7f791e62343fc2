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
  core::ModelRef ref{m.spec.format, m.spec.url, {}, m.spec.device_soc_versions};
  models_[key] = Entry{std::move(d), std::move(ref)};
  changed_(ns, name);
}

void ModelRegistry::Delete(const std::string& key) {
  models_.erase(key);
  (void)ctx_.store->Transact([&](store::Store::Tx& tx) { return tx.DeleteResource(key); });
}

const core::ModelRef* ModelRegistry::RefFor(const std::string& ns, const std::string& name) const {
  auto it = models_.find(core::ResourceKeyInto(key_, ns, core::kKindModel, name));
  return it == models_.end() ? nullptr : &it->second.ref;
}

}  // namespace sedna::app
