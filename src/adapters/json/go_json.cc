#include "adapters/json/go_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <system_error>

#include "adapters/json/go_json_internal.h"

namespace sedna::json {

// ---------------------------------------------------------------------------------------------
// Strings

namespace {

constexpr char kHex[] = "0123456789abcdef";

// True when none of the 8 bytes of `w` needs a closer look: none is below 0x20, at or above 0x80,
// '"', '\\', '<', '>' or '&'.
inline bool IsPlainGoWord(uint64_t w) {
  using namespace internal;
  return (AnyHighByte(w) | AnyByteBelow(w, 0x20) | AnyByteIs(w, '"') | AnyByteIs(w, '\\') |
          AnyByteIs(w, '<') | AnyByteIs(w, '>') | AnyByteIs(w, '&')) == 0;
}

// Bytes Go copies verbatim without a closer look: printable ASCII except '"', '\\', '<', '>', '&'.
constexpr std::array<bool, 256> kPlainGoByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c)
    t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
  return t;
}();

// The length of the plain prefix of `s` (IsPlainGoWord / kPlainGoByte).
size_t PlainGoPrefix(std::string_view s) {
  size_t i = 0;
  while (s.size() - i >= 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (!IsPlainGoWord(w)) break;
    i += 8;
  }
  while (i < s.size() && kPlainGoByte[static_cast<unsigned char>(s[i])]) ++i;
  return i;
}

}  // namespace

std::pair<int32_t, int> internal::DecodeRune(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c0 = b(i);
  size_t avail = s.size() - i;
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
    return k < s.size() && b(k) >= lo && b(k) <= hi;
  };
  if (c0 < 0x80) return {c0, 1};
  if (c0 < 0xc2) return {-1, 1};
  if (c0 < 0xe0) {
    if (avail < 2 || !cont(i + 1)) return {-1, 1};
    return {((c0 & 0x1f) << 6) | (b(i + 1) & 0x3f), 2};
  }
  if (c0 < 0xf0) {
    unsigned char lo = c0 == 0xe0 ? 0xa0 : 0x80;
    unsigned char hi = c0 == 0xed ? 0x9f : 0xbf;
    if (avail < 3 || !cont(i + 1, lo, hi) || !cont(i + 2)) return {-1, 1};
    return {((c0 & 0x0f) << 12) | ((b(i + 1) & 0x3f) << 6) | (b(i + 2) & 0x3f), 3};
  }
  if (c0 < 0xf5) {
    unsigned char lo = c0 == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c0 == 0xf4 ? 0x8f : 0xbf;
    if (avail < 4 || !cont(i + 1, lo, hi) || !cont(i + 2) || !cont(i + 3)) return {-1, 1};
    return {((c0 & 0x07) << 18) | ((b(i + 1) & 0x3f) << 12) | ((b(i + 2) & 0x3f) << 6) |
                (b(i + 3) & 0x3f),
            4};
  }
  return {-1, 1};
}

void AppendGoString(std::string& out, std::string_view s) {
  size_t i = PlainGoPrefix(s);
  if (i == s.size()) {  // nothing to escape (every key and almost every value): one copy
    const size_t at = out.size();
    out.append(s.size() + 2, '"');
    if (!s.empty()) std::memcpy(out.data() + at + 1, s.data(), s.size());  // data() may be null
    return;
  }
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  size_t start = 0;  // first byte not yet copied
  while (i < s.size()) {
    // Runs of plain ASCII (most of every string) eight bytes at a time.
    while (s.size() - i >= 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (!IsPlainGoWord(w)) break;
      i += 8;
    }
    if (i == s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (kPlainGoByte[c]) {
        ++i;
        continue;
      }
      out.append(s.data() + start, i - start);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
      }
      ++i;
      start = i;
      continue;
    }
    auto [rune, size] = internal::DecodeRune(s, i);
    if (rune < 0) {
      out.append(s.data() + start, i - start);
      out += "\\ufffd";
      i += size;
      start = i;
      continue;
    }
    if (rune == 0x2028 || rune == 0x2029) {
      out.append(s.data() + start, i - start);
      out += rune == 0x2028 ? "\\u2028" : "\\u2029";
      i += size;
      start = i;
      continue;
    }
    i += size;
  }
  out.append(s.data() + start, s.size() - start);
  out += '"';
}

std::string GoString(std::string_view s) {
  std::string out;
  AppendGoString(out, s);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Floats

std::string FormatGoFloat(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  // Shortest round-trip digits, in C's %e layout: [-]d[.ddd]e(+|-)dd[d].
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  double abs = std::fabs(v);
  if (abs < 1e-6 || abs >= 1e21) {
    // Go: "clean up e-09 to e-9".
    size_t n = sci.size();
    if (n >= 4 && sci[n - 4] == 'e' && sci[n - 3] == '-' && sci[n - 2] == '0') {
      sci.erase(n - 2, 1);
    }
    return sci;
  }
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < epos; ++k) {
    if (sci[k] != '.') digits += sci[k];
  }
  int exp = 0;
  const char* exp_begin = sci.data() + epos + 1;
  if (*exp_begin == '+') ++exp_begin;  // from_chars takes no '+'
  std::from_chars(exp_begin, sci.data() + sci.size(), exp);
  int n = static_cast<int>(digits.size());
  if (exp >= n - 1) {
    const int zeros = exp - (n - 1);
    out += digits;
    out.append(static_cast<size_t>(zeros), '0');
  } else if (exp >= 0) {
    const int whole = exp + 1;  // digits before the point
    out.append(digits, 0, static_cast<size_t>(whole));
    out += '.';
    out.append(digits, static_cast<size_t>(whole), std::string::npos);
  } else {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// RawJson tree

namespace {
// Nesting of ~Doc calls on this thread, to bound the recursion of the fast path.
thread_local unsigned doc_destruction_depth = 0;
constexpr unsigned kMaxRecursiveDestructionDepth = 64;
}  // namespace

RawJson::Doc::~Doc() {
  if (kids.empty()) return;
  if (doc_destruction_depth < kMaxRecursiveDestructionDepth) {
    // Shallow trees (every real message; a parsed document owns no other): children die by plain
    // recursion, at most 64 deep.
    ++doc_destruction_depth;
    kids.clear();
    --doc_destruction_depth;
    return;
  }
  // Deeper: documents owned only through this one are taken onto an explicit stack before they
  // die childless, so depth costs no recursion. (A borrowed child, use_count 0, is a node of the
  // document it is in: nothing to take.)
  std::vector<std::shared_ptr<Node>> stack;
  auto take_children = [&stack](Doc& d) {
    for (auto& v : d.kids) {
      if (v.node_ && v.node_.use_count() == 1 && !v.node_->doc->kids.empty()) {
        stack.push_back(std::move(v.node_));
      }
    }
    d.kids.clear();
  };
  take_children(*this);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (n.use_count() == 1) take_children(*n->doc);
  }
}

namespace internal {

bool IsJsonNumber(std::string_view s) {
  size_t i = 0;
  auto digit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digit(i)) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == s.size();
}

long long LeadingExponent(std::string_view s) {
  constexpr long long kZero = std::numeric_limits<long long>::min() / 2;
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  size_t e = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, e);
  size_t dot = mantissa.find('.');
  std::string_view int_part = mantissa.substr(0, dot);
  std::string_view frac =
      dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  long long lead = 0;
  if (size_t nz = int_part.find_first_not_of('0'); nz != std::string_view::npos) {
    lead = static_cast<long long>(int_part.size() - nz) - 1;
  } else if (size_t f = frac.find_first_not_of('0'); f != std::string_view::npos) {
    lead = -static_cast<long long>(f) - 1;
  } else {
    return kZero;
  }
  long long exp = 0;
  if (e != std::string_view::npos) {
    size_t i = e + 1;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    for (; i < s.size(); ++i) {
      if (exp < 1000000000) exp = exp * 10 + (s[i] - '0');
    }
    if (neg) exp = -exp;
  }
  return lead + exp;
}

// Clinger's fast path for the short decimals worker metrics are made of ("0.77", "-12.5", "3"): a
// number of at most 15 significant digits and no exponent is an integer mantissa below 2^53 (exact
// in a double) over 10^k with k <= 22 (exact too), so one IEEE division rounds it correctly, to
// the double strtod and from_chars give. nullopt for anything else (the general path).
std::optional<double> FastDecimal(std::string_view s) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) i = 1;
  uint64_t mantissa = 0;
  int digits = 0;    // significant digits taken into the mantissa
  int fraction = 0;  // digits after the point
  bool point = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (point) return std::nullopt;
      point = true;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;  // an exponent: the general path
    if (point) ++fraction;
    if (mantissa == 0 && c == '0') continue;  // leading zeros are not significant
    if (++digits > 15) return std::nullopt;
    mantissa = mantissa * 10 + static_cast<uint64_t>(c - '0');
  }
  if (fraction > 22) return std::nullopt;
  const double v = static_cast<double>(mantissa) / kPow10[fraction];
  return negative ? -v : v;
}

std::pair<std::shared_ptr<RawJson::Doc>, RawJson::Node*> NewSingle(RawJson::Type t,
                                                                   std::string text) {
  auto doc = std::make_shared<RawJson::Doc>();
  RawJson::Node* n = &doc->single;
  n->type = t;
  n->doc = doc.get();
  if (!text.empty()) {
    doc->owned_text = std::move(text);
    n->text_data = doc->owned_text.data();
    n->text_size = doc->owned_text.size();
  }
  return {std::move(doc), n};
}

}  // namespace internal

namespace {

using Node = RawJson::Node;
using internal::IsJsonNumber;
using internal::LeadingExponent;
using internal::NewSingle;

const RawJson& NullValue() {
  static const RawJson kNull;
  return kNull;
}

enum class DumpMode { kSorted, kInOrder, kFloat64 };

// Appends the member order of object `n` for the sorted modes to `order`: keys ascending
// bytewise, only the last of equal keys kept (Go map semantics).
void AppendSortedMembers(const Node& n, std::vector<uint32_t>& order) {
  const size_t base = order.size();
  const size_t count = n.count;
  const std::string_view* keys = &n.doc->keys[n.key_first];
  const auto less = [keys](uint32_t a, uint32_t b) { return keys[a] < keys[b]; };
  for (size_t i = 0; i < count; ++i) order.push_back(static_cast<uint32_t>(i));
  auto first = order.begin() + static_cast<std::ptrdiff_t>(base);
  if (count <= 16) {
    // Stable insertion sort: worker and GM objects are small.
    for (auto it = first + 1; it < order.end(); ++it) {
      const uint32_t v = *it;
      auto hole = it;
      while (hole != first && less(v, *(hole - 1))) {
        *hole = *(hole - 1);
        --hole;
      }
      *hole = v;
    }
  } else {
    std::stable_sort(first, order.end(), less);
  }
  // Keep the last of each run of equal keys.
  size_t out = base;
  for (size_t k = base; k < order.size(); ++k) {
    if (k + 1 < order.size() && keys[order[k + 1]] == keys[order[k]]) continue;
    order[out++] = order[k];
  }
  order.resize(out);
}

// The open containers of a dump and the member orders of its open sorted objects (innermost
// last), reused by the dumps on a thread; a dump's own when one on its thread is in progress.
struct DumpFrame {
  const Node* node;
  size_t order_begin;  // sorted objects: their member order in `order`
  size_t pos;
  size_t count;
  bool sorted;
};
struct DumpScratch {
  static constexpr size_t kKeep = 1024;  // capacity kept between dumps
  std::vector<DumpFrame> stack;
  std::vector<uint32_t> order;
  bool in_use = false;
};

template <DumpMode mode>
Status DumpTo(const RawJson& root, std::string& out) {
  thread_local DumpScratch per_thread;
  std::optional<DumpScratch> own;  // never in practice: a dump does not call back
  DumpScratch& scratch = per_thread.in_use ? own.emplace() : per_thread;
  scratch.in_use = true;
  struct Release {
    DumpScratch& s;
    ~Release() {
      s.stack.clear();
      s.order.clear();
      if (s.stack.capacity() > DumpScratch::kKeep) std::vector<DumpFrame>().swap(s.stack);
      if (s.order.capacity() > DumpScratch::kKeep) std::vector<uint32_t>().swap(s.order);
      s.in_use = false;
    }
  } release{scratch};
  std::vector<DumpFrame>& stack = scratch.stack;
  std::vector<uint32_t>& order = scratch.order;
  Status error;  // kFloat64: a number that does not fit a float64
  // Writes a scalar, or the opening bracket of a container and pushes its frame; false on error.
  auto visit = [&](const RawJson& v) -> bool {
    const Node* n = RawJsonAccess::node(v);
    if (n == nullptr) {
      out.append("null", 4);
      return true;
    }
    switch (n->type) {
      case RawJson::Type::kNull:
        out.append("null", 4);
        break;
      case RawJson::Type::kBool:
        if (n->boolean) {
          out.append("true", 4);
        } else {
          out.append("false", 5);
        }
        break;
      case RawJson::Type::kNumber:
        if constexpr (mode == DumpMode::kFloat64) {
          auto d = v.AsDouble();
          if (!d.ok()) {
            error = d.status();
            return false;
          }
          out += FormatGoFloat(*d);
        } else {
          out.append(n->text_data, n->text_size);
        }
        break;
      case RawJson::Type::kString:
        AppendGoString(out, n->text());
        break;
      case RawJson::Type::kArray:
        if (n->count == 0) {
          out.append("[]", 2);
          break;
        }
        out += '[';
        stack.push_back(DumpFrame{n, 0, 0, n->count, false});
        break;
      case RawJson::Type::kObject: {
        if (n->count == 0) {
          out.append("{}", 2);
          break;
        }
        out += '{';
        DumpFrame f{n, order.size(), 0, n->count, false};
        if constexpr (mode != DumpMode::kInOrder) {
          AppendSortedMembers(*n, order);
          f.count = order.size() - f.order_begin;
          f.sorted = true;
        }
        stack.push_back(f);
        break;
      }
    }
    return true;
  };
  if (!visit(root)) return error;
  while (!stack.empty()) {
    DumpFrame& f = stack.back();
    if (f.pos == f.count) {
      out += f.node->type == RawJson::Type::kArray ? ']' : '}';
      if (f.sorted) order.resize(f.order_begin);
      stack.pop_back();
      continue;
    }
    const size_t i = f.sorted ? order[f.order_begin + f.pos] : f.pos;
    if (f.pos > 0) out += ',';
    ++f.pos;
    const Node* n = f.node;  // `f` may dangle after visit() pushes
    if (n->type == RawJson::Type::kObject) {
      AppendGoString(out, n->key(i));
      out += ':';
    }
    if (!visit(n->child(i))) return error;
  }
  return Status::Ok();
}

}  // namespace

RawJson::RawJson() = default;

RawJson::RawJson(const RawJson& other) : node_(other.Shared()) {}

RawJson& RawJson::operator=(const RawJson& other) {
  if (this != &other) node_ = other.Shared();
  return *this;
}

std::shared_ptr<RawJson::Node> RawJson::Shared() const {
  if (node_ == nullptr || node_.use_count() != 0) return node_;
  // A child handle borrowed inside its document: share the document.
  return std::shared_ptr<Node>(node_->doc->shared_from_this(), node_.get());
}

RawJson RawJson::Null() { return RawJson(); }

RawJson RawJson::Bool(bool v) {
  auto [doc, n] = NewSingle(Type::kBool);
  n->boolean = v;
  return RawJsonAccess::Own(doc, n);
}

RawJson RawJson::String(std::string v) {
  auto [doc, n] = NewSingle(Type::kString, std::move(v));
  return RawJsonAccess::Own(doc, n);
}

RawJson RawJson::Number(double v) {
  if (!std::isfinite(v)) return RawJson();
  auto [doc, n] = NewSingle(Type::kNumber, FormatGoFloat(v));
  return RawJsonAccess::Own(doc, n);
}

RawJson RawJson::Integer(int64_t v) {
  auto [doc, n] = NewSingle(Type::kNumber, std::to_string(v));
  return RawJsonAccess::Own(doc, n);
}

Result<RawJson> RawJson::NumberText(std::string_view text) {
  if (!IsJsonNumber(text)) {
    return Result<RawJson>::Error("invalid JSON number \"" + std::string(text) + "\"");
  }
  auto [doc, n] = NewSingle(Type::kNumber, std::string(text));
  return RawJsonAccess::Own(doc, n);
}

RawJson RawJson::Array(std::vector<RawJson> elements) {
  auto [doc, n] = NewSingle(Type::kArray);
  n->count = static_cast<uint32_t>(elements.size());
  doc->kids = std::move(elements);
  return RawJsonAccess::Own(doc, n);
}

RawJson RawJson::Object(std::vector<std::pair<std::string, RawJson>> members) {
  auto [doc, n] = NewSingle(Type::kObject);
  n->count = static_cast<uint32_t>(members.size());
  doc->owned_keys.reserve(members.size());
  doc->kids.reserve(members.size());
  for (auto& m : members) {
    doc->owned_keys.push_back(std::move(m.first));
    doc->kids.push_back(std::move(m.second));
  }
  // Views only once owned_keys no longer moves (a short key's bytes are inside its string).
  doc->keys.assign(doc->owned_keys.begin(), doc->owned_keys.end());
  return RawJsonAccess::Own(doc, n);
}

RawJson::Type RawJson::type() const { return node_ ? node_->type : Type::kNull; }

const char* RawJson::type_name() const {
  switch (type()) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kNumber:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "null";
}

bool RawJson::bool_value() const { return is_bool() && node_->boolean; }

std::string_view RawJson::string_value() const {
  return is_string() ? node_->text() : std::string_view("");
}

std::string_view RawJson::number_text() const {
  return is_number() ? node_->text() : std::string_view("");
}

Result<double> RawJson::AsDouble() const {
  if (!is_number())
    return Result<double>::Error(std::string("expected a number, got ") + type_name());
  if (node_->has_double) return node_->number;
  const std::string_view s = node_->text();
  if (std::optional<double> fast = internal::FastDecimal(s)) return *fast;
  double v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec == std::errc() && res.ptr == s.data() + s.size()) return v;
  if (res.ec == std::errc::result_out_of_range && IsJsonNumber(s) && LeadingExponent(s) < 0) {
    return s[0] == '-' ? -0.0 : 0.0;  // underflow: Go yields ±0 without error
  }
  return Result<double>::Error("number " + std::string(s) + " does not fit a float64");
}

Result<int64_t> RawJson::AsInt64() const {
  if (!is_number()) {
    return Result<int64_t>::Error(std::string("expected an integer, got ") + type_name());
  }
  const std::string_view s = node_->text();
  if (s.find_first_of(".eE") != std::string_view::npos) {
    return Result<int64_t>::Error("expected an integer, got " + std::string(s));
  }
  int64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) {
    return Result<int64_t>::Error("integer " + std::string(s) + " out of range");
  }
  return v;
}

size_t RawJson::size() const { return (is_array() || is_object()) ? node_->count : 0; }

const RawJson& RawJson::operator[](size_t i) const {
  if (i >= size()) return NullValue();
  return node_->child(i);
}

std::string_view RawJson::key(size_t i) const {
  if (!is_object() || i >= node_->count) return "";
  return node_->key(i);
}

const RawJson* RawJson::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (size_t i = node_->count; i-- > 0;) {
    if (node_->key(i) == key) return &node_->child(i);
  }
  return nullptr;
}

std::string RawJson::Dump() const {
  std::string out;
  (void)DumpTo<DumpMode::kSorted>(*this, out);  // cannot fail in this mode
  return out;
}

void internal::AppendDump(const RawJson& v, std::string& out) {
  (void)DumpTo<DumpMode::kSorted>(v, out);  // cannot fail in this mode
}

std::string RawJson::DumpInOrder() const {
  std::string out;
  (void)DumpTo<DumpMode::kInOrder>(*this, out);  // cannot fail in this mode
  return out;
}

Result<std::string> RawJson::DumpAsFloat64() const {
  std::string out;
  if (Status s = DumpTo<DumpMode::kFloat64>(*this, out); !s.ok()) return s;
  return out;
}

}  // namespace sedna::json
