#include "adapters/manifest/manifest.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "adapters/json/base64.h"
#include "adapters/json/go_json.h"
#include "adapters/json/resource_codec.h"
#include "core/status.h"

namespace sedna::manifest {
namespace {

using json::GoString;
using json::RawJson;

// Bounds on one document's conversion: nesting (a self-referencing alias nests forever) and the
// number of JSON values produced (aliases can expand exponentially). A Sedna object has a few
// hundred values.
constexpr size_t kMaxDepth = 256;
constexpr size_t kMaxValues = 200000;
constexpr std::string_view kYamlTagPrefix = "tag:yaml.org,2002:";

constexpr std::string_view kHandledKinds[] = {"Dataset", "Model", "IncrementalLearningJob",
                                              "LifelongLearningJob"};

// ---- splitting a stream into documents -------------------------------------------------------

struct Chunk {
  std::string text;
  int first_line = 0;    // 0-based line of text's first line in the stream
  bool numbered = true;  // counts as a document even when it holds nothing
};

bool IsBlankOrComment(std::string_view line) {
  size_t i = line.find_first_not_of(" \t\r");
  return i == std::string_view::npos || line[i] == '#';
}

// kubectl's document separator (k8s.io/apimachinery yaml.YAMLReader): "---" at the start of a
// line, followed by nothing but blanks or a comment.
bool IsSeparator(std::string_view line) {
  return line.substr(0, 3) == "---" && IsBlankOrComment(line.substr(3));
}

// The text between separators. The part before the first separator is a document only when it
// has content; if it holds only directives (%YAML, %TAG) it stays attached to the document the
// first separator starts.
std::vector<Chunk> SplitDocuments(std::string_view text) {
  std::vector<Chunk> chunks(1);
  bool head_content = false, head_directive = false, head_merged = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    size_t next = std::min(end + 1, text.size());
    std::string_view line = text.substr(pos, end - pos);
    bool in_head = chunks.size() == 1 && !head_merged;
    if (IsSeparator(line) && !(in_head && head_directive && !head_content)) {
      chunks.push_back(Chunk{"", line_no + 1, true});
    } else {
      if (in_head) {
        if (IsSeparator(line)) {
          head_merged = true;
        } else if (!line.empty() && line[0] == '%') {
          head_directive = true;
        } else if (!IsBlankOrComment(line)) {
          head_content = true;
        }
      }
      chunks.back().text.append(text.substr(pos, next - pos));
    }
    pos = next;
    ++line_no;
  }
  chunks[0].numbered = head_content || head_merged;
  return chunks;
}

// ---- parsing ---------------------------------------------------------------------------------

// "line L, column C" (1-based, in the stream) for a yaml-cpp mark; "" for a null mark.
std::string Position(const YAML::Mark& m, int line_offset) {
  if (m.is_null() || m.line < 0 || m.column < 0) return "";
  return "line " + std::to_string(m.line + line_offset + 1) + ", column " +
         std::to_string(m.column + 1);
}

// Position(m) + ": ", or "" for a null mark: the prefix of a message about that place.
std::string AtMark(const YAML::Mark& m, int line_offset) {
  std::string p = Position(m, line_offset);
  return p.empty() ? p : p + ": ";
}

// An event sink that keeps only the mark of the most recent node.
class MarkRecorder : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { last = mark; }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { last = mark; }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    last = mark;
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    last = mark;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    last = mark;
  }
  void OnMapEnd() override {}

  YAML::Mark last = YAML::Mark::null_mark();
};

// YAML::LoadAll(text), except that it returns an error instead of looping forever (and
// allocating without bound) where yaml-cpp 0.7's parser keeps reporting empty documents without
// consuming input, e.g. for "{}," or "," (jbeder/yaml-cpp#1040). Parse errors throw
// YAML::Exception as LoadAll does.
Result<std::vector<YAML::Node>> LoadAllDocuments(const std::string& text, int line_offset) {
  // Each document after the first starts on a new line, so n lines hold at most n + 1.
  const size_t limit = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 2;
  std::istringstream in(text);
  YAML::Parser parser(in);
  MarkRecorder recorder;
  for (size_t n = 0; parser.HandleNextDocument(recorder);) {
    if (++n > limit) {
      return Result<std::vector<YAML::Node>>::Error(AtMark(recorder.last, line_offset) +
                                                    "invalid YAML: unexpected content here");
    }
  }
  return YAML::LoadAll(text);
}

// ---- Secrets: no value in any message --------------------------------------------------------

// Whether a chunk of the stream may hold a Secret document. Its YAML syntax errors are then
// redacted (cheap and conservative: any mention of "Secret" counts).
bool MayHoldSecret(std::string_view text) { return text.find("Secret") != std::string_view::npos; }

// A yaml-cpp message without the text it quotes from the input: the character of a bad escape
// or the digits of a bad \u escape, which would be part of a Secret's value.
std::string RedactYamlMessage(const std::string& msg) {
  for (std::string_view prefix : {std::string_view(YAML::ErrorMsg::INVALID_ESCAPE),
                                  std::string_view(YAML::ErrorMsg::INVALID_UNICODE)}) {
    if (msg.compare(0, prefix.size(), prefix) == 0) {
      std::string_view head = prefix;
      while (!head.empty() && (head.back() == ' ' || head.back() == ':')) head.remove_suffix(1);
      return std::string(head) + " (the text is not shown: the document may be a Secret)";
    }
  }
  return msg;
}

// Whether a parsed document is a mapping with `kind: Secret`: its conversion errors must not
// quote scalars.
bool IsSecretDocument(const YAML::Node& doc) {
  if (!doc.IsMap()) return false;
  for (const auto& member : doc) {
    const YAML::Node k = member.first;
    const YAML::Node v = member.second;
    if (k.IsScalar() && k.Scalar() == "kind" && v.IsScalar() && v.Scalar() == "Secret") {
      return true;
    }
  }
  return false;
}

// ---- YAML -> JSON ----------------------------------------------------------------------------

enum class ScalarType { kString, kNull, kBool, kInt, kFloat };

struct Scalar {
  ScalarType type = ScalarType::kString;
  RawJson value;
  bool finite = true;  // false for .inf/.nan, which JSON cannot hold
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Go's strconv.ParseInt(s, 0, 64), falling back to ParseUint(s, 0, 64): the decimal JSON text
// of the value, or "" when neither accepts s.
std::string ParseGoInteger(std::string_view s) {
  bool negative = false, has_sign = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    has_sign = true;
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0') {
    char p = static_cast<char>(s[1] | 0x20);
    if (p == 'x') {
      base = 16;
      s.remove_prefix(2);
    } else if (p == 'o') {
      base = 8;
      s.remove_prefix(2);
    } else if (p == 'b') {
      base = 2;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  if (s.empty()) return "";
  uint64_t v = 0;
  for (char c : s) {
    int d = IsDigit(c)               ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : 99;
    if (d >= base) return "";
    if (v > (std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(d)) / base) return "";
    v = v * base + static_cast<uint64_t>(d);
  }
  constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    if (v > kMaxInt64 + 1) return "";
    return v == 0 ? "0" : "-" + std::to_string(v);
  }
  if (v > kMaxInt64 && has_sign) return "";  // ParseUint takes no sign
  return std::to_string(v);
}

// go-yaml v2's float syntax: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool IsYamlFloat(std::string_view s) {
  size_t i = 0, n = s.size();
  if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_start = i;
  while (i < n && IsDigit(s[i])) ++i;
  if (i == int_start) {
    if (i >= n || s[i] != '.') return false;
    ++i;
    size_t frac_start = i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == frac_start) return false;
  } else if (i < n && s[i] == '.') {
    ++i;
    while (i < n && IsDigit(s[i])) ++i;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_start = i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == exp_start) return false;
  }
  return i == n;
}

// A float in IsYamlFloat syntax as a JSON number printed as Go prints the float64; nullopt when
// it overflows a float64 (go-yaml then keeps the text as a string).
std::optional<RawJson> YamlFloatToJson(std::string_view s) {
  std::string text;
  if (s[0] == '+' || s[0] == '-') {
    if (s[0] == '-') text += '-';
    s.remove_prefix(1);
  }
  size_t int_len = 0;
  while (int_len < s.size() && IsDigit(s[int_len])) ++int_len;
  std::string_view int_part = s.substr(0, int_len);
  while (int_part.size() > 1 && int_part[0] == '0') int_part.remove_prefix(1);
  text += int_part.empty() ? "0" : std::string(int_part);
  s.remove_prefix(int_len);
  if (!s.empty() && s[0] == '.') {
    size_t frac_len = 1;
    while (frac_len < s.size() && IsDigit(s[frac_len])) ++frac_len;
    if (frac_len > 1) text += s.substr(0, frac_len);
    s.remove_prefix(frac_len);
  }
  text += s;  // exponent, if any
  auto number = RawJson::NumberText(text);
  if (!number.ok()) return std::nullopt;
  auto d = number->AsDouble();
  if (!d.ok()) return std::nullopt;
  return RawJson::Number(*d);
}

bool OneOf(std::string_view s, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// go-yaml v2's resolve() for an untagged plain scalar (the typing kubectl applies).
Scalar ResolvePlain(const std::string& in) {
  // go-yaml's hint table: only these first characters can start a non-string.
  if (!in.empty() &&
      std::string_view("yYnNtTfFoO~+-.0123456789").find(in[0]) == std::string_view::npos) {
    return {ScalarType::kString, RawJson::String(in)};
  }
  if (OneOf(in, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    return {ScalarType::kBool, RawJson::Bool(true)};
  }
  if (OneOf(in, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    return {ScalarType::kBool, RawJson::Bool(false)};
  }
  if (OneOf(in, {"", "~", "null", "Null", "NULL"})) return {ScalarType::kNull, RawJson::Null()};
  if (OneOf(in, {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
                 "-.Inf", "-.INF"})) {
    return {ScalarType::kFloat, RawJson::Null(), false};
  }
  const char c = in[0];
  if (IsDigit(c) || c == '+' || c == '-') {
    std::string plain;
    std::copy_if(in.begin(), in.end(), std::back_inserter(plain), [](char x) { return x != '_'; });
    if (std::string text = ParseGoInteger(plain); !text.empty()) {
      return {ScalarType::kInt, *RawJson::NumberText(text)};
    }
    if (IsYamlFloat(plain)) {
      if (auto v = YamlFloatToJson(plain)) return {ScalarType::kFloat, *v};
    }
  } else if (c == '.' && IsYamlFloat(in)) {
    if (auto v = YamlFloatToJson(in)) return {ScalarType::kFloat, *v};
  }
  return {ScalarType::kString, RawJson::String(in)};
}

const char* ScalarTypeTag(ScalarType t) {
  switch (t) {
    case ScalarType::kString:
      return "!!str";
    case ScalarType::kNull:
      return "!!null";
    case ScalarType::kBool:
      return "!!bool";
    case ScalarType::kInt:
      return "!!int";
    case ScalarType::kFloat:
      return "!!float";
  }
  return "?";
}

// Converts one YAML document to JSON. Errors carry "line L, column C: " of the offending node.
// With `redact` (a Secret document) they never quote a scalar's text.
class Converter {
 public:
  Converter(int line_offset, bool redact) : line_offset_(line_offset), redact_(redact) {}

  Result<RawJson> Convert(const YAML::Node& node, size_t depth) {
    if (depth > kMaxDepth) {
      return Result<RawJson>::Error(At(node) + "nested deeper than " + std::to_string(kMaxDepth) +
                                    " levels (an alias inside its own anchor?)");
    }
    if (++values_ > kMaxValues) {
      return Result<RawJson>::Error(At(node) + "the document expands to more than " +
                                    std::to_string(kMaxValues) + " values (aliases?)");
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return RawJson::Null();
      case YAML::NodeType::Scalar:
        return ConvertScalar(node);
      case YAML::NodeType::Sequence: {
        std::vector<RawJson> elements;
        elements.reserve(node.size());
        for (const auto& e : node) {  // a lifetime-extended temporary iterator_value
          auto v = Convert(e, depth + 1);
          if (!v.ok()) return v;
          elements.push_back(std::move(*v));
        }
        return RawJson::Array(std::move(elements));
      }
      case YAML::NodeType::Map:
        return ConvertMap(node, depth);
    }
    return RawJson::Null();
  }

 private:
  std::string At(const YAML::Node& node) const { return AtMark(node.Mark(), line_offset_); }

  // Quoted and block scalars (tag "!") are strings; plain ones (tag "?") are resolved; the core
  // schema tags force a type, other tags leave the text a string (as go-yaml v2 does).
  Result<RawJson> ConvertScalar(const YAML::Node& node) const {
    const std::string& tag = node.Tag();
    const std::string& text = node.Scalar();
    if (tag == "!") return RawJson::String(text);
    Scalar s;
    if (tag == "?" || tag.empty()) {
      s = ResolvePlain(text);
    } else if (std::string_view(tag).substr(0, kYamlTagPrefix.size()) == kYamlTagPrefix) {
      std::string_view short_tag = std::string_view(tag).substr(kYamlTagPrefix.size());
      if (short_tag == "binary") {
        return Result<RawJson>::Error(At(node) + "!!binary values are not supported");
      }
      if (short_tag != "int" && short_tag != "float" && short_tag != "bool" &&
          short_tag != "null") {
        return RawJson::String(text);  // !!str, !!timestamp, and tags go-yaml does not resolve
      }
      s = ResolvePlain(text);
      std::string wanted = "!!" + std::string(short_tag);
      if (short_tag == "float" && s.type == ScalarType::kInt) {
        s = {ScalarType::kFloat, RawJson::Number(*s.value.AsDouble())};
      }
      if (ScalarTypeTag(s.type) != wanted) {
        return Result<RawJson>::Error(At(node) + "cannot decode " + ScalarTypeTag(s.type) +
                                      (redact_ ? "" : " `" + text + "`") + " as a " + wanted);
      }
    } else {
      return RawJson::String(text);
    }
    if (!s.finite) {
      return Result<RawJson>::Error(At(node) + (redact_ ? "a value" : "`" + text + "`") +
                                    " (infinity or NaN) cannot be represented in JSON");
    }
    return s.value;
  }

  static bool IsMergeKey(const YAML::Node& key) {
    return key.IsScalar() && key.Scalar() == "<<" &&
           (key.Tag() == "?" || key.Tag() == std::string(kYamlTagPrefix) + "merge");
  }

  // A mapping key as the JSON member name sigs.k8s.io/yaml gives it: strings as they are,
  // numbers and booleans in their JSON text; null and collection keys are errors.
  Result<std::string> KeyText(const YAML::Node& key) const {
    if (key.IsNull()) return Result<std::string>::Error(At(key) + "a mapping key must not be null");
    if (!key.IsScalar()) {
      return Result<std::string>::Error(At(key) + "a mapping key must be a scalar, got a " +
                                        (key.IsSequence() ? "sequence" : "mapping"));
    }
    auto v = ConvertScalar(key);
    if (!v.ok()) return v.status();
    switch (v->type()) {
      case RawJson::Type::kString:
        return v->string_value();
      case RawJson::Type::kBool:
        return std::string(v->bool_value() ? "true" : "false");
      case RawJson::Type::kNumber:
        return v->number_text();
      default:
        return Result<std::string>::Error(At(key) + "a mapping key must not be null");
    }
  }

  // Explicit keys must be unique; `<<: *anchor` (or a sequence of anchors) adds the members of
  // those mappings that the mapping does not set itself, earlier mappings winning, at the
  // position of the merge key.
  Result<RawJson> ConvertMap(const YAML::Node& node, size_t depth) {
    struct Entry {
      std::string key;
      RawJson value;
      bool merge = false;
    };
    std::vector<Entry> entries;
    std::map<std::string, YAML::Mark> explicit_keys;
    // yaml-cpp's iterator yields temporaries: copy the (cheap, shared) nodes out of them.
    for (const auto& member : node) {
      const YAML::Node k = member.first;
      const YAML::Node v = member.second;
      if (IsMergeKey(k)) {
        auto value = Convert(v, depth + 1);
        if (!value.ok()) return value;
        bool mergeable = value->is_object();
        if (value->is_array()) {
          mergeable = true;
          for (size_t i = 0; i < value->size(); ++i) mergeable &= (*value)[i].is_object();
        }
        if (!mergeable) {
          return Result<RawJson>::Error(
              At(v) + "a merge key (<<) needs a mapping or a sequence of mappings");
        }
        entries.push_back({"", std::move(*value), true});
        continue;
      }
      auto key = KeyText(k);
      if (!key.ok()) return key.status();
      auto [first, inserted] = explicit_keys.emplace(*key, k.Mark());
      if (!inserted) {
        std::string previous = Position(first->second, line_offset_);
        if (!previous.empty()) previous = " (first at " + previous + ")";
        return Result<RawJson>::Error(At(k) + "mapping key " + GoString(*key) + " already defined" +
                                      previous);
      }
      auto value = Convert(v, depth + 1);
      if (!value.ok()) return value;
      entries.push_back({std::move(*key), std::move(*value), false});
    }
    std::vector<std::pair<std::string, RawJson>> members;
    std::set<std::string> merged;
    auto merge_from = [&](const RawJson& obj) {
      for (size_t i = 0; i < obj.size(); ++i) {
        const std::string& key = obj.key(i);
        if (explicit_keys.count(key) != 0 || !merged.insert(key).second) continue;
        members.emplace_back(key, obj[i]);
      }
    };
    for (Entry& e : entries) {
      if (!e.merge) {
        members.emplace_back(std::move(e.key), std::move(e.value));
      } else if (e.value.is_object()) {
        merge_from(e.value);
      } else {
        for (size_t i = 0; i < e.value.size(); ++i) merge_from(e.value[i]);
      }
    }
    return RawJson::Object(std::move(members));
  }

  int line_offset_;
  bool redact_;
  size_t values_ = 0;
};

// ---- object checks ---------------------------------------------------------------------------

bool IsLowerAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z'); }

// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsDnsLabel(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// Kubernetes' IsDNS1123Subdomain: dot-separated labels, at most 253 characters.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsDnsLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// `root` with metadata.namespace set to `ns`: replaced in place when present, else inserted
// right after metadata.name (where Go's ObjectMeta puts it).
RawJson WithNamespace(const RawJson& root, const std::string& ns) {
  std::vector<std::pair<std::string, RawJson>> members;
  for (size_t i = 0; i < root.size(); ++i) {
    if (root.key(i) != "metadata") {
      members.emplace_back(root.key(i), root[i]);
      continue;
    }
    const RawJson& md = root[i];
    const bool has_ns = md.Find("namespace") != nullptr;
    std::vector<std::pair<std::string, RawJson>> md_members;
    for (size_t j = 0; j < md.size(); ++j) {
      if (md.key(j) == "namespace") {
        md_members.emplace_back("namespace", RawJson::String(ns));
        continue;
      }
      md_members.emplace_back(md.key(j), md[j]);
      if (md.key(j) == "name" && !has_ns) {
        md_members.emplace_back("namespace", RawJson::String(ns));
      }
    }
    members.emplace_back("metadata", RawJson::Object(std::move(md_members)));
  }
  return RawJson::Object(std::move(members));
}

Status DecodeAs(const std::string& kind, const std::string& text) {
  if (kind == "Dataset") return json::DecodeDataset(text).status();
  if (kind == "Model") return json::DecodeModel(text).status();
  if (kind == "IncrementalLearningJob") return json::DecodeIlJob(text).status();
  return json::DecodeLlJob(text).status();
}

// The decoder's message without its "Kind ns/name: " prefix (the caller names the object).
std::string WithoutIdentity(const std::string& message, const std::string& identity) {
  const std::string prefix = identity + ": ";
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

std::string ExpectedError(std::string_view path, std::string_view expected, const RawJson& v) {
  return std::string(path) + ": expected " + std::string(expected) + ", got " + v.type_name();
}

// Kubernetes' IsConfigMapKey (the rule for Secret data keys): [-._a-zA-Z0-9]+, at most 253
// characters, not "." and not starting with "..".
bool IsSecretKey(std::string_view key) {
  if (key.empty() || key.size() > 253 || key == "." || key.substr(0, 2) == "..") return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
           c == '.';
  });
}

enum class SecretValues { kAnnotations, kBase64, kPlain };

// One string map of a Secret (metadata.annotations, data or stringData) into `out`; absent or null
// leaves it empty, a null value reads as "" (as Go decodes it). Messages name `path` and the key,
// never a value.
Status ReadSecretMap(const RawJson* v, std::string_view path, SecretValues values,
                     std::map<std::string, std::string>* out) {
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_object()) return Status::Error(ExpectedError(path, "an object", *v));
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string& key = v->key(i);
    const RawJson& value = (*v)[i];
    const std::string at = std::string(path) + "[" + GoString(key) + "]";
    if (values != SecretValues::kAnnotations && !IsSecretKey(key)) {
      return Status::Error(std::string(path) + ": key " + GoString(key) +
                           " is not a valid Secret key (letters, digits, '-', '_' and '.', not "
                           "\".\" and not starting with \"..\", at most 253 characters)");
    }
    if (value.is_null()) {
      (*out)[key] = "";
      continue;
    }
    if (!value.is_string()) {
      return Status::Error(ExpectedError(
          at, values == SecretValues::kBase64 ? "a base64 string" : "a string", value));
    }
    if (values != SecretValues::kBase64) {
      (*out)[key] = value.string_value();
      continue;
    }
    // Base64Decode's message quotes the offending character: not shown, it is part of a secret.
    auto decoded = json::Base64Decode(value.string_value());
    if (!decoded.ok()) {
      return Status::Error(at +
                           ": not valid base64 (standard alphabet, padded with '='; plain text "
                           "belongs under stringData); the value is not shown");
    }
    (*out)[key] = std::move(*decoded);
  }
  return Status::Ok();
}

// ---- loading ---------------------------------------------------------------------------------

class Loader {
 public:
  LoadResult result;

  void LoadPath(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found || ec == std::errc::no_such_file_or_directory) {
      result.errors.push_back(path + ": no such file or directory");
      return;
    }
    if (ec) {
      result.errors.push_back(path + ": " + ec.message());
      return;
    }
    if (!fs::is_directory(st)) {
      LoadFile(path);
      return;
    }
    std::vector<std::string> names;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.') continue;
      auto ends_with = [&](std::string_view ext) {
        return name.size() > ext.size() &&
               name.compare(name.size() - ext.size(), ext.size(), ext.data(), ext.size()) == 0;
      };
      if (!ends_with(".yaml") && !ends_with(".yml")) continue;
      std::error_code file_ec;
      if (!fs::is_regular_file(it->path(), file_ec)) continue;  // follows symlinks
      names.push_back(std::move(name));
    }
    if (ec) {
      result.errors.push_back(path + ": cannot list the directory: " + ec.message());
      return;
    }
    std::sort(names.begin(), names.end());
    if (names.empty()) result.warnings.push_back(path + ": no *.yaml or *.yml files");
    for (const std::string& name : names) LoadFile((fs::path(path) / name).string());
  }

  void LoadText(std::string_view text, const std::string& source) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
    int doc_no = 0;
    for (const Chunk& chunk : SplitDocuments(text)) {
      if (!chunk.numbered) continue;
      std::vector<YAML::Node> docs;
      try {
        auto loaded = LoadAllDocuments(chunk.text, chunk.first_line);
        if (!loaded.ok()) {
          result.errors.push_back(Where(source, ++doc_no) + ": " + loaded.message());
          continue;
        }
        docs = std::move(*loaded);
      } catch (const YAML::Exception& e) {
        ++doc_no;
        result.errors.push_back(Where(source, doc_no) + ": " + AtMark(e.mark, chunk.first_line) +
                                (MayHoldSecret(chunk.text) ? RedactYamlMessage(e.msg) : e.msg));
        continue;
      } catch (const std::exception& e) {
        ++doc_no;
        result.errors.push_back(Where(source, doc_no) + ": " + e.what());
        continue;
      } catch (...) {
        ++doc_no;
        result.errors.push_back(Where(source, doc_no) + ": unexpected error");
        continue;
      }
      if (docs.empty()) ++doc_no;  // a document with nothing but comments
      for (const YAML::Node& doc : docs) {
        ++doc_no;
        try {
          LoadDocument(doc, chunk.first_line, source, doc_no);
        } catch (const std::exception& e) {
          result.errors.push_back(Where(source, doc_no) + ": " + e.what());
        } catch (...) {
          result.errors.push_back(Where(source, doc_no) + ": unexpected error");
        }
      }
    }
  }

 private:
  // "file (document N)", or "file (document N, identity)".
  static std::string Where(const std::string& source, int doc_no,
                           const std::string& identity = "") {
    return source + " (document " + std::to_string(doc_no) +
           (identity.empty() ? "" : ", " + identity) + ")";
  }

  void LoadFile(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      result.errors.push_back(file + ": cannot open: " + std::generic_category().message(errno));
      return;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
      result.errors.push_back(file + ": read error");
      return;
    }
    LoadText(ss.str(), file);
  }

  void LoadDocument(const YAML::Node& doc, int line_offset, const std::string& file, int doc_no) {
    const std::string where = Where(file, doc_no);
    auto fail = [&](const std::string& prefix, const std::string& message) {
      result.errors.push_back(prefix + ": " + message);
    };
    Converter converter(line_offset, IsSecretDocument(doc));
    auto converted = converter.Convert(doc, 0);
    if (!converted.ok()) return fail(where, converted.message());
    const RawJson& root = *converted;
    if (root.is_null()) return;  // empty document
    if (!root.is_object()) {
      return fail(where,
                  std::string("expected a mapping (a Kubernetes object), got ") + root.type_name());
    }

    const RawJson* kind_v = root.Find("kind");
    if (kind_v == nullptr || kind_v->is_null() ||
        (kind_v->is_string() && kind_v->string_value().empty())) {
      return fail(where, "kind: missing");
    }
    if (!kind_v->is_string()) return fail(where, ExpectedError("kind", "a string", *kind_v));
    const std::string kind = kind_v->string_value();
    const bool is_secret = kind == "Secret";
    if (!is_secret && std::find(std::begin(kHandledKinds), std::end(kHandledKinds), kind) ==
                          std::end(kHandledKinds)) {
      result.warnings.push_back(where + ": kind " + GoString(kind) +
                                " is not handled in standalone mode; skipped");
      return;
    }

    const RawJson* md = root.Find("metadata");
    if (md != nullptr && !md->is_null() && !md->is_object()) {
      return fail(where, ExpectedError("metadata", "an object", *md));
    }
    const RawJson* name_v = md != nullptr ? md->Find("name") : nullptr;
    if (name_v == nullptr || name_v->is_null() ||
        (name_v->is_string() && name_v->string_value().empty())) {
      return fail(where, kind + ": metadata.name: missing");
    }
    if (!name_v->is_string()) {
      return fail(where, kind + ": " + ExpectedError("metadata.name", "a string", *name_v));
    }
    const std::string name = name_v->string_value();
    if (!IsDnsSubdomain(name)) {
      return fail(where, kind + ": metadata.name: " + GoString(name) +
                             " is not a valid name (lower-case letters, digits, '-' and '.', "
                             "starting and ending with a letter or digit, at most 253 "
                             "characters)");
    }
    std::string ns = "default";
    if (const RawJson* ns_v = md->Find("namespace"); ns_v != nullptr && !ns_v->is_null()) {
      if (!ns_v->is_string()) {
        return fail(where, kind + " " + name + ": " +
                               ExpectedError("metadata.namespace", "a string", *ns_v));
      }
      if (!ns_v->string_value().empty()) ns = ns_v->string_value();
      if (ns.size() > 63 || !IsDnsLabel(ns)) {
        return fail(where, kind + " " + name + ": metadata.namespace: " + GoString(ns) +
                               " is not a valid namespace (lower-case letters, digits and '-', "
                               "starting and ending with a letter or digit, at most 63 "
                               "characters)");
      }
    }
    const std::string identity = kind + " " + ns + "/" + name;
    const std::string who = Where(file, doc_no, identity);
    if (is_secret) return LoadSecret(root, ns, name, where, who);

    const RawJson* api_v = root.Find("apiVersion");
    if (api_v == nullptr || api_v->is_null() ||
        (api_v->is_string() && api_v->string_value().empty())) {
      return fail(who, "apiVersion: missing (expected \"sedna.io/v1alpha1\")");
    }
    if (!api_v->is_string()) return fail(who, ExpectedError("apiVersion", "a string", *api_v));
    const std::string& api = api_v->string_value();
    constexpr std::string_view kGroup = "sedna.io/";
    if (api.compare(0, kGroup.size(), kGroup) != 0 || api.size() == kGroup.size() ||
        api.find('/', kGroup.size()) != std::string::npos) {
      return fail(who, "apiVersion: " + GoString(api) +
                           " is not in the Sedna API group (expected \"sedna.io/<version>\")");
    }

    std::string text = WithNamespace(root, ns).DumpInOrder();
    if (Status st = DecodeAs(kind, text); !st.ok()) {
      return fail(who, WithoutIdentity(st.message(), identity));
    }
    auto [first, inserted] = seen_.emplace(std::make_tuple(kind, ns, name), where);
    if (!inserted) return fail(who, "duplicate of " + identity + " in " + first->second);
    result.objects.push_back(ManifestObject{kind, ns, name, std::move(text), where});
  }

  // A Secret document whose metadata.name and .namespace were checked: `where` names the document,
  // `who` also the Secret.
  void LoadSecret(const RawJson& root, const std::string& ns, const std::string& name,
                  const std::string& where, const std::string& who) {
    auto fail = [&](const std::string& message) { result.errors.push_back(who + ": " + message); };
    const RawJson* api_v = root.Find("apiVersion");
    if (api_v == nullptr || api_v->is_null() ||
        (api_v->is_string() && api_v->string_value().empty())) {
      return fail("apiVersion: missing (expected \"v1\")");
    }
    if (!api_v->is_string()) return fail(ExpectedError("apiVersion", "a string", *api_v));
    if (api_v->string_value() != "v1") {
      return fail("apiVersion: " + GoString(api_v->string_value()) +
                  " is not the Secret's API version (expected \"v1\")");
    }
    Secret secret{ns, name, {}, {}, where};
    const RawJson* md = root.Find("metadata");
    if (Status st = ReadSecretMap(md->Find("annotations"), "metadata.annotations",
                                  SecretValues::kAnnotations, &secret.annotations);
        !st.ok()) {
      return fail(st.message());
    }
    if (Status st = ReadSecretMap(root.Find("data"), "data", SecretValues::kBase64, &secret.data);
        !st.ok()) {
      return fail(st.message());
    }
    std::map<std::string, std::string> string_data;
    if (Status st = ReadSecretMap(root.Find("stringData"), "stringData", SecretValues::kPlain,
                                  &string_data);
        !st.ok()) {
      return fail(st.message());
    }
    for (auto& [key, value] : string_data) secret.data[key] = std::move(value);
    // The API server's limit (validation.ValidateSecret: MaxSecretSize over keys and values).
    constexpr size_t kMaxSecretSize = 1 << 20;
    size_t total = 0;
    for (const auto& [key, value] : secret.data) total += key.size() + value.size();
    if (total > kMaxSecretSize) {
      return fail("data: the Secret holds " + std::to_string(total) + " bytes, more than the " +
                  std::to_string(kMaxSecretSize) + " allowed");
    }
    auto [first, inserted] = seen_.emplace(std::make_tuple("Secret", ns, name), where);
    if (!inserted) return fail("duplicate of Secret " + ns + "/" + name + " in " + first->second);
    result.secrets.push_back(std::move(secret));
  }

  // (kind, namespace, name) -> source of the object accepted first.
  std::map<std::tuple<std::string, std::string, std::string>, std::string> seen_;
};

}  // namespace

LoadResult LoadManifests(const std::string& path) {
  Loader loader;
  try {
    loader.LoadPath(path);
  } catch (const std::exception& e) {
    loader.result.errors.push_back(path + ": " + e.what());
  } catch (...) {
    loader.result.errors.push_back(path + ": unexpected error");
  }
  return std::move(loader.result);
}

LoadResult LoadManifestText(const std::string& text, const std::string& source) {
  Loader loader;
  try {
    loader.LoadText(text, source);
  } catch (const std::exception& e) {
    loader.result.errors.push_back(source + ": " + e.what());
  } catch (...) {
    loader.result.errors.push_back(source + ": unexpected error");
  }
  return std::move(loader.result);
}

}  // namespace sedna::manifest
