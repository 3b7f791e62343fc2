#include "adapters/json/go_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/json/test_util.h"

namespace sedna::json {
namespace {

using testing::NestedArrays;

// ---- AppendGoString ------------------------------------------------------------------------

struct StringCase {
  std::string in;
  std::string out;
};

TEST(GoString, EscapesLikeGoJsonMarshal) {
  const StringCase kCases[] = {
      {"", R"("")"},
      {"plain /path/x.txt", R"("plain /path/x.txt")"},
      {"a\"b\\c", R"("a\"b\\c")"},
      {"\n\r\t", R"("\n\r\t")"},
      {"\b\f", R"("\u0008\u000c")"},  // go1.19: no \b \f short forms
      {std::string("\x00\x01\x1f", 3), R"("\u0000\u0001\u001f")"},
      {"\x7f", "\"\x7f\""},
      {"<a href='x'>&amp;</a>", R"("\u003ca href='x'\u003e\u0026amp;\u003c/a\u003e")"},
      {"\xe2\x80\xa8|\xe2\x80\xa9", R"("\u2028|\u2029")"},
      {"caf\xc3\xa9 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\""},
      {"\xe2\x80\xa7", "\"\xe2\x80\xa7\""},  // U+2027 is not escaped
      {"a\xffz", R"("a\ufffdz")"},
      {"\xc3", R"("\ufffd")"},                                // truncated 2-byte sequence
      {"\xe4\xb8z", R"("\ufffd\ufffdz")"},                    // truncated 3-byte sequence, per byte
      {"\xed\xa0\x80", R"("\ufffd\ufffd\ufffd")"},            // UTF-16 surrogate encoded in UTF-8
      {"\xc0\xaf", R"("\ufffd\ufffd")"},                      // overlong
      {"\xf4\x90\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},  // > U+10FFFF
      {"\x80", R"("\ufffd")"},                                // lone continuation byte
  };
  for (const auto& c : kCases) {
    std::string out = "prefix:";
    AppendGoString(out, c.in);
    EXPECT_EQ(out, "prefix:" + c.out);
    EXPECT_EQ(GoString(c.in), c.out);
  }
  // Plain runs are taken eight bytes at a time: each case at every offset of such runs, and
  // twice in one string.
  const std::string pad = "abcdefghijklmnopq";
  for (const auto& c : kCases) {
    const std::string inner = c.out.substr(1, c.out.size() - 2);
    for (size_t left = 0; left <= 16; ++left) {
      for (size_t right : {size_t{0}, size_t{3}, size_t{9}}) {
        const std::string in = pad.substr(0, left) + c.in + pad.substr(0, right) + c.in;
        EXPECT_EQ(GoString(in),
                  "\"" + pad.substr(0, left) + inner + pad.substr(0, right) + inner + "\"")
            << left << " " << right << " " << c.out;
      }
    }
  }
}

// ---- FormatGoFloat --------------------------------------------------------------------------

struct FloatCase {
  double in;
  std::string out;
};

TEST(FormatGoFloat, MatchesGoEncodingJson) {
  const FloatCase kCases[] = {
      {0, "0"},
      {-0.0, "-0"},
      {0.7, "0.7"},
      {0.40, "0.4"},
      {0.8113, "0.8113"},
      {500, "500"},
      {-2.5, "-2.5"},
      {0.1 + 0.2, "0.30000000000000004"},
      {123456789.125, "123456789.125"},
      {1e20, "100000000000000000000"},
      {12345678901234567890.0, "12345678901234567000"},
      {1e21, "1e+21"},
      {1.5e300, "1.5e+300"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.000001, "0.000001"},
      {1e-7, "1e-7"},
      {-1.5e-10, "-1.5e-10"},
      {1e-100, "1e-100"},
      {5e-324, "5e-324"},
      {std::numeric_limits<double>::quiet_NaN(), "null"},
      {std::numeric_limits<double>::infinity(), "null"},
  };
  for (const auto& c : kCases) EXPECT_EQ(FormatGoFloat(c.in), c.out) << c.out;
}

// ---- RawJson::Parse and accessors -----------------------------------------------------------

TEST(RawJson, PreservesNumberTextVerbatim) {
  const std::string kText =
      R"([0.70,0.40,1E2,1e-07,-0,0,-0.0,42,-42,18446744073709551615,123456789012345678901234567890,1e-400])";
  auto j = RawJson::Parse(kText);
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ(j->DumpInOrder(), kText);
  EXPECT_EQ(j->Dump(), kText);
  EXPECT_EQ((*j)[0].number_text(), "0.70");
  EXPECT_EQ((*j)[4].number_text(), "-0");
  EXPECT_EQ((*j)[5].number_text(), "0");
}

TEST(RawJson, PreservesIntegerTextAtEndOfInput) {
  for (std::string text : {"0", "-0", "7", "-7", " -0 ", "[-0]", "{\"a\":-0}", "[1,-0,0]"}) {
    auto j = RawJson::Parse(text);
    ASSERT_TRUE(j.ok()) << text;
    std::string compact;
    for (char c : text) {
      if (c != ' ') compact += c;
    }
    EXPECT_EQ(j->DumpInOrder(), compact);
  }
}

TEST(RawJson, DumpSortsKeysAndKeepsLastDuplicate) {
  auto j = RawJson::Parse(R"({"b":1,"a":{"z":true,"y":null},"b":[3,"x"],"":0})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->Dump(), R"({"":0,"a":{"y":null,"z":true},"b":[3,"x"]})");
  EXPECT_EQ(j->DumpInOrder(), R"({"b":1,"a":{"z":true,"y":null},"b":[3,"x"],"":0})");
  ASSERT_NE(j->Find("b"), nullptr);
  EXPECT_TRUE(j->Find("b")->is_array());  // the last duplicate
  EXPECT_EQ(j->Find("missing"), nullptr);
  EXPECT_EQ(j->size(), 4u);
  EXPECT_EQ(j->key(1), "a");
}

TEST(RawJson, SortsKeysBytewise) {
  auto j = RawJson::Parse(R"({"b":1,"B":2,"\u00e9":3,"a":4,"_":5})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->Dump(), "{\"B\":2,\"_\":5,\"a\":4,\"b\":1,\"\xc3\xa9\":3}");
}

TEST(RawJson, DecodesEscapesAndReEncodesTheGoWay) {
  auto j = RawJson::Parse(R"(["\u003e\u003c\u0026","\u00e9\ud83d\ude00","\/\b\f\n","\u2028"])");
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ((*j)[0].string_value(), "><&");
  EXPECT_EQ((*j)[1].string_value(), "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ((*j)[2].string_value(), "/\b\f\n");
  EXPECT_EQ(j->Dump(),
            "[\"\\u003e\\u003c\\u0026\",\"\xc3\xa9\xf0\x9f\x98\x80\",\"/\\u0008\\u000c\\n\","
            "\"\\u2028\"]");
}

TEST(RawJson, TypesAndScalarAccessors) {
  auto j = RawJson::Parse(R"({"s":"x","n":1.5,"t":true,"f":false,"z":null,"a":[],"o":{}})");
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE(j->is_object());
  EXPECT_EQ(j->Find("s")->type_name(), std::string("string"));
  EXPECT_EQ(j->Find("n")->type_name(), std::string("number"));
  EXPECT_EQ(j->Find("t")->type_name(), std::string("boolean"));
  EXPECT_TRUE(j->Find("t")->bool_value());
  EXPECT_FALSE(j->Find("f")->bool_value());
  EXPECT_TRUE(j->Find("z")->is_null());
  EXPECT_TRUE(j->Find("a")->is_array());
  EXPECT_TRUE(j->Find("o")->is_object());
  EXPECT_EQ(j->Find("n")->string_value(), "");
  EXPECT_EQ(j->Find("s")->number_text(), "");
  EXPECT_TRUE((*j)[99].is_null());  // out of range -> null
}

TEST(RawJson, AsDoubleAndAsInt64FollowGo) {
  auto j = RawJson::Parse(
      R"([0.70,1e2,1e-400,-1e-400,60,60.0,1e2,9223372036854775807,9223372036854775808,-9223372036854775808,"1"])");
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ(*(*j)[0].AsDouble(), 0.7);
  EXPECT_EQ(*(*j)[1].AsDouble(), 100);
  EXPECT_EQ(*(*j)[2].AsDouble(), 0.0);
  EXPECT_TRUE(std::signbit(*(*j)[3].AsDouble()));
  EXPECT_EQ(*(*j)[4].AsInt64(), 60);
  EXPECT_FALSE((*j)[5].AsInt64().ok());
  EXPECT_EQ((*j)[5].AsInt64().message(), "expected an integer, got 60.0");
  EXPECT_FALSE((*j)[6].AsInt64().ok());
  EXPECT_EQ(*(*j)[7].AsInt64(), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE((*j)[8].AsInt64().ok());
  EXPECT_EQ(*(*j)[9].AsInt64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ((*j)[10].AsDouble().message(), "expected a number, got string");
  EXPECT_EQ((*j)[10].AsInt64().message(), "expected an integer, got string");
}

// AsDouble's short-decimal fast path gives strtod's double, bit for bit: random decimals of 1 to
// 18 digits (either side of the 15 the fast path takes), the point anywhere, either sign.
TEST(RawJson, AsDoubleOfDecimalsMatchesStrtodBitForBit) {
  std::mt19937_64 rng(20261205);
  for (int n = 0; n < 200000; ++n) {
    const int digits = 1 + static_cast<int>(rng() % 18);
    std::string text = rng() % 2 ? "-" : "";
    std::string d;
    for (int k = 0; k < digits; ++k) d += static_cast<char>('0' + rng() % 10);
    while (d.size() > 1 && d[0] == '0') d.erase(0, 1);  // JSON: no leading zero before digits
    const size_t point = rng() % (d.size() + 2);
    if (point == 0 || point > d.size()) {
      text += point == 0 ? "0." + d : d;  // 0.ddd, or an integer
    } else {
      text += d.substr(0, point) + (point < d.size() ? "." + d.substr(point) : "");
    }
    auto j = RawJson::Parse(text);
    ASSERT_TRUE(j.ok()) << text;
    const double want = std::strtod(text.c_str(), nullptr);
    const double got = *j->AsDouble();
    ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0) << text;
  }
}

TEST(RawJson, DumpAsFloat64RePrintsNumbersLikeGoWithoutUseNumber) {
  auto j = RawJson::Parse(R"({"b":[0.70,1E2,1e-07,5],"a":0.40,"c":{"y":"<",  "x":-0.0}})");
  ASSERT_TRUE(j.ok());
  auto s = j->DumpAsFloat64();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, R"({"a":0.4,"b":[0.7,100,1e-7,5],"c":{"x":-0,"y":"\u003c"}})");
}

TEST(RawJson, Factories) {
  RawJson obj = RawJson::Object(
      {{"z", RawJson::Integer(-3)},
       {"a", RawJson::Array({RawJson::Number(0.5), RawJson::Null(), RawJson::Bool(true)})},
       {"m", RawJson::String("<x>")}});
  EXPECT_EQ(obj.Dump(), R"({"a":[0.5,null,true],"m":"\u003cx\u003e","z":-3})");
  EXPECT_EQ(obj.DumpInOrder(), R"({"z":-3,"a":[0.5,null,true],"m":"\u003cx\u003e"})");
  EXPECT_TRUE(RawJson::Number(NAN).is_null());
  auto n = RawJson::NumberText("0.70");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->Dump(), "0.70");
  for (const char* bad : {"", "-", "01", "1.", ".5", "1e", "+1", "0x10", "NaN", "1 "}) {
    EXPECT_FALSE(RawJson::NumberText(bad).ok()) << bad;
  }
}

TEST(RawJson, CopiesShareAndOutliveTheOriginal) {
  RawJson inner;
  {
    auto j = RawJson::Parse(R"({"results":[{"url":"/x","metrics":{"loss":0.8113}}]})");
    ASSERT_TRUE(j.ok());
    inner = *j->Find("results");
  }
  EXPECT_EQ(inner.Dump(), R"([{"metrics":{"loss":0.8113},"url":"/x"}])");
}

// A parsed document's children are handles into it that do not own it: every way a child leaves
// the tree (copy, copy-assignment, into a built value, a copy of that copy) keeps the document.
TEST(RawJson, ChildrenCopiedOutKeepTheirDocument) {
  RawJson metrics, assigned, built, url;
  {
    auto j = RawJson::Parse(R"({"a":[{"url":"/m","metrics":{"p":[0.5,0.25]}}],"b":null})");
    ASSERT_TRUE(j.ok());
    const RawJson& element = (*j->Find("a"))[0];
    RawJson copy = element;  // copy construction from a borrowed handle
    metrics = *copy.Find("metrics");
    assigned = (*j)[0];  // copy assignment
    built = RawJson::Array({element, *j->Find("b"), RawJson::Integer(7)});
    url = *element.Find("url");
  }
  EXPECT_EQ(metrics.Dump(), R"({"p":[0.5,0.25]})");
  EXPECT_EQ(assigned.Dump(), R"([{"metrics":{"p":[0.5,0.25]},"url":"/m"}])");
  EXPECT_EQ(built.Dump(), R"([{"metrics":{"p":[0.5,0.25]},"url":"/m"},null,7])");
  EXPECT_EQ(url.string_value(), "/m");
  RawJson again = metrics;  // an owning handle copies as before
  metrics = RawJson();
  EXPECT_EQ(again[0].size(), 2u);
  EXPECT_EQ(again.key(0), "p");
  EXPECT_EQ(*again[0][1].AsDouble(), 0.25);
}

// Strings, keys and number texts are views into the document's own copy of the parsed text,
// in which each escaped string is decoded over its own escaped bytes: they outlive the input,
// and decoding one string never overwrites its neighbours (adjacent escaped strings, an escaped
// key right before an escaped value, the longest escapes against the shortest decodings).
TEST(RawJson, ValuesAreViewsThatOutliveTheParsedText) {
  std::string text = R"({"k\u00e9y":"\u0041\u0042","n":0.70,"e":"","a":["\ud83d\ude00","\\\\\"",)"
                     R"("p\/q","\n\t","plain",-1e+2,"\u2028x"],"\u0000":"z"})";
  auto parsed = RawJson::Parse(text);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  RawJson j = *parsed;
  parsed = RawJson();
  std::fill(text.begin(), text.end(), '#');  // the document must not read the input again
  text = std::string();
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j.key(0), "k\xc3\xa9y");
  EXPECT_EQ(j[0].string_value(), "AB");
  EXPECT_EQ(j.key(1), "n");
  EXPECT_EQ(j[1].number_text(), "0.70");
  EXPECT_EQ(j[2].string_value(), "");
  const RawJson& a = j[3];
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[0].string_value(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(a[1].string_value(), "\\\\\"");
  EXPECT_EQ(a[2].string_value(), "p/q");
  EXPECT_EQ(a[3].string_value(), "\n\t");
  EXPECT_EQ(a[4].string_value(), "plain");
  EXPECT_EQ(a[5].number_text(), "-1e+2");
  EXPECT_EQ(a[6].string_value(), "\xe2\x80\xa8x");
  EXPECT_EQ(j.key(4), std::string_view("\0", 1));
  EXPECT_EQ(j[4].string_value(), "z");
  // A child copied out keeps the text block alive after every other handle is gone.
  RawJson emoji = a[0];
  j = RawJson();
  EXPECT_EQ(emoji.string_value(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(emoji.Dump(), "\"\xf0\x9f\x98\x80\"");
  // Built values own their text and keys: views stay valid after the sources are gone.
  std::vector<std::pair<std::string, RawJson>> members;
  for (int i = 0; i < 40; ++i) {  // the members' vector grows (and moves its keys) while built
    members.emplace_back(i % 2 == 0 ? "k" + std::to_string(i) : std::string(40, 'a' + i % 26),
                         RawJson::String("value number " + std::to_string(i)));
  }
  RawJson built = RawJson::Object(std::move(members));
  members.clear();
  ASSERT_EQ(built.size(), 40u);
  EXPECT_EQ(built.key(0), "k0");
  EXPECT_EQ(built.key(1), std::string(40, 'b'));
  EXPECT_EQ(built.key(38), "k38");
  EXPECT_EQ(built[39].string_value(), "value number 39");
  EXPECT_EQ(RawJson::Number(0.5).number_text(), "0.5");
  EXPECT_EQ(RawJson::Integer(-7).number_text(), "-7");
  EXPECT_EQ(RawJson::String("").string_value(), "");
  // What is not there is an empty view of a real (non-null) string, as the "" it used to be.
  EXPECT_NE(RawJson().string_value().data(), nullptr);
  EXPECT_NE(RawJson::Bool(true).number_text().data(), nullptr);
  EXPECT_NE(built.key(40).data(), nullptr);
  EXPECT_EQ(GoString(std::string_view()), "\"\"");
}

TEST(RawJson, AcceptsSurroundingWhitespace) {
  auto j = RawJson::Parse(" \t\r\n{ \"a\" : [ 1 , 2 ] } \n");
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ(j->DumpInOrder(), R"({"a":[1,2]})");
}

TEST(RawJson, RejectsInvalidJsonWithoutThrowing) {
  const std::string kBad[] = {
      "",
      "   ",
      "{",
      R"({"a":1)",
      R"({"a":1}})",
      R"({"a":1} x)",
      R"({'a':1})",
      R"({"a":01})",
      R"({"a":1.})",
      R"({"a":NaN})",
      R"({"a":Infinity})",
      R"({"a":1e400})",
      R"({"a":-1e400})",
      R"(["\ud800"])",  // lone high surrogate
      R"(["\udc00"])",  // lone low surrogate
      R"(["\u12"])",
      R"(["\x41"])",
      "[\"a\x01b\"]",        // raw control character
      "[\"\xff\"]",          // invalid UTF-8
      "[\"\xed\xa0\x80\"]",  // UTF-8 encoded surrogate
      "/* c */ {}",
      "[1,]",
      R"({"a":1,})",
      "tru",
      "nul",
      std::string("{\"a\":1}\0", 8),
  };
  for (const auto& text : kBad) {
    Result<RawJson> j = Result<RawJson>::Error("unset");
    EXPECT_NO_THROW(j = RawJson::Parse(text)) << text;
    EXPECT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.message().rfind("invalid JSON: ", 0), 0u) << j.message();
  }
}

TEST(RawJson, ParseErrorsAreReadable) {
  auto j = RawJson::Parse(R"({"a":)");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.message().find("[json.exception"), std::string::npos) << j.message();
  EXPECT_NE(j.message().find("line 1, column 6"), std::string::npos) << j.message();
}

// ---- robustness -----------------------------------------------------------------------------

TEST(RawJson, AcceptsGoMaxDepth) {
  std::string text = NestedArrays(RawJson::kMaxDepth, "1");
  auto j = RawJson::Parse(text);
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ(j->Dump(), text);
  EXPECT_EQ(j->DumpInOrder(), text);
  EXPECT_EQ(*j->DumpAsFloat64(), text);

  std::string objects;
  for (size_t i = 0; i < RawJson::kMaxDepth; ++i) objects += "{\"a\":";
  objects += "null";
  objects += std::string(RawJson::kMaxDepth, '}');
  auto o = RawJson::Parse(objects);
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_EQ(o->Dump(), objects);
}

TEST(RawJson, RejectsDeeperNestingWithoutCrashing) {
  for (size_t depth : {RawJson::kMaxDepth + 1, size_t{100000}, size_t{1000000}}) {
    auto j = RawJson::Parse(NestedArrays(depth));
    ASSERT_FALSE(j.ok()) << depth;
    EXPECT_EQ(j.message(), "invalid JSON: exceeded max depth 10000");
  }
  // Unterminated deep nesting is also just an error.
  auto j = RawJson::Parse(std::string(500000, '['));
  EXPECT_FALSE(j.ok());
}

TEST(RawJson, BuildsDumpsAndDestroysVeryDeepTreesIteratively) {
  RawJson v = RawJson::Integer(1);
  constexpr size_t kDepth = 300000;
  for (size_t i = 0; i < kDepth; ++i) v = RawJson::Array({v});
  std::string dump = v.Dump();
  EXPECT_EQ(dump.size(), 2 * kDepth + 1);
  EXPECT_EQ(dump.substr(kDepth - 1, 3), "[1]");
  v = RawJson();  // destroys the tree
  EXPECT_TRUE(v.is_null());
}

TEST(RawJson, HandlesLargeStrings) {
  std::string big(100 * 1024, 'x');
  big[500] = '<';
  auto j = RawJson::Parse("{\"big\":\"" + big + "\"}");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->Find("big")->string_value(), big);
  std::string dump = j->Dump();
  EXPECT_EQ(dump.size(), big.size() + 10 + 5);  // {"big":""} plus \u003c for '<'
}

}  // namespace
}  // namespace sedna::json
