// One YAML document to JSON, as Sedna's tooling reads a manifest (sigs.k8s.io/yaml over Go's
// yaml.v2): plain scalars resolved as go-yaml v2 resolves them (null, bool, Go integers with
// 0x/0o/0b/0 prefixes, floats; .inf/.nan are errors, JSON cannot hold them); quoted and block
// scalars are strings; the core-schema tags !!int/!!float/!!bool/!!null force a type, !!binary is
// rejected, other tags leave the text a string; merge keys (<<) are applied. Bounded: nesting
// deeper than 256 or more than 200000 values (alias bombs) is an error. Errors start with
// "line L, column C: " of the offending node.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "adapters/json/go_json.h"
#include "core/status.h"

namespace sedna::manifest {

// With `redact` (a Secret document) errors never quote a scalar's text.
Result<json::RawJson> YamlToJson(const YAML::Node& doc, int line_offset, bool redact);

// "line L, column C" (1-based, in the stream) for a yaml-cpp mark; "" for a null mark.
inline std::string Position(const YAML::Mark& m, int line_offset) {
  if (m.is_null() || m.line < 0 || m.column < 0) return "";
  return "line " + std::to_string(m.line + line_offset + 1) + ", column " +
         std::to_string(m.column + 1);
}

// Position(m) + ": ", or "" for a null mark: the prefix of a message about that place.
inline std::string AtMark(const YAML::Mark& m, int line_offset) {
  std::string p = Position(m, line_offset);
  return p.empty() ? p : p + ": ";
}

}  // namespace sedna::manifest
