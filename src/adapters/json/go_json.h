// Go encoding/json compatible output, and a JSON tree that keeps number text exactly as received
// (Go's json.Number / Decoder.UseNumber), so that messages can be re-marshalled byte-for-byte as
// the Go LC and GM would (docs/protocol.md §P1.3, §P3.3-§P3.5, §P4.1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace sedna::json {

// Appends `s` as a quoted JSON string exactly as Go's json.Marshal writes it (HTML-safe):
// `"` `\` -> `\"` `\\`; \n \r \t -> `\n` `\r` `\t`; other bytes < 0x20 -> `\u00XX` (lower-case
// hex, so \b and \f too, as in go1.19); `<` `>` `&` -> `\u003c` `\u003e` `\u0026`; U+2028, U+2029
// ->
// `\u2028` `\u2029`; every byte that does not start a valid UTF-8 sequence -> `\ufffd`. All other
// bytes, including valid multi-byte UTF-8 and 0x7f, are copied verbatim.
void AppendGoString(std::string& out, std::string_view s);
// AppendGoString into a fresh string.
std::string GoString(std::string_view s);

// How Go's encoding/json prints a float64: the shortest text that round-trips, in plain decimal
// notation ("0.7", "500", "100000000000000000000") when 1e-6 <= |v| < 1e21 or v == 0, otherwise
// in exponent form with Go's clean-up of a single-digit negative exponent ("1e-7", "1.5e-10",
// "1e+21"). Negative zero prints as "-0". Go refuses to marshal NaN and ±Inf; this returns "null"
// for them.
std::string FormatGoFloat(double v);

// An immutable JSON value. Numbers keep their source text (so `0.70` stays `0.70`), object
// members keep their source order and duplicates. Copies share the tree (cheap, thread-safe to
// read concurrently); a copy of a value inside a parsed document shares that whole document. A
// parse stores the document's values in a few blocks, not one allocation per value, and its
// strings, keys and number texts in one copy of the parsed text (so the accessors return views
// into the document, and a parse copies no value on its own). Destruction
// (past 64 levels) and dumping are iterative, so depth is bounded only by memory and by Parse's
// kMaxDepth.
class RawJson {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  // Same limit as Go's decoder (maxNestingDepth): 10000 nested arrays/objects parse, 10001 fail.
  static constexpr size_t kMaxDepth = 10000;

  RawJson();  // null
  RawJson(const RawJson& other);
  RawJson& operator=(const RawJson& other);
  RawJson(RawJson&& other) noexcept = default;
  RawJson& operator=(RawJson&& other) noexcept = default;

  // Strict RFC 8259 JSON (one value, surrounding whitespace allowed). Accepts \uXXXX escapes
  // including surrogate pairs; rejects invalid UTF-8, lone surrogates, numbers that overflow a
  // float64, and nesting deeper than kMaxDepth. A UTF-8 byte order mark at the start is skipped.
  // Syntax errors read "invalid JSON: parse error at line L, column C: ..." (nlohmann's wording,
  // kept when this parser replaced nlohmann's). Never throws.
  static Result<RawJson> Parse(std::string_view text);
  // As Parse, and fails with "invalid JSON: more than <max_values> values" as soon as the
  // document's values (scalars and containers, at any depth, the root included) outnumber
  // `max_values`: a tree costs ~150 bytes a value whatever the value's size ("0," is 2 bytes),
  // so this bounds the memory and time of a parse of hostile input.
  static Result<RawJson> Parse(std::string_view text, size_t max_values);
  // As Parse(text, *value_budget), and takes the values parsed off *value_budget (to 0 on that
  // error), so that several documents can share one budget.
  static Result<RawJson> Parse(std::string_view text, size_t* value_budget);

  static RawJson Null();
  static RawJson Bool(bool v);
  static RawJson String(std::string v);
  // Number with text FormatGoFloat(v) (null for non-finite v).
  static RawJson Number(double v);
  static RawJson Integer(int64_t v);
  // Number with the given text, which must be a JSON number.
  static Result<RawJson> NumberText(std::string_view text);
  static RawJson Array(std::vector<RawJson> elements);
  static RawJson Object(std::vector<std::pair<std::string, RawJson>> members);

  Type type() const;
  // "null", "boolean", "number", "string", "array" or "object".
  const char* type_name() const;
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_number() const { return type() == Type::kNumber; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Views into the document, valid while a handle to it (this value, or any other value of the
  // same document) lives.
  bool bool_value() const;                // false unless a boolean
  std::string_view string_value() const;  // decoded UTF-8; "" unless a string
  std::string_view number_text() const;   // source text; "" unless a number
  // The number as a float64, as Go's strconv.ParseFloat: magnitudes below the smallest
  // subnormal become ±0, overflow is an error. Error when not a number.
  Result<double> AsDouble() const;
  // The number as Go decodes it into an int64 field: integer text only (no fraction or
  // exponent), within range. Error otherwise.
  Result<int64_t> AsInt64() const;

  // Number of array elements or object members (duplicates included); 0 for scalars.
  size_t size() const;
  // Array element i, or the value of object member i (document order). Requires i < size().
  const RawJson& operator[](size_t i) const;
  // Key of object member i ("" unless is_object() and i < size()); a view as string_value().
  std::string_view key(size_t i) const;
  // The value of the LAST member named `key` (Go's rule for duplicate keys); nullptr when this
  // is not an object or has no such member.
  const RawJson* Find(std::string_view key) const;

  // Compact output as Go marshals the value decoded into interface{} with UseNumber: object
  // keys sorted bytewise with duplicates collapsed to the last one, strings via AppendGoString,
  // numbers verbatim.
  std::string Dump() const;
  // Compact output in source order, duplicates kept, strings via AppendGoString, numbers
  // verbatim. For a Go-marshalled input this reproduces the input minus insignificant space.
  std::string DumpInOrder() const;
  // As Dump(), but numbers re-printed as Go does after decoding WITHOUT UseNumber (float64,
  // FormatGoFloat): `0.70` -> `0.7`, `1e2` -> `100`. Error when a number does not fit a float64.
  Result<std::string> DumpAsFloat64() const;

  struct Node;  // implementation detail
  struct Doc;   // implementation detail

 private:
  explicit RawJson(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  // node_, owning its document (a child handle inside a document does not).
  std::shared_ptr<Node> Shared() const;
  friend class RawJsonAccess;
  std::shared_ptr<Node> node_;  // nullptr means null
};

// Parsed documents kept for reuse on the calling thread. A thread that parses many short-lived
// documents and frees them in bursts (the loop thread: a batch of worker reports is freed when it
// commits) would otherwise get most of each parse's blocks from the allocator's slow paths. After
// KeepParsedDocuments(n), up to n parsed documents of at most kMaxKeptDocumentBytes whose last
// owner lets go on this thread are emptied and kept, and the next parses on this thread build in
// them. 0, every thread's default, keeps none (and frees what was kept). ReleaseKeptDocuments
// frees the calling thread's kept documents and keeps keeping (the heap trim calls it).
inline constexpr size_t kMaxKeptDocumentBytes = 16 * 1024;
void KeepParsedDocuments(size_t max_documents);
void ReleaseKeptDocuments();
// How many documents the calling thread keeps now.
size_t KeptParsedDocuments();

}  // namespace sedna::json
