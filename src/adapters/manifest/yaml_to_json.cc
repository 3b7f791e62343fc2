#include "adapters/manifest/yaml_to_json.h"

#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

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

enum class ScalarType { kString, kNull, kBool, kInt, kFloat };

struct Scalar {
  ScalarType type = ScalarType::kString;
  RawJson value;
  bool finite = true;  // false for .inf/.nan, which JSON cannot hold
};

bool IsDecimalDigit(char c) { return c >= '0' && c <= '9'; }

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
    int d = IsDecimalDigit(c)        ? c - '0'
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
  while (i < n && IsDecimalDigit(s[i])) ++i;
  if (i == int_start) {
    if (i >= n || s[i] != '.') return false;
    ++i;
    size_t frac_start = i;
    while (i < n && IsDecimalDigit(s[i])) ++i;
    if (i == frac_start) return false;
  } else if (i < n && s[i] == '.') {
    ++i;
    while (i < n && IsDecimalDigit(s[i])) ++i;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_start = i;
    while (i < n && IsDecimalDigit(s[i])) ++i;
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
  while (int_len < s.size() && IsDecimalDigit(s[int_len])) ++int_len;
  std::string_view int_part = s.substr(0, int_len);
  while (int_part.size() > 1 && int_part[0] == '0') int_part.remove_prefix(1);
  text += int_part.empty() ? "0" : std::string(int_part);
  s.remove_prefix(int_len);
  if (!s.empty() && s[0] == '.') {
    size_t frac_len = 1;
    while (frac_len < s.size() && IsDecimalDigit(s[frac_len])) ++frac_len;
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
  if (IsDecimalDigit(c) || c == '+' || c == '-') {
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
        return std::string(v->string_value());
      case RawJson::Type::kBool:
        return std::string(v->bool_value() ? "true" : "false");
      case RawJson::Type::kNumber:
        return std::string(v->number_text());
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
        const std::string key(obj.key(i));
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

}  // namespace

Result<RawJson> YamlToJson(const YAML::Node& doc, int line_offset, bool redact) {
  Converter converter(line_offset, redact);
  return converter.Convert(doc, 0);
}

}  // namespace sedna::manifest
