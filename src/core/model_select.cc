#include "core/model_select.h"

#include <algorithm>

namespace sedna::core {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s + "]";
}

std::string Describe(const ModelRef& m) {
  return "{format \"" + m.format + "\"" +
         (m.devices.empty() ? "" : ", devices " + Join(m.devices)) + "}";
}

bool Matches(const ModelRef& candidate, const ModelRef& reference) {
  if (candidate.format != reference.format) return false;
  if (reference.devices.empty() || candidate.devices.size() != 1) return true;
  return std::find(reference.devices.begin(), reference.devices.end(), candidate.devices[0]) !=
         reference.devices.end();
}

}  // namespace

ModelChoice SelectModel(const std::vector<ModelRef>& candidates, const ModelRef& reference,
                        size_t fallback_index) {
  ModelChoice c;
  for (const auto& m : candidates) {
    if (Matches(m, reference)) {
      c.model = m;
      c.matched = true;
      return c;
    }
  }
  if (candidates.empty()) {
    c.note = "no output models";
    return c;
  }
  const size_t i = std::min(fallback_index, candidates.size() - 1);
  c.model = candidates[i];
  std::string have;
  for (const auto& m : candidates) have += (have.empty() ? "" : ", ") + Describe(m);
  c.note = "no output model matches " + Describe(reference) + " (have " + have +
           "); using models[" + std::to_string(i) + "]";
  return c;
}

}  // namespace sedna::core
