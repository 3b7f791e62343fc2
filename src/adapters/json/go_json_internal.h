// Internal to sedna_json: the RawJson tree's storage and helpers shared by go_json.cc (tree, dump),
// json_parser.cc (RawJson::Parse) and the codecs. Not part of the module's API.
//
// A tree is one or more documents (Doc). A parsed document holds all its values in one block:
// its nodes, the children of all its containers (each container's contiguous) and its object
// keys (views), and one copy of the parsed text that holds every string, key and number text
// (each escaped string decoded over its own escaped bytes, which are never fewer), so a parse
// allocates a handful of blocks whatever the number of values. A child handle
// inside a document points into the same document without owning it (a shared_ptr with no control
// block): copying such a handle out (RawJson's copy) takes a share of the document instead, so a
// copy of a child keeps its whole document alive. Built values (RawJson::Array, ...) are documents
// of one node whose children are owning handles to other documents.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
  bool has_double = false;  // numbers: `number` is the text's float64 (AsDouble), found at parse
  double number = 0;
  uint32_t first = 0;      // containers: the first child in doc->kids
  uint32_t count = 0;      // containers: the number of children
  uint32_t key_first = 0;  // objects: the first key in doc->keys (parallel to the children)
  // A string's decoded bytes or a number's text, in its document's text block (parsed) or
  // owned_text (built).
  const char* text_data = "";
  size_t text_size = 0;
  Doc* doc = nullptr;  // the document this node is in

  std::string_view text() const { return {text_data, text_size}; }
  const RawJson& child(size_t i) const;
  std::string_view key(size_t i) const;
};

struct RawJson::Doc : std::enable_shared_from_this<RawJson::Doc> {
  std::vector<Node> nodes;    // a parsed document's values, children before their container
  Node single;                // a built value's node (nodes is then empty)
  std::vector<RawJson> kids;  // the containers' children, each container's contiguous
  // The objects' member keys, each object's contiguous: views into `text` (parsed) or
  // `owned_keys` (built).
  std::vector<std::string_view> keys;
  // A parsed document's strings, keys and number texts: a copy of the parsed text in which each
  // string with escapes is overwritten, from its first byte, by its decoded bytes (never longer).
  std::unique_ptr<char[]> text;
  size_t text_capacity = 0;             // bytes at `text` (a kept document's is reused)
  std::string owned_text;               // a built string's or number's text
  std::vector<std::string> owned_keys;  // a built object's keys

  Doc() = default;
  Doc(const Doc&) = delete;
  Doc& operator=(const Doc&) = delete;
  // Releases documents owned through `kids` with recursion at most 64 deep (see go_json.cc).
  ~Doc();
};

inline const RawJson& RawJson::Node::child(size_t i) const { return doc->kids[first + i]; }
inline std::string_view RawJson::Node::key(size_t i) const { return doc->keys[key_first + i]; }

class RawJsonAccess {
 public:
  static const RawJson::Node* node(const RawJson& j) { return j.node_.get(); }
  // An owning handle to `n`, a node of the document `doc` owns.
  static RawJson Own(const std::shared_ptr<RawJson::Doc>& doc, RawJson::Node* n) {
    return RawJson(std::shared_ptr<RawJson::Node>(doc, n));
  }
  // A handle to `n` that does not own its document: only for a child stored in that document.
  static RawJson Borrow(RawJson::Node* n) {
    return RawJson(std::shared_ptr<RawJson::Node>(std::shared_ptr<RawJson::Node>(), n));
  }
};

namespace internal {

// Word-at-a-time tests on the 8 bytes of `w` (the classic bit tricks, exact for "some byte"):
// nonzero when some byte is >= 0x80, below `n` (n <= 0x80), or equal to `c`.
inline constexpr uint64_t kByteOnes = 0x0101010101010101ull;
inline constexpr uint64_t kByteHighs = 0x8080808080808080ull;
inline uint64_t AnyHighByte(uint64_t w) { return w & kByteHighs; }
inline uint64_t AnyByteBelow(uint64_t w, unsigned char n) {
  return (w - kByteOnes * n) & ~w & kByteHighs;
}
inline uint64_t AnyByteIs(uint64_t w, unsigned char c) {
  return AnyByteBelow(w ^ (kByteOnes * c), 1);
}

// A built document of one node of type `t` with `text` (owned_text), returned as an owning
// handle's node.
std::pair<std::shared_ptr<RawJson::Doc>, RawJson::Node*> NewSingle(RawJson::Type t,
                                                                   std::string text = {});

// The float64 of a short decimal number text (at most 15 significant digits, no exponent, at
// most 22 after the point), exactly strtod's; nullopt for any other text (take the general path).
std::optional<double> FastDecimal(std::string_view s);

// True when `s` matches the JSON number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
bool IsJsonNumber(std::string_view s);

// Decimal exponent of the leading significant digit of a valid JSON number ("0.0012e3" -> 0,
// "250" -> 2), saturating; very negative for zero.
long long LeadingExponent(std::string_view s);

// Go's utf8.DecodeRuneInString: (rune, size) for a valid sequence at s[i] (i < s.size()), (-1, 1)
// otherwise (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF).
std::pair<int32_t, int> DecodeRune(std::string_view s, size_t i);

// Appends v.Dump() to `out` (no intermediate string).
void AppendDump(const RawJson& v, std::string& out);

}  // namespace internal
}  // namespace sedna::json
