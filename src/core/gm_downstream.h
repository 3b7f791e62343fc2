// Which node receives which object when the GM syncs a job to the edge (syncToEdge), per GM
// generation and with real node names: G1 = upstream 44609f00 (docs/protocol.md §P4.3; for a
// hot-update IL job the Deploy-stage rules of v0.4.3), G2 = v0.5.0-v0.7.0 (docs/protocol.md
// §H1.4 for IL, §H1.7 for LL). Pure: the caller looks up the Dataset and carries the sends out.
//
// A send to node "" is returned like any other: the GM queues it under node name "" and never
// delivers it (§H1.4, messagelayer/ws/context.go), so a caller counts it and delivers nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/gm_conditions.h"

namespace sedna::core::gm {

struct EdgeSend {
  enum class Op { kInsert, kDelete };
  // What is sent: the job itself, or one of the Model CRs it names (initialModel,
  // deploySpec.model, evalSpec.initialEvalModel).
  enum class What { kJob, kInitialModel, kDeployModel, kInitialEvalModel };
  Op op = Op::kInsert;
  std::string node;
  What what = What::kJob;
  bool operator==(const EdgeSend&) const = default;
};
// "insert job -> n1", "delete job -> \"\"", "insert deployModel -> n2".
std::string ToString(const EdgeSend& s);
const char* WhatName(EdgeSend::What w);  // "job", "initialModel", "deployModel", "initialEvalModel"

// The sends of one sync after a job add/update/resync, in the GM's order, for the job's latest
// condition. ds_node = the Dataset's spec.nodeName, nullopt when the GM's Dataset GET fails.
// Node names come from state.annotations (sedna.io/Train|Eval|Deploy); on both generations the
// IL deploy node is read only when sedna.io/model-hot-update-config is present.
// G1 IL never syncs a Deploy-stage job unless it is hot (v0.4); a failed Dataset GET sends nothing
// (G1 returns an error) and, on G2, all but deletes are skipped (there are none on an update).
// G1 LL sends every update to spec.train_spec_node and nothing when that is empty.
std::vector<EdgeSend> SyncSends(const GmJobSpec& spec, const GmJobState& state,
                                const std::optional<std::string>& ds_node);

// The sends when the job CR is deleted: `delete` job to each distinct node of {dsNode, train,
// eval, deploy}. G2 includes "" (a Go set of all four, ds = "" when the GET failed); G1 IL only the
// non-empty ones of {ds, train, eval} (and deploy for a hot job, v0.4), and nothing when the job
// has no conditions or the Dataset GET failed (44609f00 checks both first); G1 LL one delete to the
// train-spec node if non-empty. Go ranges over a map here, so the GM's order is random: this
// returns them sorted by node.
std::vector<EdgeSend> DeleteSends(const GmJobSpec& spec, const GmJobState& state,
                                  const std::optional<std::string>& ds_node);

}  // namespace sedna::core::gm
