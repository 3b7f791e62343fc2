// LocalGm::Impl, the GM's view of a job: the generation played, model hot update and the node
// everything runs on (docs/protocol.md §H1.3, §H1.4, §H4.1).
#include "adapters/log/log.h"

#include "app/standalone/local_gm_impl.h"
#include "core/ascii.h"

namespace sedna::app {

using NJ = nlohmann::json;
using local_gm_detail::Find;
using local_gm_detail::kStandaloneNode;

namespace local_gm_detail {

const NJ* Find(const NJ& o, std::initializer_list<const char*> path) {
  const NJ* at = &o;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

}  // namespace local_gm_detail

namespace {

std::string StringAt(const NJ& o, std::initializer_list<const char*> path) {
  const NJ* v = Find(o, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

std::string LocalGm::Impl::HotUpdateConfig(const GmJob& j) const {
  // The GM lower-cases the whole host path; here only the part it builds from the job (the data
  // directory is the user's and may have capitals).
  return opt.hot_update_dir + "/" +
         core::AsciiLowered(j.ns + "/" + core::kKindIlJob + "/" + j.name) + "/model_config.json";
}

core::gm::GmJobSpec LocalGm::Impl::SpecOf(GmJob& j) {
  core::gm::GmJobSpec s;
  s.kind = j.gm_kind;
  s.generation = generation;
  const NJ& o = j.object;
  if (j.gm_kind == core::gm::JobKind::kIncremental) {
    const NJ* hot = Find(o, {"spec", "deploySpec", "model", "hotUpdateEnabled"});
    const bool wanted = hot && hot->is_boolean() && hot->get<bool>();
    if (wanted && generation == core::gm::Generation::kG2) {
      s.hot_update = true;
      s.hot_update_config = HotUpdateConfig(j);
    } else if (wanted && !j.warned_g1_hot) {
      j.warned_g1_hot = true;
      spdlog::warn(
          "standalone: {}: spec.deploySpec.model.hotUpdateEnabled is ignored with --gm-protocol g1 "
          "(the 2021 GM has no model hot update): the inference worker is restarted on each "
          "deploy",
          j.key);
    }
    s.has_initial_eval_model =
        !StringAt(o, {"spec", "evalSpec", "initialEvalModel", "name"}).empty();
  } else {
    s.train_spec_node = StringAt(o, {"spec", "trainSpec", "template", "spec", "nodeName"});
  }
  return s;
}

std::string LocalGm::Impl::DatasetNode(const GmJob& j) {
  const std::string ds = StringAt(j.object, {"spec", "dataset", "name"});
  auto it = plain.find(core::ResourceKey(j.ns, core::kKindDataset, ds));
  if (it == plain.end()) return kStandaloneNode;
  const std::string node = StringAt(NJ::parse(it->second, nullptr, false), {"spec", "nodeName"});
  return node.empty() ? std::string(kStandaloneNode) : node;
}

void LocalGm::Impl::ApplySpec(GmJob& j) {
  j.gm_spec = SpecOf(j);
  if (j.gm_spec.hot_update && j.state.started) {
    auto& a = j.state.annotations[core::kHotUpdateConfigAnnotation];
    if (a != j.gm_spec.hot_update_config) {
      spdlog::info("standalone: {}: annotation {} = {} (model hot update)", j.key,
                   core::kHotUpdateConfigAnnotation, j.gm_spec.hot_update_config);
      a = j.gm_spec.hot_update_config;
      Persist(j);
    }
  }
  if (j.inference_id >= 0 && j.inference_hot != j.gm_spec.hot_update) {
    spdlog::info("standalone: {}: model hot update turned {}; restarting the inference worker",
                 j.key, j.gm_spec.hot_update ? "on" : "off");
    StartInference(j);
  }
}

}  // namespace sedna::app
