// Which of a train round's output models a stage uses (docs/protocol.md §H4.3, v0.7.0
// `getModelFromJobConditions`): the first candidate whose format equals the reference's (exact,
// case-sensitive), except that when the reference lists devices and the candidate names exactly
// one, that device must be in the reference's list. Candidates with 0 or >= 2 devices match on
// format alone. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/resources.h"

namespace sedna::core {

struct ModelChoice {
  std::optional<ModelRef> model;  // unset only when `candidates` is empty
  bool matched = false;           // chosen by the rule; false: the fallback below was used
  std::string note;               // why the fallback was used, naming formats and devices
};

// The §H4.3 rule; when nothing matches, falls back to candidates[fallback_index] (or the last one
// when there are fewer) instead of v0.7.0's nil dereference (upstream [P:U387]), with a note.
ModelChoice SelectModel(const std::vector<ModelRef>& candidates, const ModelRef& reference,
                        size_t fallback_index);

}  // namespace sedna::core
