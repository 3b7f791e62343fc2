#include "core/gm_downstream.h"

#include <set>

namespace sedna::core::gm {
namespace {

using Op = EdgeSend::Op;
using What = EdgeSend::What;

std::string Annotation(const GmJobState& state, const std::string& key) {
  auto it = state.annotations.find(key);
  return it == state.annotations.end() ? "" : it->second;
}

struct Nodes {
  std::string ds, train, eval, deploy;
};

Nodes NodesOf(const GmJobSpec& spec, const GmJobState& state, const std::string& ds) {
  Nodes n{ds, Annotation(state, StageNodeAnnotation(Stage::kTrain)),
          Annotation(state, StageNodeAnnotation(Stage::kEval)), ""};
  // IL reads the deploy node only for a job carrying the hot-update annotation; LL always.
  if (spec.kind == JobKind::kLifelong || state.annotations.count(kHotUpdateConfigAnnotation)) {
    n.deploy = Annotation(state, StageNodeAnnotation(Stage::kDeploy));
  }
  return n;
}

const std::string& StageNode(const Nodes& n, Stage s) {
  switch (s) {
    case Stage::kTrain:
      return n.train;
    case Stage::kEval:
      return n.eval;
    case Stage::kDeploy:
      return n.deploy;
  }
  return n.train;
}

EdgeSend Insert(const std::string& node, What what = What::kJob) {
  return {Op::kInsert, node, what};
}
EdgeSend Delete(const std::string& node) { return {Op::kDelete, node, What::kJob}; }

// 44609f00 incrementallearning/downstream.go (plus the v0.4.3 Deploy rules for hot jobs).
std::vector<EdgeSend> G1Il(const GmJobSpec& spec, const GmJobState& state, const Nodes& n) {
  const JobCondition& last = state.conditions.back();
  std::string node;
  What model = What::kInitialModel;
  switch (last.stage) {
    case Stage::kTrain:
      node = n.train;
      break;
    case Stage::kEval:
      node = n.eval;
      model = What::kDeployModel;
      break;
    case Stage::kDeploy:
      if (!spec.hot_update) return {};
      node = n.deploy;
      break;
  }
  std::vector<EdgeSend> out;
  switch (last.type) {
    case ConditionType::kWaiting:
      if (last.stage != Stage::kDeploy) out = {Insert(n.ds), Insert(n.ds, model)};
      break;
    case ConditionType::kRunning:
      if (!node.empty()) out.push_back(Insert(node));
      if (last.stage == Stage::kDeploy && n.eval != n.ds) out.push_back(Delete(n.eval));
      break;
    case ConditionType::kCompleted:
    case ConditionType::kFailed:
      if (node != n.ds) out.push_back(Delete(node));
      break;
    default:
      break;
  }
  return out;
}

// v0.7.0 incrementallearning/downstream.go syncToEdge.
std::vector<EdgeSend> G2Il(const GmJobSpec& spec, const GmJobState& state, Nodes n) {
  const JobCondition& last = state.conditions.back();
  std::vector<EdgeSend> out;
  auto delete_unless_resident = [&](const std::string& node) {
    if (node != n.ds && node != n.deploy) out.push_back(Delete(node));
  };
  switch (last.type) {
    case ConditionType::kWaiting:
      switch (last.stage) {
        case Stage::kTrain:
          out = {Insert(n.ds, What::kInitialModel), Insert(n.ds)};
          break;
        case Stage::kEval:
          out.push_back(Insert(n.ds, What::kDeployModel));
          if (spec.has_initial_eval_model) out.push_back(Insert(n.ds, What::kInitialEvalModel));
          out.push_back(Insert(n.ds));
          break;
        case Stage::kDeploy:
          n.deploy = n.eval;
          out.push_back(Insert(n.eval, What::kDeployModel));
          if (spec.has_initial_eval_model && !spec.hot_update) {
            out.push_back(Insert(n.deploy, What::kInitialEvalModel));
          }
          out.push_back(Insert(n.deploy));
          break;
      }
      break;
    case ConditionType::kRunning:
      switch (last.stage) {
        case Stage::kTrain:
          out.push_back(Insert(n.train));
          break;
        case Stage::kEval:
          if (n.train != n.eval && n.train != n.ds) out.push_back(Delete(n.train));
          out.push_back(Insert(n.eval));
          break;
        case Stage::kDeploy:
          if (n.eval != n.deploy && n.eval != n.ds) out.push_back(Delete(n.eval));
          if (spec.has_initial_eval_model) out.push_back(Insert(n.deploy, What::kInitialEvalModel));
          out.push_back(Insert(n.deploy, What::kDeployModel));
          out.push_back(Insert(n.deploy));
          break;
      }
      break;
    case ConditionType::kCompleted:
    case ConditionType::kFailed:
      if (!spec.hot_update) n.deploy = n.eval;
      delete_unless_resident(StageNode(n, last.stage));
      break;
    default:
      break;
  }
  return out;
}

// v0.7.0 lifelonglearning/downstream.go syncToEdge.
std::vector<EdgeSend> G2Ll(const GmJobState& state, const Nodes& n) {
  const JobCondition& last = state.conditions.back();
  const std::string& node = StageNode(n, last.stage);
  switch (last.type) {
    case ConditionType::kWaiting:
      return {Insert(n.ds)};
    case ConditionType::kRunning:
      return {Insert(node)};
    case ConditionType::kCompleted:
    case ConditionType::kFailed:
      if (node != n.ds && node != n.deploy) return {Delete(node)};
      return {};
    default:
      return {};
  }
}

}  // namespace

const char* WhatName(EdgeSend::What w) {
  switch (w) {
    case What::kJob:
      return "job";
    case What::kInitialModel:
      return "initialModel";
    case What::kDeployModel:
      return "deployModel";
    case What::kInitialEvalModel:
      return "initialEvalModel";
  }
  return "job";
}

std::string ToString(const EdgeSend& s) {
  return std::string(s.op == Op::kInsert ? "insert " : "delete ") + WhatName(s.what) + " -> " +
         (s.node.empty() ? std::string("\"\"") : s.node);
}

std::vector<EdgeSend> SyncSends(const GmJobSpec& spec, const GmJobState& state,
                                const std::optional<std::string>& ds_node) {
  const bool g2 = spec.generation == Generation::kG2;
  if (spec.kind == JobKind::kLifelong && !g2) {
    if (spec.train_spec_node.empty()) return {};
    return {Insert(spec.train_spec_node)};
  }
  if (!ds_node || ds_node->empty() || state.conditions.empty()) return {};
  const Nodes n = NodesOf(spec, state, *ds_node);
  if (spec.kind == JobKind::kLifelong) return G2Ll(state, n);
  return g2 ? G2Il(spec, state, n) : G1Il(spec, state, n);
}

std::vector<EdgeSend> DeleteSends(const GmJobSpec& spec, const GmJobState& state,
                                  const std::optional<std::string>& ds_node) {
  const bool g2 = spec.generation == Generation::kG2;
  std::set<std::string> nodes;
  if (spec.kind == JobKind::kLifelong && !g2) {
    if (!spec.train_spec_node.empty()) nodes.insert(spec.train_spec_node);
  } else if (g2) {
    const Nodes n = NodesOf(spec, state, ds_node.value_or(""));
    nodes = {n.ds, n.train, n.eval, n.deploy};
  } else {
    if (!ds_node || state.conditions.empty()) return {};
    const Nodes n = NodesOf(spec, state, *ds_node);
    for (const std::string* v : {&n.ds, &n.train, &n.eval}) {
      if (!v->empty()) nodes.insert(*v);
    }
    if (spec.hot_update && !n.deploy.empty()) nodes.insert(n.deploy);  // v0.4.x
  }
  std::vector<EdgeSend> out;
  out.reserve(nodes.size());
  for (const std::string& node : nodes) out.push_back(Delete(node));
  return out;
}

}  // namespace sedna::core::gm
