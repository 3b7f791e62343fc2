// Internal to sedna_json: the RawJson tree node and helpers shared by go_json.cc (tree, dump),
// json_parser.cc (RawJson::Parse) and the codecs. Not part of the module's API.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/json/go_json.h"
#include "core/status.h"

namespace sedna::json {

struct RawJson::Node {
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;               // string value or number text
  std::vector<RawJson> values;    // array elements / object member values
  std::vector<std::string> keys;  // object member keys, parallel to values

  Node() = default;
  explicit Node(Type t) : type(t) {}
  Node(Type t, std::string_view s) : type(t), text(s) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases descendants with recursion at most 64 deep (see go_json.cc).
  ~Node();
};

class RawJsonAccess {
 public:
  static const std::shared_ptr<RawJson::Node>& node(const RawJson& j) { return j.node_; }
  static RawJson Make(std::shared_ptr<RawJson::Node> n) { return RawJson(std::move(n)); }
};

namespace internal {

inline std::shared_ptr<RawJson::Node> NewNode(RawJson::Type t) {
  return std::make_shared<RawJson::Node>(t);
}
// A string or number node.
inline std::shared_ptr<RawJson::Node> NewNode(RawJson::Type t, std::string_view text) {
  return std::make_shared<RawJson::Node>(t, text);
}

// True when `s` matches the JSON number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
bool IsJsonNumber(std::string_view s);

// Decimal exponent of the leading significant digit of a valid JSON number ("0.0012e3" -> 0,
// "250" -> 2), saturating; very negative for zero.
long long LeadingExponent(std::string_view s);

// Appends v.Dump() to `out` (no intermediate string).
void AppendDump(const RawJson& v, std::string& out);

}  // namespace internal
}  // namespace sedna::json
