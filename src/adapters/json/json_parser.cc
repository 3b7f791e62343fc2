// RawJson::Parse: a strict, single-pass RFC 8259 parser over the input bytes.
//
// It replaced a parse through nlohmann's SAX interface, and keeps exactly that parser's
// behaviour, which json_parser_test.cc checks differentially: the same documents are accepted
// (plus the two limits RawJson always had: no NUL byte anywhere, at most kMaxDepth nested
// containers), with the same values, and rejected documents get the same error text, e.g.
// "parse error at line 1, column 6: syntax error while parsing value - unexpected end of input;
// expected '[', '{', or a literal". For that the scanner mirrors nlohmann's lexer where its
// choices show in messages: which token is read next, how far the lexer has read when it stops
// (the position), and the "token string" quoted after "last read:". Like nlohmann's (unlike Go's),
// it skips a UTF-8 byte order mark at the very start.
//
// The grammar is recursive; the parser keeps open containers on an explicit stack instead of the
// call stack, so kMaxDepth nesting costs no deep recursion on any thread.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/json/go_json.h"
#include "adapters/json/go_json_internal.h"
#include "adapters/json/kept_documents.h"

namespace sedna::json {
namespace {

using Node = RawJson::Node;
using internal::DocOwner;
using internal::TakeDoc;

// A null value among the finished values (a null has no node).
constexpr uint32_t kNullValue = UINT32_MAX;

enum class Tok : uint8_t {
  kUninitialized,  // only as "nothing expected" in messages
  kTrue,
  kFalse,
  kNull,
  kString,
  kNumber,
  kBeginArray,
  kBeginObject,
  kEndArray,
  kEndObject,
  kNameSeparator,
  kValueSeparator,
  kError,  // a lexical error; Parser::lex_error_ says which
  kEnd,
  kLiteralOrValue,  // only as "expected" in messages
};

bool StartsValue(Tok t) {
  return t == Tok::kTrue || t == Tok::kFalse || t == Tok::kNull || t == Tok::kString ||
         t == Tok::kNumber || t == Tok::kBeginArray || t == Tok::kBeginObject;
}

// nlohmann's lexer_base::token_type_name.
const char* TokenName(Tok t) {
  switch (t) {
    case Tok::kUninitialized:
      return "<uninitialized>";
    case Tok::kTrue:
      return "true literal";
    case Tok::kFalse:
      return "false literal";
    case Tok::kNull:
      return "null literal";
    case Tok::kString:
      return "string literal";
    case Tok::kNumber:
      return "number literal";
    case Tok::kBeginArray:
      return "'['";
    case Tok::kBeginObject:
      return "'{'";
    case Tok::kEndArray:
      return "']'";
    case Tok::kEndObject:
      return "'}'";
    case Tok::kNameSeparator:
      return "':'";
    case Tok::kValueSeparator:
      return "','";
    case Tok::kError:
      return "<parse error>";
    case Tok::kEnd:
      return "end of input";
    case Tok::kLiteralOrValue:
      return "'[', '{', or a literal";
  }
  return "unknown token";
}

// The bytes of `w` that need a closer look in a string (below 0x20, at or above 0x80, '"' or
// '\\'), as their high bits; 0 when there is none. The lowest flagged byte is always one of them
// (a borrow only flags bytes above a real match), so on a little-endian machine its index is
// countr_zero / 8.
inline uint64_t SpecialStringBytes(uint64_t w) {
  using namespace internal;
  return AnyHighByte(w) | AnyByteBelow(w, 0x20) | AnyByteIs(w, '"') | AnyByteIs(w, '\\');
}

// Bytes a string copies verbatim without a closer look: printable ASCII except '"' and '\'.
constexpr std::array<bool, 256> kPlainStringByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
  return t;
}();

// JSON's insignificant whitespace.
constexpr std::array<bool, 256> kSpaceByte = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {' ', '\n', '\r', '\t'}) t[c] = true;
  return t;
}();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    const char b[2] = {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
    out.append(b, 2);
  } else if (cp < 0x10000) {
    const char b[3] = {static_cast<char>(0xe0 | (cp >> 12)),
                       static_cast<char>(0x80 | ((cp >> 6) & 0x3f)),
                       static_cast<char>(0x80 | (cp & 0x3f))};
    out.append(b, 3);
  } else {
    const char b[4] = {
        static_cast<char>(0xf0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3f)),
        static_cast<char>(0x80 | ((cp >> 6) & 0x3f)), static_cast<char>(0x80 | (cp & 0x3f))};
    out.append(b, 4);
  }
}

// nlohmann's message for a raw control character inside a string.
const char* ControlCharacterError(unsigned char c) {
  static constexpr const char* kMessages[0x20] = {
      "invalid string: control character U+0000 (NUL) must be escaped to \\u0000",
      "invalid string: control character U+0001 (SOH) must be escaped to \\u0001",
      "invalid string: control character U+0002 (STX) must be escaped to \\u0002",
      "invalid string: control character U+0003 (ETX) must be escaped to \\u0003",
      "invalid string: control character U+0004 (EOT) must be escaped to \\u0004",
      "invalid string: control character U+0005 (ENQ) must be escaped to \\u0005",
      "invalid string: control character U+0006 (ACK) must be escaped to \\u0006",
      "invalid string: control character U+0007 (BEL) must be escaped to \\u0007",
      "invalid string: control character U+0008 (BS) must be escaped to \\u0008 or \\b",
      "invalid string: control character U+0009 (HT) must be escaped to \\u0009 or \\t",
      "invalid string: control character U+000A (LF) must be escaped to \\u000A or \\n",
      "invalid string: control character U+000B (VT) must be escaped to \\u000B",
      "invalid string: control character U+000C (FF) must be escaped to \\u000C or \\f",
      "invalid string: control character U+000D (CR) must be escaped to \\u000D or \\r",
      "invalid string: control character U+000E (SO) must be escaped to \\u000E",
      "invalid string: control character U+000F (SI) must be escaped to \\u000F",
      "invalid string: control character U+0010 (DLE) must be escaped to \\u0010",
      "invalid string: control character U+0011 (DC1) must be escaped to \\u0011",
      "invalid string: control character U+0012 (DC2) must be escaped to \\u0012",
      "invalid string: control character U+0013 (DC3) must be escaped to \\u0013",
      "invalid string: control character U+0014 (DC4) must be escaped to \\u0014",
      "invalid string: control character U+0015 (NAK) must be escaped to \\u0015",
      "invalid string: control character U+0016 (SYN) must be escaped to \\u0016",
      "invalid string: control character U+0017 (ETB) must be escaped to \\u0017",
      "invalid string: control character U+0018 (CAN) must be escaped to \\u0018",
      "invalid string: control character U+0019 (EM) must be escaped to \\u0019",
      "invalid string: control character U+001A (SUB) must be escaped to \\u001A",
      "invalid string: control character U+001B (ESC) must be escaped to \\u001B",
      "invalid string: control character U+001C (FS) must be escaped to \\u001C",
      "invalid string: control character U+001D (GS) must be escaped to \\u001D",
      "invalid string: control character U+001E (RS) must be escaped to \\u001E",
      "invalid string: control character U+001F (US) must be escaped to \\u001F",
  };
  return kMessages[c & 0x1f];
}

constexpr const char* kIllFormedUtf8 = "invalid string: ill-formed UTF-8 byte";
constexpr const char* kBadUnicodeEscape = "invalid string: '\\u' must be followed by 4 hex digits";
constexpr const char* kLoneHighSurrogate =
    "invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF";
constexpr const char* kLoneLowSurrogate =
    "invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF";

struct Frame {
  bool is_array;
  size_t values_begin;  // this container's elements / member values in `values`
  size_t keys_begin;    // an object's member keys in `keys`
};

// The parser's stacks, kept per thread so that a parse allocates only the document's blocks (its
// nodes and keys are built in place, in the document's own vectors).
struct Scratch {
  // Capacity kept between parses; a larger document's vectors are freed after it.
  static constexpr size_t kKeep = 256;

  std::vector<Frame> stack;
  std::vector<uint32_t> values;        // finished values not yet in a container: node or kNullValue
  std::vector<std::string_view> keys;  // keys of the open objects' members (in the text block)
  // The containers' children (node or kNullValue, each container's contiguous), as node indexes.
  std::vector<uint32_t> kids;
  bool in_use = false;
  // What the last document needed: a new document's nodes and keys start at that.
  size_t node_hint = 64, key_hint = 32;

  Scratch() {
    stack.reserve(16);
    values.reserve(64);
    keys.reserve(32);
    kids.reserve(64);
  }
  // Empties the vectors (releasing what a failed parse left), trimming oversized ones.
  void Reset() {
    stack.clear();
    values.clear();
    keys.clear();
    kids.clear();
    Trim(stack);
    Trim(values);
    Trim(keys);
    Trim(kids);
  }
  template <typename T>
  static void Trim(std::vector<T>& v) {
    if (v.capacity() > kKeep) std::vector<T>().swap(v);
  }
};

class Parser {
 public:
  // Builds the document in `doc` (empty), which Finish hands to the result.
  Parser(std::string_view text, size_t max_values, Scratch& scratch, DocOwner& doc)
      : max_values_(max_values),
        owner_(doc),
        doc_(*doc),
        begin_(text.data()),
        p_(text.data()),
        end_(text.data() + text.size()),
        stack_(scratch.stack),
        values_(scratch.values),
        keys_(scratch.keys),
        nodes_(doc->nodes),
        kids_(scratch.kids),
        doc_keys_(doc->keys),
        node_hint_(scratch.node_hint),
        key_hint_(scratch.key_hint) {
    if (doc_.text_capacity < text.size()) {
      doc_.text.reset();  // before the new block: at most one is held
      doc_.text_capacity = 0;
      doc_.text.reset(new char[text.size()]);
      doc_.text_capacity = text.size();
    }
    if (nodes_.capacity() == 0) nodes_.reserve(std::min(node_hint_, Scratch::kKeep));
    if (doc_keys_.capacity() == 0) doc_keys_.reserve(std::min(key_hint_, Scratch::kKeep));
  }

  Result<RawJson> Run();
  size_t values_seen() const { return values_seen_; }

 private:
  // ---- lexer

  // The next token. Punctuation is read here, inline in the parse loop; strings, numbers,
  // literals and errors out of line.
  [[gnu::always_inline]] Tok Next() {
    unget_newline_ = false;
    const char* q = p_;  // a local: the loop need not store p_ at each byte
    while (q != end_ && kSpaceByte[static_cast<unsigned char>(*q)]) ++q;
    p_ = q;
    if (q == end_) {
      read_end_ = end_;
      read_eof_ = true;
      return Tok::kEnd;
    }
    switch (*q) {
      case ',':
        return Token(Tok::kValueSeparator, q + 1);
      case ':':
        return Token(Tok::kNameSeparator, q + 1);
      case '"':
        return ScanString();
      case '[':
        return Token(Tok::kBeginArray, q + 1);
      case ']':
        return Token(Tok::kEndArray, q + 1);
      case '{':
        return Token(Tok::kBeginObject, q + 1);
      case '}':
        return Token(Tok::kEndObject, q + 1);
      default:
        return NextValue();
    }
  }
  // A token that is not punctuation or a string: a number, a literal or an error.
  [[gnu::noinline]] Tok NextValue();
  Tok ScanLiteral(std::string_view literal, Tok t);
  [[gnu::noinline]] Tok ScanString();
  Tok ScanNumber();
  // Reads 4 hex digits at p_ into *cp; on failure returns the offending position.
  const char* ReadHex4(uint32_t* cp);
  // A lexical error found by reading the byte at `at` (end_: by reading past the end).
  Tok LexError(const char* message, const char* at) {
    lex_error_ = message;
    read_eof_ = at == end_;
    read_end_ = read_eof_ ? end_ : at + 1;
    return Tok::kError;
  }
  // The current token ended just before `end` (no look-ahead byte consumed).
  Tok Token(Tok t, const char* end) {
    p_ = end;
    read_end_ = end;
    read_eof_ = false;
    return t;
  }

  // ---- tree

  // A finished value: a new node of type `t` (returned to fill in).
  [[gnu::always_inline]] Node& Emit(RawJson::Type t) {
    values_.push_back(static_cast<uint32_t>(nodes_.size()));
    Node& n = nodes_.emplace_back();
    n.type = t;
    n.doc = &doc_;
    return n;
  }
  void CloseContainer();
  // The finished document, its root the one value left.
  RawJson Finish();
  bool NumberFitsFloat64() const;

  // ---- errors

  Result<RawJson> SyntaxError(Tok last, Tok expected, const char* context) const;
  std::string Position() const;
  std::string TokenString() const;

  const size_t max_values_;
  size_t values_seen_ = 0;  // values begun so far
  DocOwner& owner_;
  // The document being built. Its text block (Doc::text) is a copy of the input, each escaped
  // string overwritten by its decoded bytes: strings, keys and numbers are views into it, at
  // their input offsets.
  RawJson::Doc& doc_;

  const char* const begin_;
  const char* p_;  // next byte to scan
  const char* const end_;

  // What nlohmann's lexer would have read for the current token, for error messages.
  const char* read_end_ = nullptr;     // bytes before this were read
  bool read_eof_ = false;              // and the end of input was read too
  bool unget_newline_ = false;         // the token is a number followed by '\n' (see Position())
  const char* token_start_ = nullptr;  // nlohmann's token_string starts here
  const char* lex_error_ = "";

  // The bytes of the text block at the input's `at`.
  char* TextAt(const char* at) const { return doc_.text.get() + (at - begin_); }

  // Value of the current token.
  std::string_view string_;    // kString: the decoded bytes, in the text block
  std::string str_;            // a string with escapes, decoded
  std::string_view number_;    // kNumber: the source text
  bool number_plain_ = false;  // kNumber: no exponent and at most 308 integer digits

  // Reused across parses on a thread (see Scratch), empty between parses.
  std::vector<Frame>& stack_;            // open containers, outermost first
  std::vector<uint32_t>& values_;        // finished values not yet in a container node
  std::vector<std::string_view>& keys_;  // keys of the open objects' members
  std::vector<Node>& nodes_;             // the document's
  std::vector<uint32_t>& kids_;
  std::vector<std::string_view>& doc_keys_;  // the document's
  size_t& node_hint_;
  size_t& key_hint_;
};

Tok Parser::NextValue() {
  switch (*p_) {
    case 't':
      return ScanLiteral("true", Tok::kTrue);
    case 'f':
      return ScanLiteral("false", Tok::kFalse);
    case 'n':
      return ScanLiteral("null", Tok::kNull);
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
      return ScanNumber();
    default:
      return LexError("invalid literal", p_);
  }
}

Tok Parser::ScanLiteral(std::string_view literal, Tok t) {
  for (size_t i = 1; i < literal.size(); ++i) {
    const char* q = p_ + i;
    if (q == end_ || *q != literal[i]) return LexError("invalid literal", q);
  }
  return Token(t, p_ + literal.size());
}

const char* Parser::ReadHex4(uint32_t* cp) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    if (p_ == end_) return end_;
    const int h = HexValue(*p_);
    if (h < 0) return p_;
    v = (v << 4) | static_cast<uint32_t>(h);
    ++p_;
  }
  *cp = v;
  return nullptr;
}

Tok Parser::ScanString() {
  token_start_ = p_;
  const char* const first = ++p_;
  const char* run = first;  // start of the bytes not yet copied to str_
  bool escaped = false;     // the value is being built in str_
  for (;;) {
    const char* q = p_;
    for (;;) {
      if (end_ - q < 8) {
        while (q != end_ && kPlainStringByte[static_cast<unsigned char>(*q)]) ++q;
        break;
      }
      uint64_t word;
      std::memcpy(&word, q, 8);
      if (const uint64_t special = SpecialStringBytes(word); special != 0) {
        if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
          q += __builtin_ctzll(special) / 8;
        } else {
          while (kPlainStringByte[static_cast<unsigned char>(*q)]) ++q;
        }
        break;
      }
      q += 8;
    }
    p_ = q;
    if (p_ == end_) return LexError("invalid string: missing closing quote", end_);
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      char* const at = TextAt(first);
      if (escaped) {
        str_.append(run, p_);
        std::memcpy(at, str_.data(), str_.size());  // never longer than its escaped source
        string_ = std::string_view(at, str_.size());
      } else {
        string_ = std::string_view(at, static_cast<size_t>(p_ - first));
      }
      return Token(Tok::kString, p_ + 1);
    }
    if (c == '\\') {
      if (!escaped) {
        escaped = true;
        str_.clear();
      }
      str_.append(run, p_);
      ++p_;
      if (p_ == end_) return LexError("invalid string: forbidden character after backslash", end_);
      switch (*p_) {
        case '"':
          str_ += '"';
          break;
        case '\\':
          str_ += '\\';
          break;
        case '/':
          str_ += '/';
          break;
        case 'b':
          str_ += '\b';
          break;
        case 'f':
          str_ += '\f';
          break;
        case 'n':
          str_ += '\n';
          break;
        case 'r':
          str_ += '\r';
          break;
        case 't':
          str_ += '\t';
          break;
        case 'u': {
          ++p_;
          uint32_t cp = 0;
          if (const char* bad = ReadHex4(&cp)) return LexError(kBadUnicodeEscape, bad);
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (p_ == end_ || *p_ != '\\') return LexError(kLoneHighSurrogate, p_);
            ++p_;
            if (p_ == end_ || *p_ != 'u') return LexError(kLoneHighSurrogate, p_);
            ++p_;
            uint32_t low = 0;
            if (const char* bad = ReadHex4(&low)) return LexError(kBadUnicodeEscape, bad);
            if (low < 0xdc00 || low > 0xdfff) return LexError(kLoneHighSurrogate, p_ - 1);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            return LexError(kLoneLowSurrogate, p_ - 1);
          }
          AppendUtf8(str_, cp);
          run = p_;
          continue;  // p_ is already past the escape
        }
        default:
          return LexError("invalid string: forbidden character after backslash", p_);
      }
      run = ++p_;
      continue;
    }
    if (c < 0x20) return LexError(ControlCharacterError(c), p_);
    // A multi-byte UTF-8 sequence: the well-formed ones of RFC 3629, checked byte by byte.
    unsigned char lo = 0x80, hi = 0xbf;
    int continuation;
    if (c >= 0xc2 && c <= 0xdf) {
      continuation = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      continuation = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      continuation = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return LexError(kIllFormedUtf8, p_);
    }
    ++p_;
    for (int k = 0; k < continuation; ++k, ++p_) {
      if (p_ == end_) return LexError(kIllFormedUtf8, end_);
      const auto b = static_cast<unsigned char>(*p_);
      if (b < lo || b > hi) return LexError(kIllFormedUtf8, p_);
      lo = 0x80;
      hi = 0xbf;
    }
  }
}

Tok Parser::ScanNumber() {
  token_start_ = p_;
  const char* q = p_;
  if (*q == '-') {
    ++q;
    if (q == end_ || !IsDigit(*q)) return LexError("invalid number; expected digit after '-'", q);
  }
  const char* int_begin = q;
  if (*q == '0') {
    ++q;
  } else {
    while (q != end_ && IsDigit(*q)) ++q;
  }
  const size_t int_digits = static_cast<size_t>(q - int_begin);
  bool exponent = false;
  if (q != end_ && *q == '.') {
    ++q;
    if (q == end_ || !IsDigit(*q)) return LexError("invalid number; expected digit after '.'", q);
    while (q != end_ && IsDigit(*q)) ++q;
  }
  if (q != end_ && (*q == 'e' || *q == 'E')) {
    exponent = true;
    ++q;
    if (q != end_ && (*q == '+' || *q == '-')) {
      ++q;
      if (q == end_ || !IsDigit(*q)) {
        return LexError("invalid number; expected digit after exponent sign", q);
      }
    } else if (q == end_ || !IsDigit(*q)) {
      return LexError("invalid number; expected '+', '-', or digit after exponent", q);
    }
    while (q != end_ && IsDigit(*q)) ++q;
  }
  number_ = std::string_view(p_, static_cast<size_t>(q - p_));
  number_plain_ = !exponent && int_digits <= 308;
  Tok t = Token(Tok::kNumber, q);
  // nlohmann's lexer read the byte after the number and put it back; for a '\n' that leaves
  // its column at 0 (see Position()).
  unget_newline_ = q != end_ && *q == '\n';
  return t;
}

// nlohmann converts every number with strtod (integers only when they overflow 64 bits) and
// rejects the ones that overflow to infinity; underflow is fine.
bool Parser::NumberFitsFloat64() const {
  if (number_plain_) return true;  // < 1e308 < DBL_MAX
  const long long lead = internal::LeadingExponent(number_);
  if (lead < 308) return true;
  if (lead > 308) return false;
  const std::string text(number_);
  return std::isfinite(std::strtod(text.c_str(), nullptr));
}

void Parser::CloseContainer() {
  const Frame f = stack_.back();
  stack_.pop_back();
  const auto vb = values_.begin() + static_cast<std::ptrdiff_t>(f.values_begin);
  const auto first = static_cast<uint32_t>(kids_.size());
  const auto count = static_cast<uint32_t>(values_.end() - vb);
  const auto key_first = static_cast<uint32_t>(doc_keys_.size());
  kids_.insert(kids_.end(), vb, values_.end());
  values_.erase(vb, values_.end());
  if (!f.is_array) {
    const auto kb = keys_.begin() + static_cast<std::ptrdiff_t>(f.keys_begin);
    doc_keys_.insert(doc_keys_.end(), std::make_move_iterator(kb),
                     std::make_move_iterator(keys_.end()));
    keys_.erase(kb, keys_.end());
  }
  Node& n = Emit(f.is_array ? RawJson::Type::kArray : RawJson::Type::kObject);
  n.first = first;
  n.count = count;
  n.key_first = key_first;
}

RawJson Parser::Finish() {
  const uint32_t root = values_.back();
  if (root == kNullValue) return RawJson();  // the document goes back unused
  node_hint_ = std::max<size_t>(nodes_.size(), 16);
  key_hint_ = std::max<size_t>(doc_keys_.size(), 16);
  doc_.kids.reserve(kids_.size());
  for (uint32_t k : kids_) {
    doc_.kids.push_back(k == kNullValue ? RawJson() : RawJsonAccess::Borrow(&nodes_[k]));
  }
  std::shared_ptr<RawJson::Doc> doc(std::move(owner_));
  return RawJsonAccess::Own(doc, &doc->nodes[root]);
}

// Mirrors nlohmann's parser::sax_parse(strict) with the depth limit RawJson adds.
Result<RawJson> Parser::Run() {
  if (begin_ != end_) std::memcpy(doc_.text.get(), begin_, static_cast<size_t>(end_ - begin_));
  token_start_ = begin_;
  // nlohmann's lexer skips a UTF-8 byte order mark at the start; a partial one is an error.
  if (p_ != end_ && static_cast<unsigned char>(*p_) == 0xef) {
    for (unsigned char want : {0xbb, 0xbf}) {
      ++p_;
      if (p_ == end_ || static_cast<unsigned char>(*p_) != want) {
        LexError("invalid BOM; must be 0xEF 0xBB 0xBF if given", p_);
        return SyntaxError(Tok::kError, Tok::kUninitialized, "value");
      }
    }
    ++p_;
  }

  Tok tok = Next();
  for (;;) {
    // `tok` starts a value.
    if (StartsValue(tok) && ++values_seen_ > max_values_) {
      return Result<RawJson>::Error("invalid JSON: more than " + std::to_string(max_values_) +
                                    " values");
    }
    switch (tok) {
      case Tok::kBeginObject:
      case Tok::kBeginArray: {
        if (stack_.size() >= RawJson::kMaxDepth) {
          return Result<RawJson>::Error("invalid JSON: exceeded max depth " +
                                        std::to_string(RawJson::kMaxDepth));
        }
        const bool is_array = tok == Tok::kBeginArray;
        tok = Next();
        if (tok == (is_array ? Tok::kEndArray : Tok::kEndObject)) {
          Emit(is_array ? RawJson::Type::kArray : RawJson::Type::kObject);
          break;
        }
        if (!is_array) {
          if (tok != Tok::kString) return SyntaxError(tok, Tok::kString, "object key");
          keys_.emplace_back(string_);
          tok = Next();
          if (tok != Tok::kNameSeparator) {
            return SyntaxError(tok, Tok::kNameSeparator, "object separator");
          }
          tok = Next();
        }
        stack_.push_back(Frame{is_array, values_.size(), keys_.size() - (is_array ? 0 : 1)});
        continue;  // `tok` starts the first element
      }
      case Tok::kString: {
        Node& n = Emit(RawJson::Type::kString);
        n.text_data = string_.data();
        n.text_size = string_.size();
        break;
      }
      case Tok::kNumber: {
        if (!NumberFitsFloat64()) {
          return Result<RawJson>::Error("invalid JSON: number overflow parsing '" +
                                        std::string(number_) + "'");
        }
        Node& n = Emit(RawJson::Type::kNumber);
        n.text_data = TextAt(number_.data());
        n.text_size = number_.size();
        if (std::optional<double> d = internal::FastDecimal(number_)) {
          n.has_double = true;
          n.number = *d;
        }
        break;
      }
      case Tok::kTrue:
      case Tok::kFalse:
        Emit(RawJson::Type::kBool).boolean = tok == Tok::kTrue;
        break;
      case Tok::kNull:
        values_.push_back(kNullValue);
        break;
      case Tok::kError:
        return SyntaxError(tok, Tok::kUninitialized, "value");
      default:
        return SyntaxError(tok, Tok::kLiteralOrValue, "value");
    }

    // A value is complete: close containers until one continues with another value.
    bool more = false;
    while (!more) {
      if (stack_.empty()) {
        tok = Next();
        if (tok != Tok::kEnd) return SyntaxError(tok, Tok::kEnd, "value");
        return Finish();
      }
      const bool is_array = stack_.back().is_array;
      tok = Next();
      if (tok == Tok::kValueSeparator) {
        tok = Next();
        if (!is_array) {
          if (tok != Tok::kString) return SyntaxError(tok, Tok::kString, "object key");
          keys_.emplace_back(string_);
          tok = Next();
          if (tok != Tok::kNameSeparator) {
            return SyntaxError(tok, Tok::kNameSeparator, "object separator");
          }
          tok = Next();
        }
        more = true;
      } else if (tok == (is_array ? Tok::kEndArray : Tok::kEndObject)) {
        CloseContainer();
      } else {
        return is_array ? SyntaxError(tok, Tok::kEndArray, "array")
                        : SyntaxError(tok, Tok::kEndObject, "object");
      }
    }
  }
}

// ---- error messages (cold)

// nlohmann's position: line = '\n's read + 1, column = bytes read since the last '\n' (reading the
// end of input counts as one byte). Putting back a '\n' after a number leaves the column at 0.
std::string Parser::Position() const {
  const size_t read = static_cast<size_t>(read_end_ - begin_);
  size_t lines = 0;
  size_t line_start = 0;
  for (size_t i = 0; i < read; ++i) {
    if (begin_[i] == '\n') {
      ++lines;
      line_start = i + 1;
    }
  }
  size_t column = read + (read_eof_ ? 1 : 0) - line_start;
  if (unget_newline_) column = 0;
  return "line " + std::to_string(lines + 1) + ", column " + std::to_string(column);
}

// nlohmann's get_token_string(): the bytes read since the current string or number token began
// (or since the start), control characters as <U+XXXX>.
std::string Parser::TokenString() const {
  std::string out;
  for (const char* q = token_start_; q < read_end_; ++q) {
    const auto c = static_cast<unsigned char>(*q);
    if (c <= 0x1f) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "<U+%.4X>", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// nlohmann's parser::exception_message inside its parse_error text.
Result<RawJson> Parser::SyntaxError(Tok last, Tok expected, const char* context) const {
  std::string msg = "invalid JSON: parse error at " + Position() + ": syntax error while parsing ";
  msg += context;
  msg += " - ";
  if (last == Tok::kError) {
    msg += lex_error_;
    msg += "; last read: '";
    msg += TokenString();
    msg += '\'';
  } else {
    msg += "unexpected ";
    msg += TokenName(last);
  }
  if (expected != Tok::kUninitialized) {
    msg += "; expected ";
    msg += TokenName(expected);
  }
  return Result<RawJson>::Error(std::move(msg));
}

}  // namespace

Result<RawJson> RawJson::Parse(std::string_view text) {
  return Parse(text, std::numeric_limits<size_t>::max());
}

Result<RawJson> RawJson::Parse(std::string_view text, size_t max_values) {
  return Parse(text, &max_values);
}

Result<RawJson> RawJson::Parse(std::string_view text, size_t* value_budget) {
  const size_t max_values = *value_budget;
  // JSON allows no NUL byte anywhere (nlohmann would stop at one as if at the end of input).
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Result<RawJson>::Error("invalid JSON: unexpected NUL byte at offset " +
                                  std::to_string(nul));
  }
  thread_local Scratch per_thread;
  std::optional<Scratch> own;  // only if a parse were ever nested in another on this thread
  Scratch& scratch = per_thread.in_use ? own.emplace() : per_thread;
  scratch.in_use = true;
  struct Release {
    Scratch& s;
    ~Release() {
      s.Reset();
      s.in_use = false;
    }
  } release{scratch};
  try {
    DocOwner doc = TakeDoc();
    Parser parser(text, max_values, scratch, doc);
    Result<RawJson> r = parser.Run();
    *value_budget = max_values - std::min(parser.values_seen(), max_values);
    return r;
  } catch (const std::exception& e) {  // std::bad_alloc
    return Result<RawJson>::Error(std::string("invalid JSON: ") + e.what());
  }
}

}  // namespace sedna::json
