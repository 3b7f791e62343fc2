// Differential tests of RawJson::Parse (json_parser.cc) against two oracles:
//  * LegacyParse: the implementation it replaced, verbatim (nlohmann's SAX parser fed through an
//    iterator that tracks the last byte read, building the tree with the public factories). The
//    new parser must accept the same documents, build the same trees (types, bytes of strings and
//    keys, number text, member order and duplicates) and reject the others with the same message.
//  * nlohmann::json::parse: the same documents accepted, with the same values (numbers compared
//    as nlohmann reads them), except for the two limits RawJson adds (no NUL byte, at most
//    kMaxDepth nesting), which the table tests pin.
// Inputs: a table of hand-written cases for every rule and error path, then documents from a
// deterministic pseudo-random generator (fixed seed), mutated copies of them, and random byte
// soups over JSON's alphabet.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/json/go_json.h"
#include "adapters/json/test_util.h"

namespace sedna::json {
namespace {

using testing::NestedArrays;

// ---- the replaced implementation ---------------------------------------------------------------

class TrackingIter {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIter(const char* p, const char** last_read) : p_(p), last_read_(last_read) {}
  reference operator*() const {
    *last_read_ = p_;
    return *p_;
  }
  TrackingIter& operator++() {
    ++p_;
    return *this;
  }
  TrackingIter operator++(int) {
    TrackingIter t = *this;
    ++p_;
    return t;
  }
  bool operator==(const TrackingIter& o) const { return p_ == o.p_; }
  bool operator!=(const TrackingIter& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** last_read_;
};

class LegacyBuilder {
 public:
  using json = nlohmann::json;

  LegacyBuilder(const char* begin, const char* const* last_read)
      : begin_(begin), last_read_(last_read) {}

  bool null() { return Add(RawJson()); }
  bool boolean(bool v) { return Add(RawJson::Bool(v)); }
  bool number_integer(json::number_integer_t v) {
    if (v == 0 && IsNegativeZero()) return AddNumber("-0");
    return AddNumber(std::to_string(v));
  }
  bool number_unsigned(json::number_unsigned_t v) { return AddNumber(std::to_string(v)); }
  bool number_float(json::number_float_t, const json::string_t& lexeme) {
    return AddNumber(lexeme);
  }
  bool string(json::string_t& v) { return Add(RawJson::String(std::move(v))); }
  bool binary(json::binary_t&) {
    error_ = "unexpected binary value";
    return false;
  }
  bool start_object(std::size_t) { return Open(false); }
  bool key(json::string_t& k) {
    stack_.back().keys.push_back(std::move(k));
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(true); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    if (!what.empty() && what[0] == '[') {
      size_t close = what.find("] ");
      if (close != std::string::npos) what.erase(0, close + 2);
    }
    error_ = what;
    return false;
  }

  RawJson TakeRoot() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  struct Open_ {
    bool is_array;
    std::vector<RawJson> values;
    std::vector<std::string> keys;
  };

  bool IsNegativeZero() const {
    const char* last = *last_read_;
    if (last == nullptr) return false;
    const char* end = (*last >= '0' && *last <= '9') ? last + 1 : last;
    return end - begin_ >= 2 && end[-1] == '0' && end[-2] == '-';
  }
  bool AddNumber(const std::string& text) {
    auto n = RawJson::NumberText(text);
    if (!n.ok()) {
      error_ = "bad number text " + text;
      return false;
    }
    return Add(*n);
  }
  bool Open(bool is_array) {
    if (stack_.size() >= RawJson::kMaxDepth) {
      error_ = "exceeded max depth " + std::to_string(RawJson::kMaxDepth);
      return false;
    }
    stack_.push_back(Open_{is_array, {}, {}});
    return true;
  }
  bool Close() {
    Open_ top = std::move(stack_.back());
    stack_.pop_back();
    if (top.is_array) return Add(RawJson::Array(std::move(top.values)));
    std::vector<std::pair<std::string, RawJson>> members;
    for (size_t i = 0; i < top.values.size(); ++i) {
      members.emplace_back(std::move(top.keys[i]), std::move(top.values[i]));
    }
    return Add(RawJson::Object(std::move(members)));
  }
  bool Add(RawJson v) {
    if (stack_.empty()) {
      root_ = std::move(v);
    } else {
      stack_.back().values.push_back(std::move(v));
    }
    return true;
  }

  const char* begin_;
  const char* const* last_read_;
  RawJson root_;
  std::vector<Open_> stack_;
  std::string error_;
};

Result<RawJson> LegacyParse(std::string_view text) {
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return Result<RawJson>::Error("invalid JSON: unexpected NUL byte at offset " +
                                  std::to_string(nul));
  }
  try {
    const char* last_read = nullptr;
    LegacyBuilder builder(text.data(), &last_read);
    TrackingIter first(text.data(), &last_read);
    TrackingIter last(text.data() + text.size(), &last_read);
    bool ok = nlohmann::json::sax_parse(first, last, &builder);
    if (!ok) {
      std::string err = builder.error().empty() ? "parse failed" : builder.error();
      return Result<RawJson>::Error("invalid JSON: " + err);
    }
    return builder.TakeRoot();
  } catch (const std::exception& e) {
    return Result<RawJson>::Error(std::string("invalid JSON: ") + e.what());
  }
}

// ---- comparison --------------------------------------------------------------------------------

// "" when a and b are the same tree, else where and how they differ.
std::string TreeDifference(const RawJson& a, const RawJson& b) {
  std::vector<std::pair<const RawJson*, const RawJson*>> stack{{&a, &b}};
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    if (x->type() != y->type()) {
      return std::string("type ") + x->type_name() + " vs " + y->type_name();
    }
    if (x->bool_value() != y->bool_value()) return "bool value";
    if (x->string_value() != y->string_value()) {
      return "string " + std::string(x->string_value()) + " vs " + std::string(y->string_value());
    }
    if (x->number_text() != y->number_text()) {
      return "number " + std::string(x->number_text()) + " vs " + std::string(y->number_text());
    }
    if (x->size() != y->size()) return "size";
    for (size_t i = 0; i < x->size(); ++i) {
      if (x->key(i) != y->key(i)) {
        return "key " + std::string(x->key(i)) + " vs " + std::string(y->key(i));
      }
      stack.emplace_back(&(*x)[i], &(*y)[i]);
    }
  }
  return "";
}

// `s` with bytes outside printable ASCII as \xHH, cut to a few hundred bytes.
std::string Printable(std::string_view s) {
  std::string out;
  if (s.size() > 300) {
    return Printable(s.substr(0, 150)) + "...(" + std::to_string(s.size()) + " bytes)..." +
           Printable(s.substr(s.size() - 150));
  }
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

struct Tally {
  size_t accepted = 0;
  size_t rejected = 0;
};

// Checks one input against both oracles; returns whether the new parser accepted it. `deep`
// (nesting near or over kMaxDepth) skips the comparison with nlohmann::json::parse, which has no
// depth limit and whose operator== recurses.
bool CheckSame(std::string_view text, Tally* tally = nullptr, bool deep = false) {
  SCOPED_TRACE("input: \"" + Printable(text) + "\"");
  Result<RawJson> got = RawJson::Parse(text);
  Result<RawJson> want = LegacyParse(text);
  EXPECT_EQ(got.ok(), want.ok()) << "new: " << got.message() << "\nlegacy: " << want.message();
  if (got.ok() && want.ok()) {
    EXPECT_EQ(TreeDifference(*got, *want), "");
  } else if (!got.ok() && !want.ok()) {
    EXPECT_EQ(got.message(), want.message());
  }
  // nlohmann::json::parse itself (it stops at a NUL as if at the end, and has no depth limit).
  if (!HasNul(text) && !deep) {
    nlohmann::json direct = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    EXPECT_EQ(got.ok(), !direct.is_discarded()) << got.message();
    if (got.ok() && !direct.is_discarded()) {
      // Dump() collapses duplicate keys to the last one as nlohmann's DOM does, and keeps
      // number text, which nlohmann then reads as it read the original.
      EXPECT_EQ(nlohmann::json::parse(got->Dump()), direct);
    }
  }
  if (tally != nullptr) ++(got.ok() ? tally->accepted : tally->rejected);
  return got.ok();
}

// ---- table -------------------------------------------------------------------------------------

TEST(JsonParser, MatchesTheReplacedParserOnHandWrittenCases) {
  const std::string kCases[] = {
      // Scalars, whitespace, BOM.
      "null",
      "true",
      "false",
      "0",
      "-0",
      "\"\"",
      " \t\r\n null \t\r\n",
      "\xef\xbb\xbf{}",
      "\xef\xbb\xbf",
      "\xef\xbb",
      "\xef",
      "\xef\xbb\xbe[]",
      "\xef\xbf\xbb{}",
      " \xef\xbb\xbf{}",
      "{}\xef\xbb\xbf",
      "\xfe\xff{}",
      // Empty and whitespace-only input.
      "",
      " ",
      "\n",
      "\n\n  ",
      "\r\n",
      // Literals.
      "tru",
      "trux",
      "truee",
      "t",
      "nul",
      "nulL",
      "fals",
      "falsy",
      "True",
      "NULL",
      "[true,fals]",
      "{\"a\":tru}",
      "[1,nx]",
      "[\"s\",tr\n]",
      "nan",
      "NaN",
      "Infinity",
      "-Infinity",
      "undefined",
      // Numbers.
      "0.70",
      "1E2",
      "1e-07",
      "-0.0",
      "42",
      "-42",
      "18446744073709551615",
      "18446744073709551616",
      "-9223372036854775808",
      "-9223372036854775809",
      "123456789012345678901234567890",
      "1e-400",
      "-1e-400",
      "1e400",
      "-1e400",
      "1e308",
      "1.7976931348623157e308",
      "1.7976931348623158e308",
      "1.7976931348623159e308",
      "1.8e308",
      "17976931348623157e292",
      "0.00001e313",
      "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558"
      "632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245"
      "490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168"
      "738177180919299881250404026184124858368",
      "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017"
      "977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273"
      "854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704"
      "342711559699508093042880177904174497792",
      std::string(309, '9'),
      std::string(308, '9'),
      "0." + std::string(400, '0') + "1",
      "1" + std::string(400, '0') + "e-100",
      "01",
      "00",
      "-01",
      "1.",
      "1.e5",
      ".5",
      "-",
      "--1",
      "-a",
      "+1",
      "1e",
      "1e+",
      "1e-",
      "1E+x",
      "1ex",
      "1.5e",
      "0x10",
      "1_000",
      "1.2.3",
      "1e2e3",
      "0e0",
      "0E-0",
      "-0e+00",
      "2.",
      "[1.]",
      "[1e]",
      "[-]",
      "{\"a\":-}",
      "[01]",
      "[1 2]",
      "1 2",
      "12\n3",
      "[1\n,2\n]",
      "{1\n:2}",
      "{\"a\" 1\n}",
      "{\"a\":1\n\"b\":2}",
      "{1:2}",
      "[1,2\n3]",
      "1\n2",
      "1\r\n2",
      "  7\n  8\n",
      // Strings: escapes, Unicode, UTF-8, control characters.
      R"("\"\\\/\b\f\n\r\t")",
      R"("\u0041\u00e9\u20ac\ud83d\ude00")",
      R"("\u0000")",
      R"("\uD834\uDD1E")",
      R"("\ud800")",
      R"("\ud800x")",
      R"("\ud800\")",
      R"("\ud800\n")",
      R"("\ud800\u")",
      R"("\ud800\u12")",
      R"("\ud800\u0041")",
      R"("\ud800\udbff")",
      R"("\udc00")",
      R"("\udfff\ud800")",
      R"("\u12")",
      R"("\u12G4")",
      R"("\u")",
      R"("\U0041")",
      R"("\x41")",
      R"("\a")",
      R"("\ ")",
      "\"\\",
      "\"\\u",
      "\"\\ud800",
      "\"\\ud800\\",
      "\"abc",
      "\"",
      "[\"a",
      "{\"a",
      "{\"a\"",
      "{\"a\":",
      "{\"a\":\"",
      "\"a\x01b\"",
      "\"\x1f\"",
      "\"\t\"",
      "\"\n\"",
      "\"\r\"",
      "\"\x7f\"",
      "\"caf\xc3\xa9\"",
      "\"\xf0\x9f\x98\x80\"",
      "\"\xe2\x80\xa8\"",
      "\"\xff\"",
      "\"\x80\"",
      "\"\xc0\xaf\"",
      "\"\xc1\xbf\"",
      "\"\xc2\"",
      "\"\xc2\x7f\"",
      "\"\xc2\xc0\"",
      "\"\xe0\x80\x80\"",
      "\"\xe0\xa0\x80\"",
      "\"\xe0\xa0\"",
      "\"\xed\x9f\xbf\"",
      "\"\xed\xa0\x80\"",
      "\"\xee\x80\x80\"",
      "\"\xef\xbf\xbf\"",
      "\"\xf0\x8f\xbf\xbf\"",
      "\"\xf0\x90\x80\x80\"",
      "\"\xf4\x8f\xbf\xbf\"",
      "\"\xf4\x90\x80\x80\"",
      "\"\xf5\x80\x80\x80\"",
      "\"\xf8\x88\x80\x80\x80\"",
      "\"\xf1\x80\x80\"",
      "\"\xf1\x80\x80",
      "\xc3\xa9",
      "[\xff]",
      "\"ok\"\xff",
      "\"a\"\"b\"",
      // Structure.
      "[]",
      "{}",
      "[[]]",
      "[{}]",
      "{\"a\":{}}",
      "[1,]",
      "[,1]",
      "[,]",
      "[1,,2]",
      "{,}",
      "{\"a\":1,}",
      "{\"a\" \"b\"}",
      "{\"a\"::1}",
      "{\"a\":1:2}",
      "{\"a\",1}",
      "{'a':1}",
      "{a:1}",
      "[1}",
      "{\"a\":1]",
      "]",
      "}",
      ":",
      ",",
      "[",
      "{",
      "[[",
      "[[[]]",
      "{\"a\":[}",
      "[1]]",
      "{\"a\":1}}",
      "{\"a\":1} x",
      "[1] [2]",
      "{}{}",
      "1,",
      "\"a\":1",
      "{\"\":\"\"}",
      "{\"a\":1,\"a\":2,\"a\":[3]}",
      "{\"b\":1,\"a\":{\"z\":true,\"y\":null},\"b\":[3,\"x\"]}",
      "/* c */ {}",
      "// c\n{}",
      "{}/",
      "#",
      "@",
      "[1,2,3]\n\n\n]",
      "[\n\n\n}",
      // Positions across lines.
      "{\n  \"a\": 1,\n  \"b\": x\n}",
      "{\n\t\"a\":\n\t\t[1, 2,\n\t\t\"x\" \"y\"]}",
      "\n\n\n",
      "[\r\n1\r\n,\r\n]",
      "{\"a\":1,\n\"b\":01}",
      "[0\n1]",
      "[-0\n1]",
      "[1.5\n2]",
      "[1e5\nx]",
      "{\"k\":\"v\"\n,\n2}",
      "[\"\n\"]",
      "[\"\\\n\"]",
      "{\n\"a\":\"\\u12\n\"}",
  };
  Tally tally;
  for (const std::string& text : kCases) CheckSame(text, &tally);
  EXPECT_GT(tally.accepted, 40u);
  EXPECT_GT(tally.rejected, 150u);
}

TEST(JsonParser, MatchesOnEveryControlCharacterAndByte) {
  for (int c = 0; c < 256; ++c) {
    const std::string b(1, static_cast<char>(c));
    for (const std::string& text :
         {b, "\"" + b + "\"", "[" + b + "]", "\"\\" + b + "\"", "{\"a\"" + b + ":1}", "1" + b,
          "[1" + b + "2]", "\"\\u00" + b + "0\"", "\"a" + b + "\xa9\"", b + "\x80\x80\x80"}) {
      CheckSame(text);
    }
  }
}

// A string is scanned eight bytes at a time, and the first byte that needs a closer look is
// found inside its word (RawJson::Parse's ScanString): every byte value, at every offset of the
// first three words, after plain bytes and after another such byte, each string cut off there or
// closed later.
TEST(JsonParser, MatchesWhereverTheFirstSpecialByteFallsInAWord) {
  Tally tally;
  for (int c = 0; c < 256; ++c) {
    if (c == 0) continue;  // NUL: RawJson's own limit, checked above the parser
    const std::string b(1, static_cast<char>(c));
    for (size_t k = 0; k < 24; ++k) {
      const std::string plain(k, 'x');
      for (const std::string& text :
           {"\"" + plain + b + "\"", "\"" + plain + b + "yyyyyyyyy\"", "\"" + plain + b,
            "\"" + plain + "\\n" + b + "\"", "[\"" + plain + b + "\xa9\x80\"]",
            "{\"" + plain + b + "\":\"" + plain + "\"}"}) {
        CheckSame(text, &tally);
      }
    }
    if (::testing::Test::HasFailure()) break;  // one report is enough
  }
  EXPECT_GT(tally.accepted, 2000u);
  EXPECT_GT(tally.rejected, 5000u);
}

TEST(JsonParser, KeepsRawJsonLimits) {
  // NUL anywhere: rejected with its offset (nlohmann alone would stop there as at the end).
  for (const std::string& text : {std::string("{}\0", 3), std::string("[\"a\0\"]", 6),
                                  std::string("\0", 1), std::string("[1,\0 x", 6)}) {
    auto j = RawJson::Parse(text);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.message().rfind("invalid JSON: unexpected NUL byte at offset ", 0), 0u);
    CheckSame(text);
  }
  // Depth: kMaxDepth parses, one more fails at the opening bracket, before any later error.
  const auto Deep = [](const std::string& text) { CheckSame(text, nullptr, /*deep=*/true); };
  Deep(NestedArrays(RawJson::kMaxDepth, "1"));
  Deep(NestedArrays(RawJson::kMaxDepth, "{}"));
  Deep(NestedArrays(RawJson::kMaxDepth - 1, "{\"a\":[]}"));
  Deep(NestedArrays(RawJson::kMaxDepth - 1, "{\"a\":[[]]}"));
  Deep(NestedArrays(RawJson::kMaxDepth + 1));
  Deep(std::string(RawJson::kMaxDepth + 1, '[') + "x");
  Deep(std::string(RawJson::kMaxDepth, '[') + "x");
  Deep(std::string(RawJson::kMaxDepth, '[') + "1" + std::string(RawJson::kMaxDepth - 1, ']'));
  std::string objects;
  for (size_t i = 0; i <= RawJson::kMaxDepth; ++i) objects += "{\"a\":";
  Deep(objects);
}

// ---- generated documents -----------------------------------------------------------------------

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  std::string Document() {
    std::string out;
    if (OneIn(50)) out += "\xef\xbb\xbf";
    Space(out);
    Value(out, 0);
    Space(out);
    return out;
  }

  // A copy of `doc` with a few random edits.
  std::string Mutate(std::string doc) {
    static const std::string kAlphabet = std::string("{}[]:,\"\\/ \t\r\n0123456789-+.eEtrufalsn") +
                                         "xuUabcdf" + "\x01\x1f\x7f" +
                                         "\x80\xbf\xc2\xdf\xe0\xed\xef\xf0\xf4\xf5\xff\xbb";
    const size_t edits = 1 + Below(3);
    for (size_t e = 0; e < edits; ++e) {
      const size_t pos = doc.empty() ? 0 : Below(doc.size() + 1);
      switch (Below(7)) {
        case 0:  // delete a byte
          if (pos < doc.size()) doc.erase(pos, 1);
          break;
        case 1:  // insert a byte
          doc.insert(doc.begin() + static_cast<std::ptrdiff_t>(pos),
                     kAlphabet[Below(kAlphabet.size())]);
          break;
        case 2:  // replace a byte
          if (pos < doc.size()) doc[pos] = kAlphabet[Below(kAlphabet.size())];
          break;
        case 3:  // truncate
          doc.resize(pos);
          break;
        case 4:  // duplicate a span
          if (pos < doc.size()) {
            doc.insert(pos, doc.substr(pos, 1 + Below(8)));
          }
          break;
        case 5:  // any byte at all
          if (pos < doc.size()) doc[pos] = static_cast<char>(Below(256));
          break;
        default:  // swap two bytes
          if (doc.size() >= 2) std::swap(doc[Below(doc.size())], doc[Below(doc.size())]);
          break;
      }
    }
    return doc;
  }

  // Up to `max_len` bytes over JSON's alphabet, with a bias to tokens.
  std::string Soup(size_t max_len) {
    static const char* const kPieces[] = {
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "\\",
        " ",
        "\n",
        "\t",
        "\r",
        "0",
        "1",
        "9",
        "-",
        "+",
        ".",
        "e",
        "E",
        "true",
        "false",
        "null",
        "tr",
        "\\u",
        "\\ud83d",
        "\\ude00",
        "\xc3\xa9",
        "\xe2\x82\xac",
        "\xf0\x9f\x98\x80",
        "\xff",
        "\x80",
        "a",
        "\x01",
        "\xef\xbb\xbf",
        "/",
        "\"a\":",
    };
    std::string out;
    const size_t n = Below(max_len + 1);
    while (out.size() < n) out += kPieces[Below(std::size(kPieces))];
    return out;
  }

 private:
  void Space(std::string& out) {
    static const char kSpace[] = {' ', '\t', '\r', '\n'};
    if (!OneIn(3)) return;
    const size_t n = 1 + Below(3);
    for (size_t i = 0; i < n; ++i) out += kSpace[Below(4)];
  }

  void Value(std::string& out, int depth) {
    const size_t kind = depth >= 6 ? Below(5) : Below(8);
    switch (kind) {
      case 0:
        out += "null";
        break;
      case 1:
        out += OneIn(2) ? "true" : "false";
        break;
      case 2:
      case 3:
        Number(out);
        break;
      case 4:
        String(out);
        break;
      case 5:
      case 6: {
        out += '{';
        const size_t n = Below(5);
        for (size_t i = 0; i < n; ++i) {
          if (i > 0) out += ',';
          Space(out);
          if (OneIn(6) && i > 0) {
            out += "\"k\"";  // duplicate keys
          } else {
            String(out);
          }
          Space(out);
          out += ':';
          Space(out);
          Value(out, depth + 1);
          Space(out);
        }
        if (n == 0) Space(out);
        out += '}';
        break;
      }
      default: {
        out += '[';
        const size_t n = Below(5);
        for (size_t i = 0; i < n; ++i) {
          if (i > 0) out += ',';
          Space(out);
          Value(out, depth + 1);
          Space(out);
        }
        if (n == 0) Space(out);
        out += ']';
        break;
      }
    }
  }

  void Digits(std::string& out, size_t max) {
    const size_t n = 1 + Below(max);
    for (size_t i = 0; i < n; ++i) out += static_cast<char>('0' + Below(10));
  }

  void Number(std::string& out) {
    if (OneIn(3)) out += '-';
    if (OneIn(4)) {
      out += '0';
    } else {
      out += static_cast<char>('1' + Below(9));
      if (!OneIn(3)) Digits(out, OneIn(20) ? 40 : 8);
    }
    if (OneIn(3)) {
      out += '.';
      Digits(out, 6);
    }
    if (OneIn(4)) {
      out += OneIn(2) ? 'e' : 'E';
      if (!OneIn(3)) out += OneIn(2) ? '+' : '-';
      if (OneIn(10)) {
        out += "30";
        Digits(out, 1);  // near the float64 limits
      } else {
        Digits(out, 2);
      }
    }
  }

  void String(std::string& out) {
    static const char* const kPieces[] = {
        "a",
        "Z",
        "0",
        " ",
        "/",
        "<",
        "&",
        "\\\"",
        "\\\\",
        "\\/",
        "\\b",
        "\\f",
        "\\n",
        "\\r",
        "\\t",
        "\\u0041",
        "\\u00e9",
        "\\u0000",
        "\\u001f",
        "\\u2028",
        "\\uFFFF",
        "\\ud83d\\ude00",
        "\\uDBFF\\uDFFF",
        "\xc3\xa9",
        "\xe2\x82\xac",
        "\xef\xbf\xbf",
        "\xf0\x9f\x98\x80",
        "\xf4\x8f\xbf\xbf",
        "\x7f",
        "k",
    };
    out += '"';
    const size_t n = Below(OneIn(10) ? 40 : 6);
    for (size_t i = 0; i < n; ++i) out += kPieces[Below(std::size(kPieces))];
    out += '"';
  }

  std::mt19937_64 rng_;
};

TEST(JsonParser, MatchesOnGeneratedDocuments) {
  Generator gen(0x5ED7A1C0FFEEull);
  Tally documents, mutants;
  for (int i = 0; i < 4000; ++i) {
    // Valid JSON, except for numbers the generator sometimes puts past float64's range.
    const std::string doc = gen.Document();
    CheckSame(doc, &documents);
    for (int m = 0; m < 6; ++m) CheckSame(gen.Mutate(doc), &mutants);
    if (::testing::Test::HasFailure()) break;  // one report is enough
  }
  EXPECT_GT(documents.accepted, 3800u);
  EXPECT_GT(documents.rejected, 0u);
  EXPECT_GT(mutants.accepted, 2000u);
  EXPECT_GT(mutants.rejected, 15000u);
}

TEST(JsonParser, MatchesOnByteSoup) {
  Generator gen(20261130);
  Tally tally;
  for (int i = 0; i < 30000; ++i) {
    CheckSame(gen.Soup(24), &tally);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(tally.accepted, 300u);
  EXPECT_GT(tally.rejected, 20000u);
}

TEST(JsonParser, ValueLimitCountsEveryValueAndSharesABudget) {
  // [1,{"a":[]},"s"]: the array, 1, the object, [], "s" = 5 values.
  const std::string doc = R"([1,{"a":[]},"s"])";
  EXPECT_TRUE(RawJson::Parse(doc, 5).ok());
  auto r = RawJson::Parse(doc, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "invalid JSON: more than 4 values");
  size_t budget = 7;
  ASSERT_TRUE(RawJson::Parse(doc, &budget).ok());
  EXPECT_EQ(budget, 2u);
  EXPECT_FALSE(RawJson::Parse(doc, &budget).ok());
  EXPECT_EQ(budget, 0u);
  // Syntax errors keep their own message under the limit.
  EXPECT_EQ(RawJson::Parse("[1,]", 10).message(), RawJson::Parse("[1,]").message());
}

}  // namespace
}  // namespace sedna::json
