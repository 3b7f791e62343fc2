// The model registry: every Model the GM sent, for the IL jobs that name it (initialModel,
// deploySpec.model).
//
// Owns: the Models.
// Calls: the store.
// Called by: GM frames (events of the inbound queue), start-up (reload); the job runner (RefFor).
// Emits: changed(ns, name) after an update (the job runner steps the jobs that name it).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "adapters/json/resource_codec.h"
#include "app/cluster/context.h"
#include "core/resources.h"

namespace sedna::app {

class ModelRegistry {
 public:
  using Changed = std::function<void(const std::string& ns, const std::string& name)>;
  ModelRegistry(Context& ctx, Changed changed) : ctx_(ctx), changed_(std::move(changed)) {}

  void Upsert(json::Decoded<core::Model> d, bool persist);
  void Delete(const std::string& key);
  // The Model <ns>/<name> as a job refers to it ({format, url, devices = device_soc_versions}), or
  // null. Valid until the next Upsert or Delete (a job's Spec is built for one step).
  const core::ModelRef* RefFor(const std::string& ns, const std::string& name) const;

 private:
  struct Entry {
    json::Decoded<core::Model> model;
    core::ModelRef ref;  // RefFor's answer, made once per Upsert
  };
  Context& ctx_;
  Changed changed_;
  std::map<std::string, Entry> models_;
  mutable std::string key_;  // RefFor's lookup key (core::ResourceKeyInto)
};

}  // namespace sedna::app
